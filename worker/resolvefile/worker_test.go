package resolvefile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// unitBundle works jobs with rivertest inside one test transaction, which is
// rolled back at the end.
type unitBundle struct {
	db  *testdb.DB
	tx  pgx.Tx
	pub *outbox.Publisher
	tw  *rivertest.Worker[outbox.ResolveFileArgs, pgx.Tx]
}

func setupUnit(t *testing.T, extract resolvefile.ExtractFunc) *unitBundle {
	t.Helper()
	ctx := context.Background()
	db := testdb.New(t)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })

	driver := riverpgxv5.New(nil)
	riverCfg := &river.Config{Schema: db.Schema}
	inserter, err := river.NewClient(driver, riverCfg)
	require.NoError(t, err)
	w := resolvefile.NewWorker(tx, resolvefile.Config{POITimeout: 200 * time.Millisecond, Extract: extract},
		testdb.Logger(t), nil)
	return &unitBundle{db: db, tx: tx, pub: outbox.New(inserter, nil, testdb.Logger(t)),
		tw: rivertest.NewWorker(t, driver, riverCfg, w)}
}

// publishAndWork publishes a in the test transaction and works its job.
func (b *unitBundle) publishAndWork(t *testing.T, a outbox.Analysis) (*rivertest.WorkResult, error) {
	t.Helper()
	res, err := b.pub.PublishTx(context.Background(), b.tx, a)
	require.NoError(t, err)
	require.Len(t, res.JobIDs, 1)
	return b.workJob(t, res.JobIDs[0])
}

// workJob works job id in the test transaction and, when it completes,
// runs the linker until link_queue is empty (link.Drain).
func (b *unitBundle) workJob(t *testing.T, id int64) (*rivertest.WorkResult, error) {
	t.Helper()
	res, err := b.tw.WorkJob(context.Background(), t, b.tx, b.job(t, id))
	if err == nil {
		require.NoError(t, link.LinkAll(context.Background(), b.tx))
	}
	return res, err
}

func (b *unitBundle) job(t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	var j rivertype.JobRow
	var args []byte
	require.NoError(t, b.tx.QueryRow(context.Background(),
		`SELECT id, args, kind, queue, state, attempt, max_attempts, priority FROM river_job WHERE id = $1`, id).
		Scan(&j.ID, &args, &j.Kind, &j.Queue, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority))
	j.EncodedArgs = args
	return &j
}

func (b *unitBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return testdb.Count(t, b.tx, sql, args...)
}

func fn(id, name, file string, code string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "function_definition", "name": name,
		"filePath": file, "lineNumber": 1, "rawCode": code, "context": ""})
	return b
}

func TestResolveFileWorker_ResolvesEveryPOIOfAFivePOIBatch(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	b := setupUnit(t, func(ctx context.Context, p resolver.POI) ([]resolver.Reference, error) {
		calls[p.ID]++
		return resolver.Extract(ctx, p)
	})
	a := outbox.Analysis{FileID: "src/m.js", POIs: []json.RawMessage{
		fn("a", "a", "src/m.js", "function a() { return b() + c(); }"),
		fn("b", "b", "src/m.js", "function b() { return c(); }"),
		fn("c", "c", "src/m.js", "function c() { return d(); }"),
		fn("d", "d", "src/m.js", "function d() { return e(); }"),
		fn("e", "e", "src/m.js", "function e() { return 1; }"),
	}}
	res, err := b.publishAndWork(t, a)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, calls, "the resolver runs once for every POI")
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM relationships WHERE type = 'CALLS'`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM failed_pois`))
}

