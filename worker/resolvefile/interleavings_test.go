package resolvefile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// runUntilIdle works every queued job with a fresh client of e's database.
func (e *e2e) runUntilIdle(t *testing.T) {
	t.Helper()
	require.NoError(t, e.w.RunUntilIdle(context.Background(), nil))
}

// A re-publish removes every reference of the version it replaces, even one
// that another transaction moved while the re-publish waited for it.
//
// Forced: a.js is re-published without helper's definition and held open;
// it cleared the target of b1's reference to helper, a POI it removed (a
// row lock on it). b.js is then re-published with b1 calling other instead, and
// its removal of b1's references waits for that row. Once a.js commits, the
// waiting removal must still remove the reference, now a newer row version:
// otherwise b1 keeps a reference of the version it replaced, and a later
// helper (c.js) becomes b1's callee.
func TestPublish_RepublishRemovesReferencesMovedWhileItWaited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupE2E(t, 1)
	e.publish(t, outbox.Analysis{FileID: "src/a.js", POIs: pois(
		fn("a_x", "helper", "src/a.js", "function helper() {}"),
		fn("a_y", "other", "src/a.js", "function other() {}"))})
	e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b1", "main", "src/b.js", "function main() { helper(); }"))})
	e.runUntilIdle(t)
	require.Equal(t, []string{"b1 CALLS a_x"}, relationships(t, e.db.Pool))

	held, err := e.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	_, err = e.pub.PublishTx(ctx, held, outbox.Analysis{FileID: "src/a.js", POIs: pois(fn("a_y", "other", "src/a.js", "function other() {}"))})
	require.NoError(t, err)

	republished := make(chan struct{})
	go func() {
		defer close(republished)
		e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b1", "main", "src/b.js", "function main() { other(); }"))})
	}()
	testdb.WaitBlockedBy(t, e.db.Pool, held.Conn().PgConn().PID())
	require.NoError(t, held.Commit(ctx))
	<-republished
	e.runUntilIdle(t)

	e.publish(t, outbox.Analysis{FileID: "src/c.js", POIs: pois(fn("c_h", "helper", "src/c.js", "function helper() {}"))})
	e.runUntilIdle(t)
	require.Equal(t, []string{"b1 CALLS a_y"}, relationships(t, e.db.Pool))
	require.Equal(t, 1, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'b1'`),
		"b1's references are those of its last version")
}

// A POI removed by a publish loses its references, even one that a link
// round re-resolved (a row lock on it) while the publish's delete waited.
//
// Forced: b1 calls helper, which nobody defines; c.js then defines it, and
// the link round re-resolving b1's reference is stalled after its update
// (a trigger on poi_references makes the update wait for an advisory lock
// the test holds; only that lane's round updates a reference). b.js is re-published without b1, and its
// removal of b1's references waits for the round. Once the round commits,
// the waiting removal must still remove the reference.
func TestPublish_RemovedPOILosesAReferenceALinkRoundMovedWhileItWaited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupE2E(t, 1)
	e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(
		fn("b1", "main", "src/b.js", "function main() { helper(); }"),
		fn("b2", "other", "src/b.js", "function other() {}"))})
	e.runUntilIdle(t)
	require.Empty(t, relationships(t, e.db.Pool))

	const stall = 4242
	_, err := e.db.Pool.Exec(ctx, `
		CREATE FUNCTION stall_link_round() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			-- Only in a link round: its transaction holds a lane's linker
			-- lock (worker/link's linkerLock + lane, "relaylnk").
			IF EXISTS (SELECT FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND mode = 'ExclusiveLock'
			           AND (classid::bigint << 32 | objid::bigint) - x'72656c61796c6e6b'::bigint BETWEEN 0 AND 7) THEN
				PERFORM pg_advisory_xact_lock_shared(4242);
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER stall_link_round AFTER UPDATE ON poi_references FOR EACH STATEMENT EXECUTE FUNCTION stall_link_round()`)
	require.NoError(t, err)
	gate, err := e.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer gate.Release()
	_, err = gate.Exec(ctx, `SELECT pg_advisory_lock($1)`, stall)
	require.NoError(t, err)
	unlocked := false
	defer func() {
		if !unlocked {
			_, _ = gate.Exec(ctx, `SELECT pg_advisory_unlock($1)`, stall)
		}
	}()

	e.publish(t, outbox.Analysis{FileID: "src/c.js", POIs: pois(fn("c_h", "helper", "src/c.js", "function helper() {}"))})
	linked := make(chan error, 1)
	go func() {
		linked <- e.w.RunUntilIdle(ctx, nil)
	}()
	round := testdb.WaitBlockedBy(t, e.db.Pool, gate.Conn().PgConn().PID())
	require.Equal(t, 1, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE a.pid = $1 AND l.relation = 'poi_references'::regclass AND l.mode = 'RowExclusiveLock'`, round),
		"the stalled round has updated poi_references")

	republished := make(chan struct{})
	go func() {
		defer close(republished)
		e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b2", "other", "src/b.js", "function other() {}"))})
	}()
	testdb.WaitBlockedBy(t, e.db.Pool, uint32(round))
	_, err = gate.Exec(ctx, `SELECT pg_advisory_unlock($1)`, stall)
	require.NoError(t, err)
	unlocked = true
	<-republished
	require.NoError(t, <-linked)
	e.runUntilIdle(t)

	require.Empty(t, relationships(t, e.db.Pool))
	require.Equal(t, 0, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'b1'`),
		"a removed POI keeps a reference")
}
