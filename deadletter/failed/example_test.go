package failed_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/testdb"
)

// Reprocessing re-enqueues failed POIs by status (what `relay reprocess
// --status new` does): one resolve_file job per file, each row marked
// reprocessing until its job reports back.
func ExampleReprocessor_Run() {
	ctx := context.Background()
	db, done := testdb.ForExample()
	defer done()

	// Three POIs of two files that a worker dead-lettered.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO files (file_id) VALUES ('src/a.js'), ('src/b.js');
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, error_message, error_class,
		                         error_signature, original_poi_data)
		VALUES (1, 'src/a.js', 'a1', 0, 'boom', 'resolver', 'boom', '{"id": "a1"}'),
		       (1, 'src/a.js', 'a2', 1, 'boom', 'resolver', 'boom', '{"id": "a2"}'),
		       (2, 'src/b.js', 'b1', 0, 'boom', 'resolver', 'boom', '{"id": "b1"}')`); err != nil {
		panic(err)
	}

	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	if err != nil {
		panic(err)
	}
	r := failed.NewReprocessor(db.Pool, client, nil, slog.New(slog.DiscardHandler))
	sel := failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}

	plan, err := r.Plan(ctx, sel, 10)
	if err != nil {
		panic(err)
	}
	fmt.Printf("plan: %d rows of %d files\n", plan.Rows, plan.Files)

	res, err := r.Run(ctx, sel, "example", nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("enqueued %d rows in %d jobs\n", res.Rows, res.Jobs)

	var reprocessing int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing'`).Scan(&reprocessing); err != nil {
		panic(err)
	}
	fmt.Println("rows in reprocessing:", reprocessing)

	// A second run finds nothing left in new.
	res, err = r.Run(ctx, sel, "example", nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("enqueued %d rows\n", res.Rows)
	// Output:
	// plan: 3 rows of 2 files
	// enqueued 3 rows in 2 jobs
	// rows in reprocessing: 3
	// enqueued 0 rows
}