func TestResolveFileWorker_DeadLettersFailingPOIAndContinues(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, nil)
	second := json.RawMessage(`{"id":"p2","type":"function_definition","name":"two","filePath":"src/m.js","lineNumber":-4,"rawCode":"function two() {}"}`)
	a := outbox.Analysis{FileID: "src/m.js", POIs: []json.RawMessage{
		fn("p1", "one", "src/m.js", "function one() { return three(); }"),
		second,
		fn("p3", "three", "src/m.js", "function three() { return one(); }"),
	}}
	res, err := b.publishAndWork(t, a)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)

	var (
		poiID, class, msg, sig, status string
		data                           []byte
		jobID                          int64
		attempts                       int
	)
	require.NoError(t, b.tx.QueryRow(context.Background(), `
		SELECT poi_id, error_class, error_message, error_signature, status, original_poi_data, original_job_id, attempts
		FROM failed_pois`).Scan(&poiID, &class, &msg, &sig, &status, &data, &jobID, &attempts))
	require.Equal(t, "p2", poiID)
	require.Equal(t, "validation", class)
	require.Contains(t, msg, "lineNumber")
	require.NotEmpty(t, sig)
	require.Equal(t, "new", status)
	require.Equal(t, 1, attempts)
	require.Equal(t, res.Job.ID, jobID)
	require.JSONEq(t, string(second), string(data), "the failed POI's data is stored as received")

	// The 1st and 3rd POIs were still resolved.
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE source_poi_id = 'p1' AND target_poi_id = 'p3'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE source_poi_id = 'p3' AND target_poi_id = 'p1'`))
}

func TestResolveFileWorker_EmptyBatchDoesNothingAndSucceeds(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, func(context.Context, resolver.POI) ([]resolver.Reference, error) {
		t.Error("the resolver must not run for an empty batch")
		return nil, nil
	})
	_, err := b.tx.Exec(context.Background(), `INSERT INTO files (file_id) VALUES ('src/empty.js')`)
	require.NoError(t, err)
	res, err := b.tw.Work(context.Background(), t, b.tx, outbox.ResolveFileArgs{FileID: "src/empty.js", FileVersion: 1, POIs: []json.RawMessage{}}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM failed_pois`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM relationships`))
}

func TestResolveFileWorker_RecoversAPanicForOnePOI(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, func(ctx context.Context, p resolver.POI) ([]resolver.Reference, error) {
		if p.ID == "boom" {
			var m map[string]int
			m["x"]++ // nil map write: a real runtime panic
		}
		return resolver.Extract(ctx, p)
	})
	res, err := b.publishAndWork(t, outbox.Analysis{FileID: "src/p.js", POIs: []json.RawMessage{
		fn("ok1", "one", "src/p.js", "function one() { two(); }"),
		fn("boom", "boom", "src/p.js", "function boom() {}"),
		fn("ok2", "two", "src/p.js", "function two() { one(); }"),
	}})
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	var class, msg, stack string
	require.NoError(t, b.tx.QueryRow(context.Background(),
		`SELECT error_class, error_message, error_context FROM failed_pois WHERE poi_id = 'boom'`).Scan(&class, &msg, &stack))
	require.Equal(t, "panic", class)
	require.Contains(t, msg, "assignment to entry in nil map")
	require.Contains(t, stack, "goroutine")
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM relationships`))
}

func TestResolveFileWorker_PerPOIDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b := setupUnit(t, func(ctx context.Context, p resolver.POI) ([]resolver.Reference, error) {
		if p.ID == "slow" {
			<-release // ignores its context on purpose
		}
		return resolver.Extract(ctx, p)
	})
	res, err := b.publishAndWork(t, outbox.Analysis{FileID: "src/s.js", POIs: []json.RawMessage{
		fn("slow", "slow", "src/s.js", "function slow() {}"),
		fn("fast", "fast", "src/s.js", "function fast() { slow(); }"),
	}})
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'slow' AND error_class = 'timeout'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE source_poi_id = 'fast'`))
}

func TestResolveFileWorker_ResolverErrorIsRecorded(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, func(ctx context.Context, p resolver.POI) ([]resolver.Reference, error) {
		if p.ID == "err" {
			return nil, errors.New("grammar for language cobol not loaded")
		}
		return resolver.Extract(ctx, p)
	})
	_, err := b.publishAndWork(t, outbox.Analysis{FileID: "src/e.js", POIs: []json.RawMessage{fn("err", "x", "src/e.js", "")}})
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE error_class = 'resolver' AND error_message LIKE '%cobol%'`))
}

func TestResolveFileWorker_FailedPOIsWriteFailureRetriesTheBatch(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, nil)
	ctx := context.Background()
	_, err := b.tx.Exec(ctx, `
		CREATE FUNCTION refuse_failed_pois() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'failed_pois is unwritable (injected by test)'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON failed_pois FOR EACH ROW EXECUTE FUNCTION refuse_failed_pois();`)
	require.NoError(t, err)

	pr, err := b.pub.PublishTx(ctx, b.tx, outbox.Analysis{FileID: "src/f.js", POIs: []json.RawMessage{
		fn("good", "good", "src/f.js", "function good() { other(); }"),
		json.RawMessage(`{"id":"bad","type":"function_definition","lineNumber":1}`),
		fn("other", "other", "src/f.js", "function other() {}"),
	}})
	require.NoError(t, err)
	res, err := b.workJob(t, pr.JobIDs[0])
	require.ErrorContains(t, err, "failed_pois is unwritable", "the batch must fail so River retries it")
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	// River retries it: at once (available) or after a backoff (retryable).
	require.Contains(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRetryable}, res.Job.State)
	require.Contains(t, res.Job.Errors[0].Error, "failed_pois is unwritable")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM relationships`), "nothing of the failed attempt remains")

	// The fault is removed; the retry writes everything exactly once.
	_, err = b.tx.Exec(ctx, `DROP TRIGGER refuse ON failed_pois`)
	require.NoError(t, err)
	res, err = b.workJob(t, pr.JobIDs[0])
	require.NoError(t, err)
	require.Equal(t, 2, res.Job.Attempt)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'bad'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships`))
}

