package failed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/failed"
)

// groups counts failed_pois by status and class the slow way, for
// comparison with Stats, which reads failed_pois_counts.
func groups(t *testing.T, b *bundle, repository *string) (map[failed.Status]int64, map[failed.ErrorClass]int64, int64) {
	t.Helper()
	status, class := map[failed.Status]int64{}, map[failed.ErrorClass]int64{}
	for _, s := range failed.Statuses() {
		status[s] = 0
	}
	for _, c := range failed.Classes() {
		class[c] = 0
	}
	rows, err := b.db.Pool.Query(context.Background(), `
		SELECT status, error_class, count(*) FROM failed_pois WHERE $1::text IS NULL OR repository = $1 GROUP BY 1, 2`, repository)
	require.NoError(t, err)
	var total int64
	for rows.Next() {
		var s, c string
		var n int64
		require.NoError(t, rows.Scan(&s, &c, &n))
		status[failed.Status(s)] += n
		class[failed.ErrorClass(c)] += n
		total += n
	}
	require.NoError(t, rows.Err())
	return status, class, total
}

func requireStatsMatch(t *testing.T, b *bundle, when string) {
	t.Helper()
	st, err := b.store.Stats(context.Background())
	require.NoError(t, err)
	status, class, total := groups(t, b, nil)
	require.Equal(t, total, st.Total, when)
	require.Equal(t, status, st.Status, when)
	require.Equal(t, class, st.Class, when)
	// Each repository's, from the counts per repository; one with no rows
	// counts none.
	for _, repo := range []string{"", "acme/b", "acme/none"} {
		st, err := b.store.RepositoryStats(context.Background(), repo)
		require.NoError(t, err)
		status, class, total := groups(t, b, &repo)
		require.Equal(t, total, st.Total, "%s: repository %q", when, repo)
		require.Equal(t, status, st.Status, "%s: repository %q", when, repo)
		require.Equal(t, class, st.Class, "%s: repository %q", when, repo)
	}
	requireAnalysisMatch(t, b, when)
}

// requireAnalysisMatch compares Analyze answered from the counts per
// signature and per hour with Analyze reading the rows (a filter from the
// epoch on, which selects every row but makes Analyze read them).
func requireAnalysisMatch(t *testing.T, b *bundle, when string) {
	t.Helper()
	ctx := context.Background()
	for _, st := range append([]failed.Status{""}, failed.Statuses()...) {
		counted, err := b.store.Analyze(ctx, failed.Filter{Status: st}, 3)
		require.NoError(t, err)
		read, err := b.store.Analyze(ctx, failed.Filter{Status: st, Since: time.Unix(0, 0)}, 3)
		require.NoError(t, err)
		require.Equal(t, read.Total, counted.Total, "%s: status %q: total", when, st)
		require.Equal(t, read.OtherGroups, counted.OtherGroups, "%s: status %q: other groups", when, st)
		require.Equal(t, read.Groups, counted.Groups, "%s: status %q: groups", when, st)
		require.Equal(t, read.Hourly, counted.Hourly, "%s: status %q: per hour", when, st)
	}
}

// Stats reads the counts the triggers keep; they must follow every kind of
// write to failed_pois, compaction and truncation, including writers that
// run at once.
func TestStats_CountsFollowEveryWriteToFailedPOIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	b.seed(t, 300, 7, 5)
	b.exec(t, `UPDATE failed_pois SET repository = 'acme/b' WHERE id % 4 = 0`)
	b.exec(t, `UPDATE failed_pois SET error_class = 'timeout' WHERE id % 3 = 0`)
	b.exec(t, `UPDATE failed_pois SET failed_at = failed_at - interval '3 hours', error_signature = 'moved' WHERE id % 5 = 0`)
	requireStatsMatch(t, b, "after inserts, a move to another repository, a class change and a move in time and signature")

	_, err := b.store.Ignore(ctx, []int64{1, 2, 3, 4}, "noise", "tester")
	require.NoError(t, err)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew, FileID: "f1"}})
	b.exec(t, `UPDATE failed_pois SET attempts = attempts + 1`) // no status or class change: no delta
	requireStatsMatch(t, b, "after ignore, reprocess and an update that changes no group")

	b.publish(t, "f5") // supersedes f5's rows of the default repository
	require.Positive(t, b.count(t, `SELECT count(*) FROM failed_pois WHERE status = 'superseded'`))
	requireStatsMatch(t, b, "after a publish superseded a file's rows")

	b.exec(t, `UPDATE failed_pois SET updated_at = now() - interval '2 days' WHERE status = 'ignored'`)
	n, err := b.store.Purge(ctx, failed.PurgeFilter{Status: failed.StatusIgnored, OlderThan: 24 * time.Hour}, "tester")
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	requireStatsMatch(t, b, "after a purge")

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				_, err := b.db.Pool.Exec(ctx, `
					INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, error_message, error_class,
					                         error_signature, original_poi_data)
					VALUES ($1, 'fc', $3, $2, 'm', 'panic', 's', '{}')`, 900_000+w, i, fmt.Sprintf("pc%d.%d", w, i))
				if err == nil && i%3 == 0 {
					_, err = deadletter.CompactCounts(ctx, b.db.Pool)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireStatsMatch(t, b, "after concurrent inserts and compactions")

	folded, err := deadletter.CompactCounts(ctx, b.db.Pool)
	require.NoError(t, err)
	require.Positive(t, folded)
	requireStatsMatch(t, b, "after compaction")
	require.LessOrEqual(t, b.count(t, `SELECT count(*) FROM failed_pois_counts`), 2*len(failed.Statuses())*len(failed.Classes()),
		"one row per group after compaction")

	b.exec(t, `TRUNCATE failed_pois`)
	requireStatsMatch(t, b, "after a truncate")
	require.Zero(t, b.count(t, `SELECT count(*) FROM failed_pois_counts`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM failed_pois_signature_counts`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM failed_pois_hourly_counts`))
}
