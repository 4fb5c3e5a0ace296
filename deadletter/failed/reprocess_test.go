package failed_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/outbox"
)

func TestReprocess_FixedRowResolvesAndLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "src/a.js", poi("a1", "function_definition", "a", "src/a.js", 1, "function a() { b(); }"))
	b.publish(t, "src/b.js", poi("b1", "function_definition", "b", "src/b.js", "two", "function b() { a(); }"))
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'b1' AND status = 'new'`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM relationships`))

	// The operator fixes the row with SQL, then reprocesses it.
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '2') WHERE poi_id = 'b1'`)
	res := b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}})
	require.EqualValues(t, 1, res.Rows)
	require.EqualValues(t, 1, res.Jobs)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing' AND reprocess_job_id IS NOT NULL`))
	b.work(t)

	rows, err := b.store.List(ctx, failed.Filter{}, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1, "the same row, not a new one")
	require.Equal(t, failed.StatusReprocessed, rows[0].Status)
	require.NotZero(t, rows[0].ReprocessedAt)
	require.NotZero(t, rows[0].ReprocessJobID)
	require.Equal(t, 1, rows[0].Attempts)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE source_poi_id = 'b1' AND target_poi_id = 'a1' AND type = 'CALLS' AND job_id = $1`, rows[0].ReprocessJobID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE source_poi_id = 'a1' AND target_poi_id = 'b1' AND type = 'CALLS'`),
		"a reference from another file to the reprocessed POI's name resolves too")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE poi_id = 'b1'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess' AND item_count = 1 AND actor = 'tester'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess_outcome' AND (details->>'reprocessed')::int = 1`))
}

func TestReprocess_FailingAgainIncrementsAttemptsAndKeepsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "src/b.js", poi("b1", "function_definition", "b", "src/b.js", "two", "function b() {}"))
	b.work(t)
	before, err := b.store.List(ctx, failed.Filter{}, 10)
	require.NoError(t, err)
	require.Len(t, before, 1)

	// Now the POI fails differently: an operator broke its type.
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{type}', '""')`)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}})
	b.work(t)

	in, err := b.store.Get(ctx, before[0].ID)
	require.NoError(t, err)
	require.Equal(t, failed.StatusNew, in.Status)
	require.Equal(t, 2, in.Attempts)
	require.False(t, in.ManualReviewRequired)
	require.Len(t, in.History, 2, "the earlier error is kept")
	require.Contains(t, in.History[0].Message, "lineNumber")
	require.Contains(t, in.History[1].Message, "type")
	require.Equal(t, in.History[1].Message, in.ErrorMessage, "the row's error is the latest")
	require.Equal(t, in.ReprocessJobID, in.History[1].JobID)
	require.Equal(t, before[0].OriginalJobID, in.OriginalJobID)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois`), "the same row, not a new one")
	roles := map[string]int64{}
	for _, j := range in.Jobs {
		roles[j.Role] = j.ID
		require.Equal(t, "completed", j.State)
	}
	require.Equal(t, in.OriginalJobID, roles["original"])
	require.Equal(t, in.ReprocessJobID, roles["reprocess"])
}

func TestReprocess_CapMovesRowToManualReviewAndStopsLoop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.maxAttempts = 2
	b.publish(t, "src/b.js", poi("b1", "function_definition", "b", "src/b.js", "two", "function b() {}"))
	b.work(t)
	sel := failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}
	for round := 1; round <= 2; round++ {
		require.EqualValues(t, 1, b.run(t, sel).Rows, "round %d", round)
		b.work(t)
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'new' AND attempts = 3 AND manual_review_required`))

	// The automatic path leaves it alone from now on.
	require.EqualValues(t, 0, b.run(t, sel).Rows)
	st, err := b.store.Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Manual)

	// An operator may still take it deliberately; it stays flagged while it
	// keeps failing, and is cleared when it resolves.
	sel.IncludeManualReview = true
	require.EqualValues(t, 1, b.run(t, sel).Rows)
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'new' AND attempts = 4 AND manual_review_required`))
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '2')`)
	require.EqualValues(t, 1, b.run(t, sel).Rows)
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessed' AND NOT manual_review_required`))
}