func TestResolveFileWorker_SupersededJobWritesNothing(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, nil)
	ctx := context.Background()
	a := outbox.Analysis{FileID: "src/v.js", POIs: []json.RawMessage{
		fn("v1", "v", "src/v.js", "function v() { w(); }"),
		fn("w1", "w", "src/v.js", "function w() {}"),
		json.RawMessage(`{"id":"broken"}`),
	}}
	first, err := b.pub.PublishTx(ctx, b.tx, a)
	require.NoError(t, err)
	second, err := b.pub.PublishTx(ctx, b.tx, a) // the same analysis again
	require.NoError(t, err)

	// The newer job runs first; the older one, superseded, must change nothing.
	for _, id := range []int64{second.JobIDs[0], first.JobIDs[0]} {
		res, err := b.workJob(t, id)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships`), "publishing twice duplicates nothing")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois`), "one failure recorded, by the current job")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE original_job_id = $1`, second.JobIDs[0]))
}

func TestResolveFileWorker_RelationshipKinds(t *testing.T) {
	t.Parallel()
	b := setupUnit(t, nil)
	ctx := context.Background()
	mk := func(id, typ, name, file, code string) json.RawMessage {
		raw, _ := json.Marshal(map[string]any{"id": id, "type": typ, "name": name, "filePath": file, "lineNumber": 1, "rawCode": code})
		return raw
	}
	for _, a := range []outbox.Analysis{
		{FileID: "src/base.ts", POIs: []json.RawMessage{
			mk("Base", resolver.TypeClass, "Base", "src/base.ts", "class Base { x = helper(); run() { other(); } }"),
			mk("Runnable", resolver.TypeInterface, "Runnable", "src/base.ts", "interface Runnable { run(): void }"),
			mk("helper", resolver.TypeFunction, "helper", "src/base.ts", "function helper() {}"),
		}},
		{FileID: "src/child.ts", POIs: []json.RawMessage{
			mk("imp", resolver.TypeImport, "Base", "src/child.ts", "import { Base, Runnable } from './base';"),
			mk("Child", resolver.TypeClass, "Child", "src/child.ts", "class Child extends Base implements Runnable { y = helper(); go() { other(); } }"),
		}},
	} {
		res, err := b.pub.PublishTx(ctx, b.tx, a)
		require.NoError(t, err)
		wr, err := b.workJob(t, res.JobIDs[0])
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, wr.EventKind)
	}
	got := map[string]bool{}
	rows, err := b.tx.Query(ctx, `SELECT source_poi_id || ' ' || type || ' ' || target_poi_id FROM relationships`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		got[s] = true
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]bool{
		"Base CALLS helper":         true,
		"Child CALLS helper":        true,
		"Child EXTENDS Base":        true,
		"Child IMPLEMENTS Runnable": true,
		"imp IMPORTS Base":          true,
		"imp IMPORTS Runnable":      true,
	}, got, fmt.Sprint(got))
	_ = strings.TrimSpace
}

// A reprocess job that wrote some of a file's references since the publish
// must not make the batch fail: the batch's resolution replaces them.
func TestResolveFileWorker_ReferencesAlreadyStoredByAReprocessAreTakenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnit(t, nil)
	a := outbox.Analysis{FileID: "src/m.js", POIs: []json.RawMessage{
		fn("m1", "one", "src/m.js", "function one() { return two() + three(); }"),
		fn("m2", "two", "src/m.js", "function two() { return 2; }"),
	}}
	res, err := b.pub.PublishTx(ctx, b.tx, a)
	require.NoError(t, err)
	// What a reprocess of m1 would have written meanwhile: its call of two,
	// resolved to nothing.
	_, err = b.tx.Exec(ctx, `INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type)
		VALUES ('m1', 'src/m.js', 'two', 'two', 'CALLS')`)
	require.NoError(t, err)

	wr, err := b.workJob(t, res.JobIDs[0])
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, wr.EventKind)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE source_poi_id = 'm1' AND target_poi_id = 'm2' AND type = 'CALLS'`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'm1'`), "two and three, once each")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'm1' AND name = 'three' AND target_poi_id IS NULL`))
}

// A job whose args hold the POIs readable (enqueued before they were stored
// compressed, or written by hand from a dead-lettered copy) is worked the
// same.
func TestResolveFileWorker_WorksJobsWithReadableArgs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnit(t, nil)
	res, err := b.pub.PublishTx(ctx, b.tx, outbox.Analysis{FileID: "src/r.js", POIs: []json.RawMessage{
		fn("r1", "one", "src/r.js", "function one() { return two(); }"),
		fn("r2", "two", "src/r.js", "function two() { return one(); }"),
	}})
	require.NoError(t, err)
	var stored []byte
	require.NoError(t, b.tx.QueryRow(ctx, `SELECT args FROM river_job WHERE id = $1`, res.JobIDs[0]).Scan(&stored))
	readable, err := outbox.ExpandArgs(stored)
	require.NoError(t, err)
	_, err = b.tx.Exec(ctx, `UPDATE river_job SET args = $1 WHERE id = $2`, readable, res.JobIDs[0])
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE id = $1 AND args ? 'pois' AND NOT args ? 'poisZstd'`, res.JobIDs[0]))

	wr, err := b.workJob(t, res.JobIDs[0])
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, wr.EventKind)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM relationships WHERE source_file_id = 'src/r.js'`))
}
