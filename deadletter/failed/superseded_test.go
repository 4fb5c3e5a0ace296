package failed_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// actionable counts the rows a reprocess could still take (new,
// reprocessing, ignored) of POI poiID.
const actionableOf = `SELECT count(*) FROM failed_pois WHERE poi_id = $1 AND status IN ('new', 'reprocessing', 'ignored')`

// lineOf is POI id's line number in the symbol table.
func (b *bundle) lineOf(t *testing.T, id string) int {
	t.Helper()
	var line int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT line_number FROM pois WHERE poi_id = $1`, id).Scan(&line))
	return line
}

// Issue 37, defect 4: a failed POI of an older version of its file must
// never be applied over a newer publish. a1 fails in version 1; version 2
// publishes it valid at line 1; the operator corrects the version 1 row
// (line 99) as docs/failed_pois.md invites and reprocesses: a1 stays at
// line 1, and the row is closed as superseded, saying why.
func TestReprocess_RowOfAnOlderVersionIsNotAppliedOverANewerPublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "a.py", poi("a1", "function_definition", "a", "a.py", "one", "def a(): pass"))
	b.work(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'a1' AND status = 'new'`))
	b.publish(t, "a.py", poi("a1", "function_definition", "a", "a.py", 1, "def a(): pass"))
	b.work(t)
	require.Equal(t, 1, b.lineOf(t, "a1"))

	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '99') WHERE poi_id = 'a1'`)
	_, err := b.reproc.Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
	require.NoError(t, err)
	b.work(t)

	require.Equal(t, 1, b.lineOf(t, "a1"), "the POI of the superseded version was written over the newer publish")
	rows, err := b.store.List(ctx, failed.Filter{POIID: "a1"}, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, failed.Status("superseded"), rows[0].Status)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'a1' AND file_version = 1
		AND superseded_at IS NOT NULL AND superseded_reason LIKE '%version 2%'`))
}

// Issue 37, defect 4: re-publishing a file that is still broken leaves one
// actionable row per failed POI, the newest; the earlier ones are
// superseded, and a reprocess's dry run counts only the actionable ones.
// A POI without a usable id is keyed by its row: the publish supersedes it
// all the same.
func TestPublish_RepublishingABrokenFileKeepsOneActionableRowPerPOI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	broken := []json.RawMessage{
		poi("a1", "function_definition", "a", "a.py", "one", "def a(): pass"),
		json.RawMessage(`{"type":"function_definition","name":"orphan","filePath":"a.py","lineNumber":2}`),
		poi("a3", "function_definition", "c", "a.py", 3, "def c(): pass"),
	}
	for range 3 {
		b.publish(t, "a.py", broken...)
		b.work(t)
	}
	require.Equal(t, 1, b.count(t, actionableOf, "a1"), "one actionable row for a1")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id IS NULL AND status = 'new'`),
		"one actionable row for the POI without an id")
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'superseded' AND superseded_at IS NOT NULL
		AND superseded_reason <> '' AND file_version < 3`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'new' AND file_version = 3`))

	plan, err := b.reproc.Plan(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, 10)
	require.NoError(t, err)
	require.EqualValues(t, 2, plan.Rows, "the dry run counts each failed POI once")

	st, err := b.store.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Status[failed.Status("superseded")])
	requireStatsMatch(t, b, "after superseding publishes")
}

// Issue 37, defect 4, the race: a reprocess job is queued for a1's row of
// version 1 when version 2 of the file is published in a transaction held
// open. The job's batch waits for the publish's lock on the file's row,
// and when the publish commits it writes nothing: the publish superseded
// its row and changed the file's version. Without the worker holding the
// file's row FOR SHARE while it checks the version and its rows, it reads
// them before the publish commits and a1 ends at line 99.
func TestReprocess_JobQueuedBeforeAHeldPublishOfItsFileWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "a.py", poi("a1", "function_definition", "a", "a.py", "one", "def a(): pass"))
	b.work(t)
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '99') WHERE poi_id = 'a1'`)
	res, err := b.reproc.Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Jobs)

	open, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = open.Rollback(ctx) }()
	_, err = b.pub.PublishTx(ctx, open, outbox.Analysis{FileID: "a.py", POIs: []json.RawMessage{
		poi("a1", "function_definition", "a", "a.py", 1, "def a(): pass")}})
	require.NoError(t, err)

	worked := make(chan error, 1)
	go func() { worked <- b.workUntilIdle(t) }()
	// The reprocess batch waits on the file's row, locked by the publish.
	waitForLockWait(t, b)
	require.NoError(t, open.Commit(ctx))
	require.NoError(t, <-worked)
	b.work(t) // the publish's own job

	require.Equal(t, 1, b.lineOf(t, "a1"), "the reprocess wrote version 1's POI over version 2")
	require.Zero(t, b.count(t, actionableOf, "a1"))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'a1' AND status = 'superseded'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess_outcome' AND (details->>'skipped')::int = 1`))
}

// waitForLockWait returns once a session of b's database waits for a lock
// (polling pg_stat_activity).
func waitForLockWait(t *testing.T, b *bundle) {
	t.Helper()
	require.Eventually(t, func() bool {
		return testdb.Count(t, b.db.Pool, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 60*time.Second, 5*time.Millisecond, "no session waited for a lock")
}

// The worker's own version check, for rows a publish did not supersede (a
// row an operator set back to reprocessing by hand, or one recorded by a
// relay older than migration 29): the row stays reprocessing for a job of
// version 1 after version 2 commits. The job writes nothing and closes the
// row, saying why.
func TestReprocess_JobOfAnOlderVersionWritesNothingWhenThePublishMissedItsRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "a.py", poi("a1", "function_definition", "a", "a.py", "one", "def a(): pass")) // version 1: a1 fails
	b.work(t)
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '99') WHERE poi_id = 'a1'`)
	res, err := b.reproc.Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Jobs)

	b.publish(t, "a.py", poi("a1", "function_definition", "a", "a.py", 1, "def a(): pass")) // version 2
	b.exec(t, `UPDATE failed_pois SET status = 'reprocessing', superseded_at = NULL, superseded_reason = NULL WHERE poi_id = 'a1'`)
	b.work(t)

	require.Equal(t, 1, b.lineOf(t, "a1"), "the reprocess wrote version 1's POI over version 2")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE poi_id = 'a1' AND status = 'superseded'
		AND superseded_reason = 'the row is of version 1 of the file; version 2 was published since'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess_outcome' AND (details->>'superseded')::int = 1`))
}

// A corrected row whose POI id another file of the repository holds fails
// again, as a publish would reject it, instead of being reported
// reprocessed without its POI ever being written.
func TestReprocess_APOIWhoseIDAnotherFileHoldsFailsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "a.py", poi("p3", "function_definition", "a", "a.py", "one", "def a(): pass")) // p3 fails in a.py
	b.publish(t, "b.py", poi("p3", "function_definition", "b", "b.py", 1, "def b(): pass"))     // b.py holds p3
	b.work(t)
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '9') WHERE file_id = 'a.py'`)
	res, err := b.reproc.Run(ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "tester", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Jobs)
	b.work(t)

	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE poi_id = 'p3' AND file_id = 'b.py'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE file_id = 'a.py' AND status = 'new' AND attempts = 2
		AND error_message LIKE '%id already belongs to a POI of file "b.py"%'`), "the row failed again, naming the file that holds the id")
}