func TestReprocess_DryRunChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 30, 3, 2)
	snapshot := func() string {
		var s string
		require.NoError(t, b.db.Pool.QueryRow(context.Background(), `
			SELECT (SELECT string_agg(id || status || updated_at, ',' ORDER BY id) FROM failed_pois) ||
			       (SELECT count(*) FROM river_job) || (SELECT count(*) FROM dead_letter_events)`).Scan(&s))
		return s
	}
	before := snapshot()
	plan, err := b.reproc.Plan(context.Background(), failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}, Limit: 25}, 20)
	require.NoError(t, err)
	require.EqualValues(t, 25, plan.Rows)
	require.EqualValues(t, 3, plan.Files)
	require.EqualValues(t, 2, plan.Signatures)
	require.Len(t, plan.ByFile, 3)
	require.Len(t, plan.BySignature, 2)
	var sum int64
	for _, g := range plan.ByFile {
		sum += g.Count
	}
	require.EqualValues(t, 25, sum)
	require.Equal(t, before, snapshot())
}

func TestReprocess_SecondRunEnqueuesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 2500, 7, 3)
	sel := failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}
	first := b.run(t, sel)
	require.EqualValues(t, 2500, first.Rows)
	// 1,000-row chunks; two run at once with SKIP LOCKED, so under load one
	// may take a short page and add a chunk: what matters is below, that
	// every row is in exactly one job.
	require.GreaterOrEqual(t, first.Chunks, 3)
	jobs := b.count(t, `SELECT count(*) FROM river_job`)
	require.EqualValues(t, jobs, first.Jobs)
	require.LessOrEqual(t, jobs, 7*first.Chunks, "at most one job per file in each chunk")

	second := b.run(t, sel)
	require.EqualValues(t, 0, second.Rows)
	require.Equal(t, jobs, b.count(t, `SELECT count(*) FROM river_job`))
	// Every row is in exactly one job, as the job's FailedPOIIDs say.
	require.Equal(t, 2500, b.count(t, `
		SELECT count(DISTINCT f.id) FROM failed_pois f JOIN river_job j ON j.id = f.reprocess_job_id
		WHERE f.status = 'reprocessing' AND j.args->'failedPoiIds' @> to_jsonb(f.id) AND j.args->>'fileId' = f.file_id`))
	require.Equal(t, 2500, b.count(t, `SELECT sum(jsonb_array_length(args->'failedPoiIds')) FROM river_job`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess'`))
	require.Equal(t, 2500, b.count(t, `SELECT sum(item_count) FROM dead_letter_events WHERE action = 'reprocess'`))
}

func TestReprocess_ConcurrentRunsNeverDoubleEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 600, 50, 3)
	r := failed.NewReprocessor(b.db.Pool, b.inserter, &failed.ReprocessConfig{ChunkSize: 20}, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	for range 3 {
		wg.Go(func() {
			res, err := r.Run(context.Background(), failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
			if !errors.Is(err, nil) {
				t.Error(err)
				return
			}
			mu.Lock()
			total += res.Rows
			mu.Unlock()
		})
	}
	wg.Wait()
	require.EqualValues(t, 600, total)
	require.Equal(t, 600, b.count(t, `SELECT sum(jsonb_array_length(args->'failedPoiIds')) FROM river_job`))
	require.Equal(t, 600, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing'`))
}

// failingInserter fails the job insert, after really inserting when
// afterInsert (so the jobs exist in the transaction when it fails).
type failingInserter struct {
	real        failed.JobInserter
	afterInsert bool
}

func (f failingInserter) InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	if f.afterInsert {
		if _, err := f.real.InsertManyTx(ctx, tx, params); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("injected: the database went away")
}

func TestReprocess_FailedJobInsertMarksNothing(t *testing.T) {
	t.Parallel()
	for _, afterInsert := range []bool{false, true} {
		b := setup(t)
		b.seed(t, 1500, 4, 2)
		r := failed.NewReprocessor(b.db.Pool, failingInserter{real: b.inserter, afterInsert: afterInsert}, nil, nil)
		res, err := r.Run(context.Background(), failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
		require.ErrorContains(t, err, "injected")
		require.EqualValues(t, 0, res.Rows)
		require.Equal(t, 1500, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'new' AND reprocess_job_id IS NULL`))
		require.Equal(t, 0, b.count(t, `SELECT count(*) FROM river_job`), "the jobs rolled back with the marking")
		require.Equal(t, 0, b.count(t, `SELECT sum(item_count) FROM dead_letter_events WHERE action = 'reprocess'`))

		// Nothing was lost: a run with a working inserter takes every row.
		require.EqualValues(t, 1500, b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}).Rows)
	}
}

func TestReprocess_StuckRowsAreReenqueuedOnlyWhenTheirJobIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, 3, 3, 1)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}})
	stuckSel := failed.Selection{Filter: failed.Filter{Status: failed.StatusReprocessing}}

	// Jobs still queued: nothing is stuck, nothing is taken.
	st, err := b.store.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Stuck)
	require.EqualValues(t, 0, b.run(t, stuckSel).Rows)

	// River discarded one job and another vanished (cleaner, manual delete).
	b.exec(t, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE args->>'fileId' = 'f0'`)
	b.exec(t, `DELETE FROM river_job WHERE args->>'fileId' = 'f1'`)
	st, err = b.store.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Stuck)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM failed_pois_stuck`))

	res := b.run(t, stuckSel)
	require.EqualValues(t, 2, res.Rows)
	st, err = b.store.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Stuck)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM failed_pois f JOIN river_job j ON j.id = f.reprocess_job_id WHERE j.state = 'available'`))
	b.work(t)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'new' AND attempts = 2`))
}

func TestReprocess_IgnoredRowsComeBackOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, 4, 2, 2)
	res, err := b.store.Ignore(ctx, []int64{1, 2}, "known bad generator", "tester")
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, res.Ignored)

	require.EqualValues(t, 2, b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}).Rows)
	require.EqualValues(t, 2, b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusIgnored}}).Rows)
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing'`))
}

