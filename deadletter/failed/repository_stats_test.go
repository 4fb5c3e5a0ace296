package failed_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
)

// RepositoryStats counts one repository's rows as Stats counts them all;
// Stats is unchanged by repositories.
func TestRepositoryStats_CountsOneRepositorysRowsAsStatsCountsAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.seed(t, 60, 4, 3)
	// A third of the rows move to repository alpha, with a class, a status
	// and manual review of their own, and the oldest failure.
	b.exec(t, `UPDATE failed_pois SET repository = 'alpha' WHERE id % 3 = 0`)
	b.exec(t, `UPDATE failed_pois SET error_class = 'panic', failed_at = now() - interval '30 days' WHERE id = 3`)
	b.exec(t, `UPDATE failed_pois SET manual_review_required = true WHERE id IN (6, 7)`)
	_, err := b.store.Ignore(ctx, []int64{9, 15}, "noise", "tester")
	require.NoError(t, err)
	// A row in reprocessing whose job does not exist is stuck.
	b.exec(t, `UPDATE failed_pois SET status = 'reprocessing', reprocess_job_id = 999999 WHERE id IN (12, 13)`)

	counts := func(repo string) (map[failed.Status]int64, map[failed.ErrorClass]int64, int64) {
		return groups(t, b, &repo)
	}

	alpha, err := b.store.RepositoryStats(ctx, "alpha")
	require.NoError(t, err)
	def, err := b.store.RepositoryStats(ctx, "")
	require.NoError(t, err)
	all, err := b.store.Stats(ctx)
	require.NoError(t, err)

	status, class, total := counts("alpha")
	require.Equal(t, int64(20), total)
	require.Equal(t, total, alpha.Total)
	require.Equal(t, status, alpha.Status)
	require.Equal(t, class, alpha.Class)
	require.Equal(t, int64(1), alpha.Class[failed.ErrorClass("panic")])
	require.Equal(t, int64(2), alpha.Status[failed.StatusIgnored])
	require.Equal(t, int64(1), alpha.Manual, "row 6 (row 7 is the default repository's)")
	require.Equal(t, int64(1), alpha.Stuck, "row 12")
	require.Equal(t, "alpha", *alpha.Repository)

	status, class, total = counts("")
	require.Equal(t, int64(40), total)
	require.Equal(t, total, def.Total)
	require.Equal(t, status, def.Status)
	require.Equal(t, class, def.Class)
	require.Equal(t, int64(1), def.Manual)
	require.Equal(t, int64(1), def.Stuck, "row 13")
	require.Equal(t, "", *def.Repository)

	// Every row: the counts table's answer, and the two repositories'
	// sums.
	require.Nil(t, all.Repository)
	require.Equal(t, alpha.Total+def.Total, all.Total)
	for _, s := range failed.Statuses() {
		require.Equal(t, alpha.Status[s]+def.Status[s], all.Status[s], s)
	}
	require.Equal(t, alpha.Manual+def.Manual, all.Manual)
	require.Equal(t, alpha.Stuck+def.Stuck, all.Stuck)
	require.Equal(t, alpha.Oldest, all.Oldest, "row 3, alpha's, is the oldest failure")
	require.True(t, def.Oldest.After(alpha.Oldest))
	require.Equal(t, all.Newest, maxTime(alpha.Newest, def.Newest))

	// A repository without rows has zero counts and no times.
	none, err := b.store.RepositoryStats(ctx, "none")
	require.NoError(t, err)
	require.Zero(t, none.Total)
	require.Len(t, none.Status, len(failed.Statuses()))
	require.True(t, none.Oldest.IsZero())
	require.True(t, none.OldNew.IsZero())
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// A file or POI id without a repository selects that file's or POI's rows
// in every repository (the filter probes each repository's index entries).
func TestFilter_FileAndPOIIDWithoutARepositoryMatchEveryRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.seed(t, 60, 4, 3) // files f0-f3, POIs p1-p60
	b.exec(t, `UPDATE failed_pois SET repository = CASE WHEN id % 3 = 0 THEN 'alpha' WHEN id % 3 = 1 THEN 'beta' ELSE '' END`)
	b.exec(t, `UPDATE failed_pois SET poi_id = 'shared' WHERE id IN (1, 2, 3)`)

	want := func(cond string) []int64 {
		rows, err := b.db.Pool.Query(ctx, `SELECT id FROM failed_pois WHERE `+cond+` ORDER BY id`)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return ids
	}
	ids := func(f failed.Filter) []int64 {
		recs, err := b.store.List(ctx, f, 1000)
		require.NoError(t, err)
		out := make([]int64, len(recs))
		for i, r := range recs {
			out[i] = r.ID
		}
		slices.Sort(out)
		return out
	}
	byFile := want(`file_id = 'f1'`)
	require.Len(t, byFile, 15)
	require.Equal(t, byFile, ids(failed.Filter{FileID: "f1"}))
	require.Equal(t, []int64{1, 2, 3}, ids(failed.Filter{POIID: "shared"}))
	alpha := "alpha"
	require.Equal(t, []int64{3}, ids(failed.Filter{POIID: "shared", Repository: &alpha}))
	require.Empty(t, ids(failed.Filter{FileID: "f9"}))
}
