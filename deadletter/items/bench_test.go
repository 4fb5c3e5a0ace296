package items_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relay-dev/relay/internal/testdb"
)

// BenchmarkItemStore_AddTx measures the dead-letter write for one failed
// MapReduce item (upsert with history, item_added event, capacity check, in
// its own transaction) into a job whose DLQ already holds `existing` items.
// The target is under 5 ms per item.
func BenchmarkItemStore_AddTx(b *testing.B) {
	for _, existing := range []int{0, 1_000, 10_000} {
		b.Run(fmt.Sprintf("existing=%d", existing), func(b *testing.B) {
			ctx := context.Background()
			db := testdb.New(b)
			store := newBenchStore(b, db)
			t0 := time.Now().Add(-time.Hour)
			if existing > 0 {
				if _, err := db.Pool.Exec(ctx, `
					INSERT INTO dead_lettered_items (job_id, item_id, item_data, first_attempt, last_attempt, failure_count, failure_history)
					SELECT 'bench', 'seed-' || g, '{}', now() - interval '2 hours', now(), 4, '[]' FROM generate_series(1, $1) g`, existing); err != nil {
					b.Fatal(err)
				}
				// As after autovacuum in a running system: the one-statement
				// seed left a long chain of dead versions of the job's count row.
				if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE dead_lettered_items, dead_lettered_items_counts`); err != nil {
					b.Fatal(err)
				}
			}
			maxItems := existing + b.N + 10 // measure the write, not eviction
			b.ResetTimer()
			for i := range b.N {
				addItem(b, store, db, failedItem("bench", fmt.Sprintf("item-%d", i), t0, 4), maxItems)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/item")
		})
	}
}
