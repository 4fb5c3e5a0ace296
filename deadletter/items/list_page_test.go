package items_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestItemStore_ListPageAndEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := items.NewStore(db.Pool, testdb.Logger(t))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		addItem(t, store, db, failedItem("job-a", fmt.Sprintf("i%02d", i), t0.Add(time.Duration(i)*time.Minute), 1), 100)
	}
	var seen []string
	var after *items.Cursor
	for {
		page, err := store.ListPage(ctx, items.Filter{JobID: "job-a"}, after, 3)
		require.NoError(t, err)
		for _, it := range page {
			seen = append(seen, it.ItemID)
		}
		if len(page) < 3 {
			break
		}
		c := page[len(page)-1].Cursor()
		after = &c
	}
	require.Equal(t, []string{"i06", "i05", "i04", "i03", "i02", "i01", "i00"}, seen)

	it, err := store.Get(ctx, "job-a", "i03")
	require.NoError(t, err)
	page, err := store.ListPage(ctx, items.Filter{Signature: it.ErrorSignature, ErrorType: it.ErrorType}, nil, 10)
	require.NoError(t, err)
	require.Len(t, page, 1, "each item's message names it, so each has its own signature")

	events, err := store.Events(ctx, "job-a", "i03", 10)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, items.EventItemAdded, events[0].Action)
	require.Equal(t, "test", events[0].Actor)
}
