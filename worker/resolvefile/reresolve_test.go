package resolvefile_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/internal/workerconfig"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// summaries records every batch a client finished, in order.
type summaries struct {
	mu     sync.Mutex
	done   []resolvefile.BatchSummary
	notify chan struct{} // one pending wake-up per BatchDone
}

func newSummaries() *summaries { return &summaries{notify: make(chan struct{}, 1)} }

func (s *summaries) BatchDone(sum *resolvefile.BatchSummary) {
	s.mu.Lock()
	s.done = append(s.done, *sum)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *summaries) BatchFailed(time.Duration) {}

// byFile waits until n batches have been reported (a worker reports a batch
// after its transaction commits, so a drained queue can be seen first),
// then returns the files in the order their batches finished and each
// file's last summary.
func (s *summaries) byFile(t *testing.T, n int) (order []string, last map[string]resolvefile.BatchSummary) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.done)
		s.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-s.notify:
		case <-deadline:
			t.Fatalf("%d batches reported after 30s, want %d", got, n)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last = map[string]resolvefile.BatchSummary{}
	for _, d := range s.done {
		order = append(order, d.FileID)
		last[d.FileID] = d
	}
	return order, last
}

// A publish's job re-resolves other files' references to the names it
// changed only when they were resolved before the publish was visible: a
// reference resolved after it already points at the right symbol.
func TestResolveFileWorker_ReresolvesOnlyReferencesResolvedBeforeThePublish(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	cfg := workerconfig.From(db.Config())
	cfg.Concurrency = 1 // jobs run in publish order
	obs := newSummaries()
	client, err := worker.NewClient(db.Pool, cfg, testdb.Logger(t), &worker.Options{Observer: obs, Queues: []string{outbox.QueueResolve}})
	require.NoError(t, err)
	e := &e2e{db: db, pub: outbox.New(client, nil, testdb.Logger(t)), client: client}

	// The caller and the callee are both published before any job runs:
	// the caller's job resolves late2 under a snapshot that sees the
	// callee's publish, so the callee's job has nothing to redo.
	e.publish(t, outbox.Analysis{FileID: "src/c.js", POIs: pois(fn("c.c", "c", "src/c.js", "function c() { late2(); }"))})
	e.publish(t, outbox.Analysis{FileID: "src/d.js", POIs: pois(fn("d.l", "late2", "src/d.js", "function late2() {}"))})
	// resolved_xmin is the xmin of the whole cluster's snapshot: another
	// test's open write transaction holds it down, and the skip is then
	// (correctly) not taken. Wait until every transaction older than the
	// publish has ended, so the case under test is the one that runs.
	var xid int64
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT (args->>'publishXid')::bigint FROM river_job WHERE args->>'fileId' = 'src/d.js'`).Scan(&xid))
	require.NotZero(t, xid, "the publish did not record its transaction id in the job")
	waitXminPast(t, db, xid)
	e.start(t)
	waitDrained(t, db.Pool)
	order, last := obs.byFile(t, 2)
	require.Equal(t, []string{"src/c.js", "src/d.js"}, order, "the caller's job must run first for this case")
	require.Equal(t, 0, last["src/d.js"].Reresolved, "a reference resolved after the publish was re-resolved")
	require.Contains(t, relationships(t, db.Pool), "c.c CALLS d.l")

	// The caller's job runs before the callee exists: late is unknown, and
	// the callee's job must resolve the stored reference again.
	e.publish(t, outbox.Analysis{FileID: "src/a.js", POIs: pois(fn("a.a", "a", "src/a.js", "function a() { late(); }"))})
	waitDrained(t, db.Pool)
	_, last = obs.byFile(t, 3)
	require.Equal(t, 1, last["src/a.js"].Unknown)
	require.NotContains(t, relationships(t, db.Pool), "a.a CALLS b.l")

	e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b.l", "late", "src/b.js", "function late() {}"))})
	waitDrained(t, db.Pool)
	_, last = obs.byFile(t, 4)
	require.Equal(t, 1, last["src/b.js"].Reresolved, "a reference resolved before the publish was not re-resolved")
	require.Contains(t, relationships(t, db.Pool), "a.a CALLS b.l")

	// Rows stored before resolved_xmin existed carry 0 and are always
	// re-resolved: re-publishing the callee redoes a's reference.
	_, err = db.Pool.Exec(context.Background(), `UPDATE poi_references SET resolved_xmin = '0' WHERE source_poi_id = 'a.a'`)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
		_, err := e.pub.PublishTx(context.Background(), tx, outbox.Analysis{FileID: "src/b.js",
			POIs: pois(fn("b.l2", "late", "src/b.js", "function late() { /* moved */ }"))})
		return err
	}))
	waitDrained(t, db.Pool)
	_, last = obs.byFile(t, 5)
	require.Equal(t, 1, last["src/b.js"].Reresolved)
	rels := relationships(t, db.Pool)
	require.Contains(t, rels, "a.a CALLS b.l2")
	require.NotContains(t, rels, "a.a CALLS b.l")
}

func pois(p ...json.RawMessage) []json.RawMessage { return p }

// waitXminPast waits until every transaction with an id up to xid has ended
// (the snapshot's xmin is above it), failing the test after a deadline.
func waitXminPast(t *testing.T, db *testdb.DB, xid int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		var past bool
		if err := db.Pool.QueryRow(context.Background(),
			`SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::bigint::text::xid8`, xid).Scan(&past); err != nil {
			t.Logf("polling: %v", err)
			return false
		}
		return past
	}, 60*time.Second, 20*time.Millisecond, "transactions older than %d still open", xid)
}

// A batch re-resolving another file's references must not race a re-publish
// of that file: the publish removes the file's references and edges, and an
// edge written from a reference read before the publish committed would
// outlive it.
func TestResolveFileWorker_ReresolutionWaitsForARepublishOfTheReferringFile(t *testing.T) {
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
	// Wait until late's job either finished or waits for the open
	// re-publish, then let the re-publish commit. Finishing first is the
	// race the test is about, lost: the test fails.
	var waiting, done bool
	require.Eventually(t, func() bool {
		if err := e.db.Pool.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted
			                 AND transactionid::text = ($1::bigint & 4294967295)::text),
			       EXISTS (SELECT 1 FROM river_job WHERE args->>'fileId' = 'src/y.js' AND state = 'completed')`,
			repubXID).Scan(&waiting, &done); err != nil {
			t.Logf("polling: %v", err)
			return false
		}
		return waiting || done
	}, 60*time.Second, 10*time.Millisecond, "late's job neither finished nor waited for the re-publish")
	require.True(t, waiting, "late's job finished without waiting for the re-publish of the referring file")
	require.NoError(t, repub.Commit(ctx))
	waitDrained(t, e.db.Pool)
	require.NotContains(t, relationships(t, e.db.Pool), "f.a CALLS y.l", "an edge from a reference the re-publish removed survived")
}
