package failed_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
)

func TestListPage_KeysetPagesCoverEveryRowOnceInTimeOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 23, 3, 4)
	ctx := context.Background()
	for _, oldestFirst := range []bool{false, true} {
		var seen []int64
		var after *failed.Cursor
		for {
			page, err := b.store.ListPage(ctx, failed.Filter{}, failed.Page{After: after, Limit: 5, OldestFirst: oldestFirst})
			require.NoError(t, err)
			for _, r := range page.Rows {
				seen = append(seen, r.ID)
			}
			if page.Next == nil {
				break
			}
			after = page.Next
		}
		require.Len(t, seen, 23, "%v", seen)
		// seed's row i failed i minutes ago with id i: newest first is id
		// ascending.
		for i := 1; i < len(seen); i++ {
			require.Equal(t, seen[i-1] < seen[i], !oldestFirst, "order of %v", seen)
		}
	}
}

func TestFilter_SearchPOIIDAndIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 30, 3, 4) // messages "failure cause a".."failure cause d"
	b.exec(t, `UPDATE failed_pois SET error_message = 'odd 100% _under_ \x' WHERE poi_id = 'p7'`)
	ctx := context.Background()
	count := func(f failed.Filter) int {
		rows, err := b.store.List(ctx, f, 1000)
		require.NoError(t, err)
		return len(rows)
	}
	require.Equal(t, 8, count(failed.Filter{Search: "CAUSE B"}))
	require.Equal(t, 1, count(failed.Filter{Search: "100%"}), "% is literal")
	require.Equal(t, 1, count(failed.Filter{Search: "_under_"}), "_ is literal")
	require.Equal(t, 0, count(failed.Filter{Search: "c_use"}), "_ is no wildcard")
	require.Equal(t, 1, count(failed.Filter{Search: `\x`}), "a backslash is literal")
	require.Equal(t, 1, count(failed.Filter{POIID: "p12"}))
	require.Equal(t, 3, count(failed.Filter{IDs: []int64{1, 2, 3, 999}}))
	require.Error(t, failed.Filter{IDs: []int64{0}}.Validate())
	require.Error(t, failed.Filter{Search: string(make([]byte, failed.MaxSearchLen+1))}.Validate())
}

func TestEvents_NameTheRowsIgnoresAndReprocessOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 3, 1, 1)
	ctx := context.Background()
	_, err := b.store.Ignore(ctx, []int64{1}, "flaky", "ui:alice")
	require.NoError(t, err)
	_, err = b.store.Ignore(ctx, []int64{2}, "other", "ui:bob")
	require.NoError(t, err)
	in, err := b.store.Get(ctx, 1)
	require.NoError(t, err)
	events, err := b.store.Events(ctx, in, 10)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "ui:alice", events[0].Actor)
	require.Equal(t, failed.ActionIgnore, events[0].Action)
	require.JSONEq(t, `{"ids":[1],"reason":"flaky"}`, string(events[0].Details))
}

func TestListPage_BoundedSearchReadsAtMostMaxScanRowsAndContinues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, 40, 3, 4) // row i: "failure cause <a+i%4>", i minutes ago
	ctx := context.Background()
	var found []int64
	var after *failed.Cursor
	pages := 0
	for {
		pages++
		require.Less(t, pages, 20)
		page, err := b.store.ListPage(ctx, failed.Filter{Search: "cause c"}, failed.Page{After: after, Limit: 3, MaxScan: 7})
		require.NoError(t, err)
		require.LessOrEqual(t, page.Scanned, int64(7))
		for _, r := range page.Rows {
			require.Equal(t, "failure cause c", r.ErrorMessage)
			found = append(found, r.ID)
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	require.Equal(t, []int64{2, 6, 10, 14, 18, 22, 26, 30, 34, 38}, found)
	page, err := b.store.ListPage(ctx, failed.Filter{Search: "nowhere"}, failed.Page{Limit: 3, MaxScan: 7})
	require.NoError(t, err)
	require.Empty(t, page.Rows)
	require.EqualValues(t, 7, page.Scanned)
	require.Equal(t, int64(7), page.Next.ID, "the next page continues after the last row read")
}