func TestReprocess_FiltersAndLimitSelectOnlyMatchingRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 40, 4, 2)
	res := b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew, FileID: "f1",
		Signature: "failure cause b", ErrorClass: failed.ClassValidation}})
	// f1 holds i = 1, 5, 9, ...; signature b holds odd i: all 10 of f1's.
	require.EqualValues(t, 10, res.Rows)
	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing' AND file_id = 'f1'`))

	res = b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}, Limit: 7})
	require.EqualValues(t, 7, res.Rows)

	// Injection attempts are values like any other: they match nothing.
	for _, f := range []failed.Filter{
		{Status: failed.StatusNew, Signature: "x' OR 1=1 --"},
		{Status: failed.StatusNew, FileID: "f1' OR '1'='1"},
		{Status: failed.StatusNew, FileID: "f1'; DROP TABLE failed_pois; --"},
	} {
		require.EqualValues(t, 0, b.run(t, failed.Selection{Filter: f}).Rows)
	}
	require.Equal(t, 40, b.count(t, `SELECT count(*) FROM failed_pois`))

	_, err := b.reproc.Run(context.Background(), failed.Selection{}, "tester", nil)
	require.ErrorContains(t, err, "status is required")
	_, err = b.reproc.Run(context.Background(), failed.Selection{Filter: failed.Filter{Status: "done"}}, "tester", nil)
	require.ErrorContains(t, err, `unknown status "done"`)
}

func TestReprocess_OutcomeForRowTakenOverIsSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "src/b.js", poi("b1", "function_definition", "b", "src/b.js", "two", "function b() {}"))
	b.work(t)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}})
	// An operator sets the row aside while its job waits (by SQL: the CLI
	// refuses to ignore rows in reprocessing).
	b.exec(t, `UPDATE failed_pois SET status = 'ignored', ignored_reason = 'by hand'`)
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'ignored' AND attempts = 1`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess_outcome' AND (details->>'skipped')::int = 1`))
}

func TestReprocess_JobsCarryTheRowsAsTheyAreNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "src/b.js",
		poi("b1", "function_definition", "b", "src/b.js", "two", "function b() {}"),
		poi("b2", "function_definition", "c", "src/b.js", 2, "function c() {}"))
	b.work(t)
	b.publish(t, "src/b.js", // version 2, b1 still broken: its row of version 1 is superseded by one of version 2
		poi("b1", "function_definition", "b", "src/b.js", "two", "function b() {}"),
		poi("b2", "function_definition", "c", "src/b.js", 2, "function c() {}"))
	b.work(t)
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{rawCode}', '"function b() { c(); }"')`)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}})

	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT args FROM river_job WHERE 'reprocess' = ANY(tags)`).Scan(&raw))
	var args outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	require.Equal(t, "src/b.js", args.FileID)
	require.EqualValues(t, 2, args.FileVersion)
	require.Len(t, args.POIs, 1)
	require.Len(t, args.FailedPOIIDs, 1)
	require.Contains(t, string(args.POIs[0]), "c();")
	require.Equal(t, []string{"b"}, args.ChangedNames, string(raw))
}
