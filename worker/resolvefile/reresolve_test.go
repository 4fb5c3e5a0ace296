package resolvefile_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// rounds records every link round a client committed.
type rounds struct {
	mu     sync.Mutex
	done   []link.Summary
	notify chan struct{} // one pending wake-up per round
}

func newRounds() *rounds { return &rounds{notify: make(chan struct{}, 1)} }

func (*rounds) BatchDone(*resolvefile.BatchSummary) {}
func (*rounds) BatchFailed(time.Duration)           {}

func (r *rounds) Linked(sum *link.Summary) {
	r.mu.Lock()
	r.done = append(r.done, *sum)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// since waits until the rounds after the first n made file final (a round
// is reported after it commits, so a drained queue can be seen first), and
// returns those rounds.
func (r *rounds) since(t *testing.T, n int, file string) []link.Summary {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		got := slices.Clone(r.done[min(n, len(r.done)):])
		r.mu.Unlock()
		for _, s := range got {
			for _, f := range s.Final {
				if f.FileID == file {
					return got
				}
			}
		}
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no link round made %s final within 30s", file)
		}
	}
}

func (r *rounds) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done)
}

func reresolvedIn(rs []link.Summary) (n int) {
	for _, s := range rs {
		n += s.Reresolved
	}
	return n
}

// The linker resolves a stored reference again only when a name it looks
// up changed after it was linked: a caller linked in the same round as its
// callee is resolved once.
func TestLinker_ReresolvesOnlyReferencesLinkedBeforeANameTheyLookUpChanged(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	obs := newRounds()
	cfg := resolveQueue(db)
	cfg.Observer = obs
	e := newE2E(t, db, cfg)

	// The caller and the callee are both published before any job runs:
	// the linker finds both in link_queue and resolves the call once.
	e.publish(t, outbox.Analysis{FileID: "src/c.js", POIs: pois(fn("c.c", "c", "src/c.js", "function c() { late2(); }"))})
	e.publish(t, outbox.Analysis{FileID: "src/d.js", POIs: pois(fn("d.l", "late2", "src/d.js", "function late2() {}"))})
	require.NoError(t, e.w.RunUntilIdle(context.Background(), nil))
	require.Zero(t, reresolvedIn(obs.since(t, 0, "src/d.js")), "a reference linked with its callee was resolved again")
	require.Contains(t, relationships(t, db.Pool), "c.c CALLS d.l")

	// The caller is linked before the callee exists: late is unknown, and
	// the callee's publish must have the stored reference resolved again.
	e.publish(t, outbox.Analysis{FileID: "src/a.js", POIs: pois(fn("a.a", "a", "src/a.js", "function a() { late(); }"))})
	require.NoError(t, e.w.RunUntilIdle(context.Background(), nil))
	n := obs.count()
	require.NotContains(t, relationships(t, db.Pool), "a.a CALLS b.l")

	e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b.l", "late", "src/b.js", "function late() {}"))})
	require.NoError(t, e.w.RunUntilIdle(context.Background(), nil))
	require.Equal(t, 1, reresolvedIn(obs.since(t, n, "src/b.js")), "the reference linked before the callee was not resolved again")
	require.Contains(t, relationships(t, db.Pool), "a.a CALLS b.l")

	// Moving the callee resolves the caller again, to the new POI.
	n = obs.count()
	e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b.l2", "late", "src/b.js", "function late() { /* moved */ }"))})
	require.NoError(t, e.w.RunUntilIdle(context.Background(), nil))
	require.Equal(t, 1, reresolvedIn(obs.since(t, n, "src/b.js")))
	rels := relationships(t, db.Pool)
	require.Contains(t, rels, "a.a CALLS b.l2")
	require.NotContains(t, rels, "a.a CALLS b.l")
}

func pois(p ...json.RawMessage) []json.RawMessage { return p }

// The linker re-resolving another file's references must not race a
// re-publish of that file: the publish removes the file's references and
// edges, and an edge written from a reference read before the publish
// committed would outlive it.
func TestLinker_ReresolutionWaitsForARepublishOfTheReferringFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupE2E(t, 1)
	e.publish(t, outbox.Analysis{FileID: "src/f.js", POIs: pois(fn("f.a", "a", "src/f.js", "function a() { late(); }"))})
	e.start(t)
	waitDrained(t, e.db.Pool)

	// f.js is re-published without its call to late, in a transaction left
	// open while late is published and its job runs.
	repub, err := e.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = repub.Rollback(ctx) }()
	_, err = e.pub.PublishTx(ctx, repub, outbox.Analysis{FileID: "src/f.js", POIs: pois(fn("f.a", "a", "src/f.js", "function a() { other(); }"))})
	require.NoError(t, err)
	var repubXID int64
	require.NoError(t, repub.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&repubXID))

	e.publish(t, outbox.Analysis{FileID: "src/y.js", POIs: pois(fn("y.l", "late", "src/y.js", "function late() {}"))})
	// Wait until the linker either linked late's publish or waits for the
	// open re-publish, then let the re-publish commit. Finishing first is
	// the race the test is about, lost: the test fails.
	var waiting, done bool
	require.Eventually(t, func() bool {
		if err := e.db.Pool.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted
			                 AND transactionid::text = ($1::bigint & 4294967295)::text),
			       EXISTS (SELECT 1 FROM river_job WHERE args->>'fileId' = 'src/y.js' AND state = 'completed')
			         AND NOT EXISTS (SELECT 1 FROM link_queue)`,
			repubXID).Scan(&waiting, &done); err != nil {
			t.Logf("polling: %v", err)
			return false
		}
		return waiting || done
	}, 60*time.Second, 10*time.Millisecond, "the linker neither linked late's publish nor waited for the re-publish")
	require.True(t, waiting, "the linker linked late's publish without waiting for the re-publish of the referring file")
	require.NoError(t, repub.Commit(ctx))
	waitDrained(t, e.db.Pool)
	require.NotContains(t, relationships(t, e.db.Pool), "f.a CALLS y.l", "an edge from a reference the re-publish removed survived")
}
