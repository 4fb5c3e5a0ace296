package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// sqlPublishAndDrain publishes analysis through the SQL API and drains
// the queue as a worker does.
func sqlPublishAndDrain(t *testing.T, db *testdb.DB, analysis string) outbox.DrainResult {
	t.Helper()
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, analysis)
	require.NoError(t, err)
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	require.NoError(t, err)
	res, err := outbox.NewDrainer(db.Pool, outbox.New(client, nil, testdb.Logger(t)), outbox.DrainConfig{}, testdb.Logger(t)).Drain(ctx)
	require.NoError(t, err)
	return res
}

func oneFunctionFile(file string, ids ...string) string {
	pois := ""
	for i, id := range ids {
		if i > 0 {
			pois += ","
		}
		pois += fmt.Sprintf(`{"id":%q,"type":"function_definition","name":"f%d","lineNumber":%d,"filePath":%q}`, id, i, i+1, file)
	}
	return fmt.Sprintf(`{"fileId":%q,"pois":[%s]}`, file, pois)
}

func TestOutbox_ARejectedAnalysisIsListedAndRetriedAfterAFix(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	require.Equal(t, outbox.DrainResult{Published: 1}, sqlPublishAndDrain(t, db, oneFunctionFile("owner.py", "shared")))
	require.Equal(t, outbox.DrainResult{Rejected: 1}, sqlPublishAndDrain(t, db, oneFunctionFile("thief.py", "mine", "shared")))

	r := run(t, db, "", nil, "outbox", "status", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var st struct{ Queued, Rejected int }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	require.Equal(t, 0, st.Queued)
	require.Equal(t, 1, st.Rejected)

	r = run(t, db, "", nil, "status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "SQL publish queue (relay_publish): 0 queued")
	require.Contains(t, r.stdout, "rejected_analyses:    1")

	r = run(t, db, "", nil, "outbox", "rejected", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var list struct {
		Total    int
		Analyses []struct {
			ID       int64           `json:"id"`
			FileID   string          `json:"file_id"`
			POIID    string          `json:"poi_id"`
			Reason   string          `json:"reason"`
			Analysis json.RawMessage `json:"analysis"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Equal(t, 1, list.Total)
	got := list.Analyses[0]
	require.Equal(t, "thief.py", got.FileID)
	require.Equal(t, "shared", got.POIID)
	require.Contains(t, got.Reason, `already belongs to a POI of file "owner.py"`)
	require.JSONEq(t, oneFunctionFile("thief.py", "mine", "shared"), string(got.Analysis))
	r = run(t, db, "", nil, "outbox", "rejected")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "thief.py")
	require.Contains(t, r.stdout, "1 of 1 rejected analyses shown")

	// Before the fix: rejected again, kept, exit 1.
	r = run(t, db, "", nil, "outbox", "retry", "--all")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "0 published, 1 rejected again")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT attempts FROM rejected_analyses`))

	// The fix: owner.py no longer holds the id.
	require.Equal(t, outbox.DrainResult{Published: 1}, sqlPublishAndDrain(t, db, oneFunctionFile("owner.py", "own")))
	r = run(t, db, "", nil, "outbox", "retry", strconv.FormatInt(got.ID, 10), "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var retried struct {
		Counts map[string]int `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &retried))
	require.Equal(t, map[string]int{"published": 1}, retried.Counts)
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM rejected_analyses`))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE file_id = 'thief.py'`))

	r = run(t, db, "", nil, "outbox", "retry", "x1")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `"x1" is not the id of a rejected analysis`)
	r = run(t, db, "", nil, "outbox", "purge", "--all", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no such rejected analyses")
}

func TestOutbox_RetryLeavesASupersededAnalysisUnlessForced(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	require.Equal(t, outbox.DrainResult{Published: 1}, sqlPublishAndDrain(t, db, oneFunctionFile("owner.py", "shared")))
	require.Equal(t, outbox.DrainResult{Rejected: 1}, sqlPublishAndDrain(t, db, oneFunctionFile("late.py", "shared")))
	// late.py is published again, without the conflict, after the rejection.
	require.Equal(t, outbox.DrainResult{Published: 1}, sqlPublishAndDrain(t, db, oneFunctionFile("late.py", "newer")))
	r := run(t, db, "", nil, "outbox", "retry", "--all")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "0 published, 0 rejected again, 1 superseded")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE file_id = 'late.py' AND poi_id = 'newer'`))

	// A newer analysis of the file queued (not yet published) supersedes too.
	_, err := db.Pool.Exec(context.Background(), `SELECT relay_publish($1::jsonb)`, oneFunctionFile("late.py", "queued"))
	require.NoError(t, err)
	r = run(t, db, "", nil, "outbox", "retry", "--all", "--json")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, `"superseded": 1`)

	require.Equal(t, outbox.DrainResult{Published: 2}, sqlPublishAndDrain(t, db, oneFunctionFile("owner.py", "moved")))
	r = run(t, db, "", nil, "outbox", "retry", "--all", "--force")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE file_id = 'late.py' AND poi_id = 'shared'`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM rejected_analyses`))
}

func TestWorker_UntilIdlePublishesWhatTheSQLAPIQueued(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	_, err := db.Pool.Exec(context.Background(), `SELECT relay_publish_many($1::jsonb)`,
		`[{"fileId":"a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"a.js","lineNumber":1,"rawCode":"function a() { b(); }"}]},
		  {"fileId":"b.js","pois":[{"id":"b1","type":"function_definition","name":"b","filePath":"b.js","lineNumber":1,"rawCode":"function b() {}"}]}]`)
	require.NoError(t, err)
	r := run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM publish_queue`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'a1' AND target_poi_id = 'b1'`))
}
