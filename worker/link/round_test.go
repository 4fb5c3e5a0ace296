package link

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

// queueCallers stores files a.js and b.js, whose functions a1 and b1 call
// each other, and queues their rows (jobs 1 and 2).
func queueCallers(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	_, err := db.Exec(ctx, `
		INSERT INTO files (file_id) VALUES ('a.js'), ('b.js');
		INSERT INTO pois (poi_id, file_id, name, type, line_number) VALUES
			('a1', 'a.js', 'a', 'function_definition', 1), ('b1', 'b.js', 'b', 'function_definition', 1)`)
	require.NoError(t, err)
	b := &pgx.Batch{}
	for i, f := range []struct{ file, src, calls string }{{"a.js", "a1", "b"}, {"b.js", "b1", "a"}} {
		Queue(b, Entry{JobID: int64(i + 1), FileID: f.file, FileVersion: new(int64(1)), Replace: true, PublishedAt: time.Now(),
			Refs: []Ref{{Source: f.src, Reference: resolver.Reference{Name: f.calls, Type: resolver.Calls}}}})
	}
	require.NoError(t, db.SendBatch(ctx, b).Close())
}

// hold begins a transaction on db that runs sql and stays open until the
// test rolls it back (or ends).
func hold(t *testing.T, db *pgxpool.Pool, sql string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, sql, args...)
	require.NoError(t, err)
	return tx
}

// roundEvery runs a round from lane 0, which takes every lane (no other
// round holds one).
func roundEvery(t *testing.T, db Beginner, lim Limits) (*Summary, error) {
	t.Helper()
	return Round(context.Background(), db, 0, lim)
}

// A round takes its home lane, waiting for it, and every other lane no
// round holds; a lane another round holds is left to that round.
func TestRound_TakesTheLanesNoOtherRoundHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	queueCallers(t, db.Pool)
	busy := LaneOf("a") // b.js's row (b1 calls a)
	other := hold(t, db.Pool, `SELECT pg_advisory_xact_lock($1)`, linkerKey(busy))

	home := (busy + 1) % Lanes
	sum, err := Round(ctx, db.Pool, home, Limits{Rows: RoundRowsDefault})
	require.NoError(t, err)
	if LaneOf("b") == busy {
		require.Zero(t, sum.Rows, "both rows are in the lane another round holds")
	} else {
		require.Equal(t, 1, sum.Rows, "a.js's row linked, b.js's left to the lane's holder")
	}
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue WHERE file_id = 'b.js'`))
	require.NoError(t, other.Rollback(ctx))
	require.NoError(t, LinkAll(ctx, db.Pool))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_rounds WHERE $1 = ANY(lanes) AND NOT $2 = ANY(lanes)`, int16(home), int16(busy)),
		"the first round held its home lane, not the busy one")
}

// A round leaves the rows of a file whose row a publish holds for a later
// round (it neither waits for the publish nor drops them), links the other
// files' rows, and links the postponed rows once the publish ends.
func TestRound_PostponesTheRowsOfAFileBeingPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	queueCallers(t, db.Pool)

	publish := hold(t, db.Pool, `SELECT 1 FROM files WHERE file_id = 'a.js' FOR UPDATE`)

	sum, err := roundEvery(t, db.Pool, Limits{Rows: RoundRowsDefault})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Rows, "b.js's row linked")
	require.Equal(t, 1, sum.Postponed, "a.js's row left for a later round")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'b1' AND target_poi_id = 'a1'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue WHERE file_id = 'a.js'`))

	require.NoError(t, publish.Rollback(ctx))
	require.NoError(t, LinkAll(ctx, db.Pool))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'a1' AND target_poi_id = 'b1'`))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue`))
}

// With a delay, a round links only the rows at least that old since their
// publish; when only younger ones are queued it links none and says how long
// until the oldest is old enough.
func TestRound_LinksARowOnlyOnceItIsDelayOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	queueCallers(t, db.Pool)
	_, err := db.Pool.Exec(ctx, `
		UPDATE link_queue SET published_at = now() - interval '1 hour' WHERE file_id = 'a.js';
		UPDATE link_queue SET published_at = now() - interval '1 minute' WHERE file_id = 'b.js'`)
	require.NoError(t, err)

	lim := Limits{Rows: RoundRowsDefault, Delay: 10 * time.Minute}
	sum, err := roundEvery(t, db.Pool, lim)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Rows, "a.js's row, an hour old, linked")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'a1' AND target_poi_id = 'b1'`))

	sum, err = roundEvery(t, db.Pool, lim)
	require.NoError(t, err)
	require.Zero(t, sum.Rows, "b.js's row, a minute old, waits")
	require.InDelta(t, 9*time.Minute, sum.Wait, float64(time.Minute), "the wait until b.js's row is 10 minutes old")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue WHERE file_id = 'b.js'`))

	sum, err = roundEvery(t, db.Pool, Limits{Rows: RoundRowsDefault, Delay: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Rows, "b.js's row linked once it is old enough")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'b1' AND target_poi_id = 'a1'`))

	sum, err = roundEvery(t, db.Pool, lim)
	require.NoError(t, err)
	require.Equal(t, Summary{}, *sum, "an empty queue: nothing to link, nothing to wait for")
}

// A round's candidate reads are planned for the round: none is left
// prepared on the connection, where a plan made while pois was small (any
// index beginning with the repository looks as cheap then) would be kept
// as it grows and could look every name or id up by the repository alone.
func TestReadCandidates_LeavesNoPlanOnTheConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	queueCallers(t, db.Pool)
	_, err := db.Pool.Exec(ctx, `UPDATE pois SET symbol = 'pkg b' WHERE poi_id = 'b1'`)
	require.NoError(t, err)
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()

	calls := string(resolver.Calls)
	refs := []stored{{name: "b", typ: calls}, {name: resolver.IDPrefix + "b1", typ: calls}, {name: resolver.SymbolPrefix + "pkg b", typ: calls}}
	for range 8 { // past the five custom plans after which PostgreSQL may keep a generic one
		cands, err := readCandidates(ctx, tx, nil, refs, false)
		require.NoError(t, err)
		for _, name := range []string{"b", resolver.IDPrefix + "b1", resolver.SymbolPrefix + "pkg b"} {
			got := cands.byName[nameKey{"", name}]
			require.Len(t, got, 1, name)
			require.Equal(t, "b1", got[0].POIID, name)
			require.Equal(t, "b.js", got[0].FileID, name)
		}
	}
	require.Zero(t, testdb.Count(t, tx, `SELECT count(*) FROM pg_prepared_statements WHERE statement ~ 'FROM pois' AND statement !~ 'pg_prepared'`))
}
