package resolvefile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// corpus builds n files whose functions call across files, including names
// defined in two files (ambiguous outside them), a name defined only in the
// last file (resolved whenever it arrives), classes extending classes of
// other files, imports, and one malformed POI per file.
func corpus(n int) []outbox.Analysis {
	var out []outbox.Analysis
	for k := range n {
		file := fmt.Sprintf("src/f%02d.js", k)
		var pois []json.RawMessage
		add := func(id, typ, name, code string) {
			raw, _ := json.Marshal(map[string]any{"id": id, "type": typ, "name": name, "filePath": file, "lineNumber": len(pois) + 1, "rawCode": code})
			pois = append(pois, raw)
		}
		add(fmt.Sprintf("f%02d.a", k), "function_definition", fmt.Sprintf("a%02d", k),
			fmt.Sprintf("function a%02d() { b%02d(); shared(); late(); a%02d(); }", k, (k+5)%n, (k+1)%n))
		add(fmt.Sprintf("f%02d.b", k), "function_definition", fmt.Sprintf("b%02d", k),
			fmt.Sprintf("function b%02d() { return 'a%02d()' + helper(); }", k, k))
		add(fmt.Sprintf("f%02d.h", k), "function_definition", "helper", "function helper() { return shared(); }")
		add(fmt.Sprintf("f%02d.C", k), "class_declaration", fmt.Sprintf("C%02d", k),
			fmt.Sprintf("class C%02d extends C%02d { run() { a%02d(); } }", k, (k+n-1)%n, k))
		add(fmt.Sprintf("f%02d.i", k), "import", fmt.Sprintf("a%02d", (k+3)%n),
			fmt.Sprintf("import { a%02d, C%02d } from './f%02d.js';", (k+3)%n, (k+3)%n, (k+3)%n))
		if k < 2 {
			add(fmt.Sprintf("f%02d.s", k), "function_definition", "shared", "function shared() {}")
		}
		if k == n-1 {
			add(fmt.Sprintf("f%02d.l", k), "function_definition", "late", "function late() { return a00(); }")
		}
		pois = append(pois, json.RawMessage(fmt.Sprintf(`{"id":"f%02d.bad","type":"function_definition","name":"bad","lineNumber":"x"}`, k)))
		out = append(out, outbox.Analysis{FileID: file, POIs: pois})
	}
	return out
}

type e2e struct {
	db     *testdb.DB
	pub    *outbox.Publisher
	w      *worker.Worker
	client *river.Client[pgx.Tx]
}

func setupE2E(t *testing.T, concurrency int) *e2e {
	t.Helper()
	db := testdb.New(t)
	cfg := worker.ConfigFrom(db.Config())
	cfg.Concurrency = concurrency
	return newE2E(t, db, cfg)
}

// newE2E is a worker of db's built with cfg, and a publisher inserting
// jobs with its client.
func newE2E(t *testing.T, db *testdb.DB, cfg *worker.Config) *e2e {
	t.Helper()
	w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
	require.NoError(t, err)
	return &e2e{db: db, pub: outbox.New(w.Client(), nil, testdb.Logger(t)), w: w, client: w.Client()}
}

// resolveQueue is db's worker settings for a worker of the resolve queue
// alone.
func resolveQueue(db *testdb.DB) *worker.Config {
	cfg := worker.ConfigFrom(db.Config())
	cfg.Queues = []string{outbox.QueueResolve}
	return cfg
}

func (e *e2e) publish(t *testing.T, a outbox.Analysis) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), e.db.Pool, func(tx pgx.Tx) error {
		_, err := e.pub.PublishTx(context.Background(), tx, a)
		return err
	})
	require.NoError(t, err)
}

func (e *e2e) start(t *testing.T) {
	t.Helper()
	require.NoError(t, e.w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.w.Stop(ctx))
	})
}

// waitDrained waits until no resolve_file job is pending (worker.WaitIdle),
// failing the test after a deadline.
func waitDrained(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, worker.WaitIdle(ctx, pool, nil), "queue not drained")
}

func relationships(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT source_poi_id || ' ' || type || ' ' || target_poi_id FROM relationships`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	sort.Strings(out)
	return out
}

// referenceRun is the run an order case is compared with: one worker,
// every file published before it starts. It returns the run and its
// relationships.
func referenceRun(t *testing.T, files []outbox.Analysis) (*e2e, []string) {
	t.Helper()
	ref := setupE2E(t, 1)
	for _, a := range files {
		ref.publish(t, a)
	}
	ref.start(t)
	waitDrained(t, ref.db.Pool)
	return ref, relationships(t, ref.db.Pool)
}

// publishConcurrently publishes order from two goroutines, each every
// other file, and returns when both are done.
func (e *e2e) publishConcurrently(t *testing.T, order []outbox.Analysis) {
	t.Helper()
	var wg sync.WaitGroup
	for half := range 2 {
		wg.Go(func() {
			for i := half; i < len(order); i += 2 {
				e.publish(t, order[i])
			}
		})
	}
	wg.Wait()
}

func TestEndToEnd_RelationshipsIndependentOfOrderAndConcurrency(t *testing.T) {
	t.Parallel()
	files := corpus(12)

	ref, want := referenceRun(t, files)

	// Spot-check the reference against the resolution rules.
	require.Contains(t, want, "f00.a CALLS f05.b", "cross-file call")
	require.Contains(t, want, "f00.a CALLS f00.s", "same-file definition preferred over another file's")
	require.NotContains(t, want, "f03.h CALLS f00.s", "shared() is ambiguous outside files 0 and 1")
	require.Contains(t, want, "f03.a CALLS f11.l", "late() resolves although published last")
	require.Contains(t, want, "f04.C EXTENDS f03.C")
	require.Contains(t, want, "f04.i IMPORTS f07.a")
	require.Contains(t, want, "f04.i IMPORTS f07.C")
	require.NotContains(t, want, "f01.b CALLS f01.a", "a call inside a string literal is not a call")
	require.NotContains(t, want, "f00.a CALLS f00.a", "no self edges")
	require.Equal(t, 12, testdb.Count(t, ref.db.Pool, `SELECT count(*) FROM failed_pois`), "one malformed POI per file")

	for _, tc := range orderCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupE2E(t, tc.concurrency)
			order := tc.order(files)
			e.start(t)
			// Publish while the workers run, and re-publish a file with a
			// name removed and then restored.
			e.publishConcurrently(t, order)
			trimmed := files[11]
			trimmed.POIs = trimmed.POIs[:len(trimmed.POIs)-2] // drops late() (and the bad POI)
			e.publish(t, trimmed)
			e.publish(t, files[11])
			waitDrained(t, e.db.Pool)
			require.Equal(t, want, relationships(t, e.db.Pool))
			require.Equal(t, 0, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed')  AND kind = 'resolve_file'`))
		})
	}
}

// orderCase is one publish order and worker count the end-to-end tests run
// a corpus with; the relationships must equal a one-by-one reference run.
type orderCase struct {
	name        string
	concurrency int
	seed        uint64 // 0: reversed, else a seeded shuffle
}

var orderCases = []orderCase{
	{"reversed order, one worker", 1, 0},
	{"shuffled, four workers, publishing while working", 4, 1},
	{"shuffled again, four workers", 4, 2},
}

// order returns files in the case's order.
func (c orderCase) order(files []outbox.Analysis) []outbox.Analysis {
	order := slices.Clone(files)
	if c.seed == 0 {
		slices.Reverse(order)
	} else {
		rand.New(rand.NewPCG(c.seed, 7)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	return order
}
