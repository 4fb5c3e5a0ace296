package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// A backend service that has analysed a file publishes its POIs in its own
// transaction: the POIs and the file's one resolve_file job commit or roll
// back with the service's own writes.
func ExamplePublisher_PublishTx() {
	ctx := context.Background()
	db, done := testdb.ForExample()
	defer done()

	// An insert-only River client: workers run elsewhere (relay worker).
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	if err != nil {
		panic(err)
	}
	pub := outbox.New(client, nil, slog.New(slog.DiscardHandler))

	analysis := outbox.Analysis{FileID: "src/cart.js", POIs: []json.RawMessage{
		json.RawMessage(`{"id": "cart.add", "type": "function_definition", "name": "add", "lineNumber": 3,
			"rawCode": "function add(item) { return total(item); }"}`),
		json.RawMessage(`{"id": "cart.total", "type": "function_definition", "name": "total", "lineNumber": 7,
			"rawCode": "function total(item) { return item.price; }"}`),
	}}
	var res *outbox.Result
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		// ... the service's own writes in tx ...
		res, err = pub.PublishTx(ctx, tx, analysis)
		return err
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: version %d, %d POIs, %d symbols, %d job\n", res.FileID, res.Version, res.POIs, res.Symbols, len(res.JobIDs))

	// A POI that contradicts its analysis rejects the whole analysis with
	// an error naming the file and the POI, and nothing is written. (A POI
	// that is merely invalid, say without a type, is published and
	// dead-lettered into failed_pois by the worker.)
	bad := outbox.Analysis{FileID: "src/bad.js", POIs: []json.RawMessage{
		json.RawMessage(`{"id": "b1", "type": "function_definition", "name": "b", "filePath": "src/other.js", "lineNumber": 1}`),
	}}
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishTx(ctx, tx, bad)
		return err
	})
	fmt.Println(err)
	// Output:
	// src/cart.js: version 1, 2 POIs, 2 symbols, 1 job
	// poi "b1" (file "src/bad.js"): filePath "src/other.js" does not match the analysis fileId "src/bad.js"
}

// PublishManyTx publishes several files with the same few statements
// PublishTx uses for one; each file still gets exactly one job.
func ExamplePublisher_PublishManyTx() {
	ctx := context.Background()
	db, done := testdb.ForExample()
	defer done()
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	if err != nil {
		panic(err)
	}
	pub := outbox.New(client, nil, slog.New(slog.DiscardHandler))

	var files []outbox.Analysis
	for i := range 3 {
		files = append(files, outbox.Analysis{FileID: fmt.Sprintf("pkg/f%d.go", i), POIs: []json.RawMessage{
			json.RawMessage(fmt.Sprintf(`{"id": "f%d", "type": "function_definition", "name": "F%d", "lineNumber": 1}`, i, i)),
		}})
	}
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		results, err := pub.PublishManyTx(ctx, tx, files)
		for _, r := range results {
			fmt.Printf("%s: %d job\n", r.FileID, len(r.JobIDs))
		}
		return err
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// pkg/f0.go: 1 job
	// pkg/f1.go: 1 job
	// pkg/f2.go: 1 job
}
