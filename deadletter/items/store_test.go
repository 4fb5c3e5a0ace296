package items_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/testdb"
)

func failedItem(job, id string, first time.Time, attempts int) *items.Item {
	var hist []agent.FailureDetail
	for n := 1; n <= attempts; n++ {
		code := 3
		hist = append(hist, agent.FailureDetail{AttemptNumber: n, Timestamp: first.Add(time.Duration(n) * time.Second),
			ErrorType: agent.ErrorTypeCommandFailed, ExitCode: &code,
			ErrorMessage: fmt.Sprintf("agent exited with code 3: item %s failed", id)})
	}
	it := items.NewItem(job, id, json.RawMessage(`{"id":"`+id+`"}`), hist)
	return &it
}

func addItem(t testing.TB, store *items.Store, db *testdb.DB, it *items.Item, maxItems int) *items.AddResult {
	t.Helper()
	var res *items.AddResult
	require.NoError(t, pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = store.AddTx(context.Background(), tx, it, maxItems, "test")
		return err
	}))
	return res
}

// A job over max_items loses its oldest tenth by first_attempt, and the
// eviction is recorded with the count and the oldest timestamp.
func TestItemStore_EvictsOldestTenthWhenOverCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := items.NewStore(db.Pool, testdb.Logger(t))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20 {
		res := addItem(t, store, db, failedItem("job-a", fmt.Sprintf("i%02d", i), t0.Add(time.Duration(i)*time.Minute), 1), 20)
		require.Zero(t, res.Evicted)
	}
	addItem(t, store, db, failedItem("job-b", "other", t0.Add(-time.Hour), 1), 20) // another job is not counted

	res := addItem(t, store, db, failedItem("job-a", "i20", t0.Add(-2*time.Hour), 1), 20) // oldest of all, but just added
	require.Equal(t, 2, res.Evicted, "10% of 20")
	require.Equal(t, t0.Add(time.Second), res.OldestEvicted.UTC())
	require.Equal(t, 19, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE job_id = 'job-a'`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE item_id IN ('i00', 'i01')`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE item_id = 'i20'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE job_id = 'job-b'`))

	var details []byte
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT details FROM dead_letter_events WHERE action = 'items_evicted'`).Scan(&details))
	var ev struct {
		Count  int       `json:"count"`
		Oldest time.Time `json:"oldest_timestamp"`
		IDs    []string  `json:"item_ids"`
	}
	require.NoError(t, json.Unmarshal(details, &ev))
	require.Equal(t, 2, ev.Count)
	require.Equal(t, t0.Add(time.Second), ev.Oldest.UTC())
	require.ElementsMatch(t, []string{"i00", "i01"}, ev.IDs)
	require.Equal(t, 22, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'item_added'`))
}

// Dead-lettering an item again appends only the new attempts and flags it
// for review; success takes it out of the DLQ and clear deletes it.
func TestItemStore_ReDeadLetterAppendsHistoryAndResolveLeavesDLQ(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := items.NewStore(db.Pool, testdb.Logger(t))
	t0 := time.Now().Add(-time.Hour).UTC()
	first := addItem(t, store, db, failedItem("j", "x", t0, 2), 100)
	require.True(t, first.Inserted)
	again := addItem(t, store, db, failedItem("j", "x", t0, 4), 100) // whole history passed again
	require.False(t, again.Inserted)
	require.Equal(t, 2, again.DeadLetterCount)

	it, err := store.Get(ctx, "", "x")
	require.NoError(t, err)
	require.Equal(t, 4, it.FailureCount)
	require.Len(t, it.FailureHistory, 4)
	for i, h := range it.FailureHistory {
		require.Equal(t, i+1, h.AttemptNumber)
	}
	require.True(t, it.ManualReviewRequired, "a second dead-lettering needs a person")

	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		found, err := store.ResolveTx(ctx, tx, "j", "x", "test")
		require.True(t, found)
		return err
	}))
	list, total, err := store.List(ctx, items.Filter{JobID: "j"}, 10)
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)
	n, err := store.Clear(ctx, "j", "test")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'item_removed' AND details->>'reason' = 'reprocessed successfully'`))

	_, err = store.Get(ctx, "j", "x")
	require.ErrorIs(t, err, items.ErrNotFound)
}

func newBenchStore(tb testing.TB, db *testdb.DB) *items.Store {
	return items.NewStore(db.Pool, slog.New(slog.DiscardHandler))
}

// Export reads the DLQ in pages ordered by job and id: every item once, in
// order, across page boundaries and jobs; limit stops it early; reprocessed
// items have left the DLQ. Analyze only reads.
func TestItemStore_ExportStreamsInPagesAndAnalyzeOnlyReads(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	store := items.NewStore(db.Pool, slog.New(slog.DiscardHandler))
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO dead_lettered_items (job_id, item_id, item_data, first_attempt, last_attempt, failure_count)
		SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, 'i' || i, '{}', now(), now(), 1
		FROM generate_series(1, 4501) AS i;
		UPDATE dead_lettered_items SET status = 'reprocessed' WHERE item_id = 'i7'`)
	require.NoError(t, err)

	var got []string
	n, err := store.Export(ctx, items.Filter{}, 0, func(it *items.Item) error {
		got = append(got, it.JobID+"/"+it.ItemID)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 4500, n)
	require.Len(t, got, 4500)
	require.Equal(t, "a/i2", got[0])
	require.Equal(t, "b/i1", got[2250], "job a's 2250 items first, then job b's")
	require.NotContains(t, got, "b/i7")
	seen := map[string]bool{}
	for _, g := range got {
		require.False(t, seen[g], "%s exported twice", g)
		seen[g] = true
	}

	n, err = store.Export(ctx, items.Filter{JobID: "b"}, 2001, func(*items.Item) error { return nil })
	require.NoError(t, err)
	require.EqualValues(t, 2001, n)

	an, err := store.Analyze(ctx, items.Filter{JobID: "a"})
	require.NoError(t, err)
	require.Equal(t, 2250, an.TotalItems)
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events`), "analyze records no event")
}

// Two adds to a full job racing: the second counts only after the first
// commits, so the job never ends over capacity. The race is forced: the
// first add's transaction stays open until the second has either finished
// (it would, counting without the first) or is waiting for the first.
func TestItemStore_ConcurrentAddsNeverLeaveAJobOverCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := items.NewStore(db.Pool, testdb.Logger(t))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const maxItems = 10
	for i := range maxItems - 1 {
		addItem(t, store, db, failedItem("job", fmt.Sprintf("i%02d", i), t0.Add(time.Duration(i)*time.Minute), 1), maxItems)
	}

	first, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	res, err := store.AddTx(ctx, first, failedItem("job", "first", t0.Add(time.Hour), 1), maxItems, "test")
	require.NoError(t, err)
	require.Zero(t, res.Evicted, "the job is exactly full")

	second, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer second.Release()
	var pid uint32
	require.NoError(t, second.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, second, func(tx pgx.Tx) error {
			_, err := store.AddTx(ctx, tx, failedItem("job", "second", t0.Add(2*time.Hour), 1), maxItems, "test")
			return err
		})
	}()
	var finished bool
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
			return true
		default:
		}
		return testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, pid) == 1
	}, 10*time.Second, 5*time.Millisecond, "the second add neither finished nor waited")
	require.NoError(t, first.Commit(ctx))
	if !finished {
		require.NoError(t, <-done)
	}
	require.LessOrEqual(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE job_id = 'job'`), maxItems)
}
