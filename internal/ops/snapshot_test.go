package ops_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/testdb"
)

// A repository's snapshot and activity count its failed POIs and rejected
// analyses only; River's jobs stay every repository's.
func TestRepositorySnapshotAndActivity_CountOneRepositorysDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := db.Pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	// alpha: 3 new rows of signature "alpha cause", failed in the last
	// minutes, one ignored; the default repository: 5 new rows of "default
	// cause", failed two hours ago.
	exec(`INSERT INTO failed_pois (repository, original_job_id, file_id, poi_id, poi_index, failed_at, error_message,
		                           error_class, error_signature, error_history, original_poi_data, status)
		SELECT 'alpha', 1, 'f', 'a' || i, i, now() - make_interval(mins => i), 'alpha cause', 'panic', 'alpha cause', '[]'::jsonb, '{}'::jsonb,
		       CASE WHEN i = 4 THEN 'ignored' ELSE 'new' END
		FROM generate_series(1, 4) AS i
		UNION ALL
		SELECT '', 1, 'f', 'd' || i, i, now() - interval '2 hours', 'default cause', 'validation', 'default cause', '[]', '{}', 'new'
		FROM generate_series(1, 5) AS i`)
	exec(`INSERT INTO rejected_analyses (repository, file_id, analysis, reason, file_version, queued_at)
		VALUES ('alpha', 'r1', '{}', 'bad', 0, now()), ('', 'r2', '{}', 'bad', 0, now()), ('', 'r3', '{}', 'bad', 0, now())`)
	exec(`INSERT INTO river_job (kind, args, queue, state, max_attempts) VALUES ('resolve_file', '{}', 'resolve', 'available', 1)`)

	all, err := ops.Snapshot(ctx, db.Pool)
	require.NoError(t, err)
	require.Nil(t, all.Repository)
	require.Equal(t, int64(8), all.FailedPOIs["new"])
	require.Equal(t, int64(1), all.FailedPOIs["ignored"])
	require.Equal(t, int64(3), all.PublishQueue.Rejected)

	alpha, err := ops.RepositorySnapshot(ctx, db.Pool, "alpha")
	require.NoError(t, err)
	require.Equal(t, "alpha", *alpha.Repository)
	require.Equal(t, map[string]int64{"new": 3, "reprocessing": 0, "reprocessed": 0, "ignored": 1, "superseded": 0}, alpha.FailedPOIs)
	require.Equal(t, int64(1), alpha.PublishQueue.Rejected)
	require.Equal(t, all.Jobs, alpha.Jobs, "River's jobs are every repository's")
	require.Equal(t, int64(1), alpha.QueueDepth("resolve"))
	require.Len(t, alpha.DeadLetteredItems, 4)

	def, err := ops.RepositorySnapshot(ctx, db.Pool, "")
	require.NoError(t, err)
	require.Equal(t, int64(5), def.FailedPOIs["new"])
	require.Equal(t, int64(2), def.PublishQueue.Rejected)
	require.True(t, def.OldestNewFailedPOI.Before(*alpha.OldestNewFailedPOI))
	require.Equal(t, *all.OldestNewFailedPOI, *def.OldestNewFailedPOI)

	none, err := ops.RepositorySnapshot(ctx, db.Pool, "none")
	require.NoError(t, err)
	require.Zero(t, none.FailedPOIs["new"])
	require.Nil(t, none.OldestNewFailedPOI)

	sum := func(hours []deadletter.HourCount) (n int64) {
		for _, h := range hours {
			n += h.Count
		}
		return n
	}
	failedPerMinute := func(act *ops.Activity) (n int64) {
		for _, m := range act.PerMinute {
			n += m.POIsFailed
		}
		return n
	}
	act, err := ops.RecentActivity(ctx, db.Pool, 10, 5)
	require.NoError(t, err)
	require.Nil(t, act.Repository)
	require.Len(t, act.TopSignatures, 2)
	require.Equal(t, int64(9), sum(act.FailuresPerHour))

	alphaAct, err := ops.RepositoryActivity(ctx, db.Pool, "alpha", 10, 5)
	require.NoError(t, err)
	require.Equal(t, "alpha", *alphaAct.Repository)
	require.Equal(t, []ops.SignatureCount{{Signature: "alpha cause", ErrorClass: "panic", Count: 3}}, alphaAct.TopSignatures,
		"new rows only")
	require.Equal(t, int64(4), sum(alphaAct.FailuresPerHour), "every status")
	require.Len(t, alphaAct.FailuresPerHour, 24)
	require.Equal(t, int64(4), failedPerMinute(alphaAct))
	require.Equal(t, act.Freshness, alphaAct.Freshness)

	defAct, err := ops.RepositoryActivity(ctx, db.Pool, "", 10, 5)
	require.NoError(t, err)
	require.Equal(t, []ops.SignatureCount{{Signature: "default cause", ErrorClass: "validation", Count: 5}}, defAct.TopSignatures)
	require.Equal(t, int64(5), sum(defAct.FailuresPerHour))
	require.Zero(t, failedPerMinute(defAct), "two hours ago is outside the last 10 minutes")
	// Per hour, the rows counted and the counts table agree.
	for i := range act.FailuresPerHour {
		require.Equal(t, act.FailuresPerHour[i].Count, alphaAct.FailuresPerHour[i].Count+defAct.FailuresPerHour[i].Count,
			act.FailuresPerHour[i].Hour)
	}
}
