//go:build citus

package cli_test

// The publish path on distributed tables: relay publish, the SQL API's
// queue and its drain, and the deletes of POIs (a re-publish that removes
// or moves them, relay repository delete), each compared with what the
// same steps write on plain PostgreSQL.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// distributed gives the test a Citus schema (citusDB) with relay's tables
// distributed by repository.
func distributed(t *testing.T) *testdb.DB {
	t.Helper()
	db := citusDB(t)
	r := run(t, db, "", nil, "migrate", "distribute")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	// failed_pois's counts triggers run on the shards' nodes, where their
	// tables are not: every write of failed_pois (a publish supersedes its
	// files' rows) fails with them. Dropped here as relay migrate distribute
	// drops them in the change that makes failed_pois's writers work on
	// Citus; IF EXISTS, so this stays right once it does.
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL citus.enable_unsafe_triggers = on`)
	require.NoError(t, err)
	for _, tr := range []string{"count_insert", "count_update", "count_delete", "count_truncate",
		"summary_insert", "summary_update", "summary_delete", "summary_truncate"} {
		_, err = tx.Exec(ctx, `DROP TRIGGER IF EXISTS failed_pois_`+tr+` ON failed_pois`)
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(ctx))
	return db
}

// rowsOf returns query's rows, each one text column, in order.
func rowsOf(t *testing.T, db *testdb.DB, query string) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), query)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// analysisJSON is an analysis of file in repo, its POIs given as id and the
// symbol each calls ("" none); each POI's symbol is "m/" + its id.
func analysisJSON(repo, file string, pois ...[2]string) map[string]any {
	ps := make([]map[string]any, len(pois))
	for i, p := range pois {
		ps[i] = map[string]any{"id": p[0], "type": "function_definition", "name": p[0], "filePath": file,
			"lineNumber": i + 1, "rawCode": "func " + p[0] + "() {}", "symbol": "m/" + p[0]}
		if p[1] != "" {
			ps[i]["references"] = []map[string]string{{"type": "CALLS", "symbol": p[1]}}
		}
	}
	return map[string]any{"repository": repo, "fileId": file, "pois": ps}
}

// publishPath runs the publish path's steps on db, the worker aside, and
// returns what they wrote: files, POIs, references, the queue.
//
//  1. relay publish of the demo's sample, then references as a worker
//     writes them: within the default repository, and from repository
//     acme/c into its POIs;
//  2. relay publish of math.js without two of its POIs, add moving to
//     util.js published with it;
//  3. relay_publish of a file of acme/x, relay_publish_many of files of
//     acme/y and acme/z (and of acme/x again), drained by the SQL API's
//     Drainer;
//  4. a relay_publish of acme/y's file without y1, drained.
func publishPath(t *testing.T, db *testdb.DB) map[string][]string {
	t.Helper()
	ctx := context.Background()
	r := run(t, db, "", nil, "publish", "demo_sample.jsonl")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	ref := func(repo, source, file, name, targetRepo, target, targetFile string) {
		t.Helper()
		_, err := db.Pool.Exec(ctx, `
			INSERT INTO poi_references (repository, source_poi_id, source_file_id, name, key, type,
			                            target_repository, target_poi_id, target_file_id)
			VALUES ($1, $2, $3, $4, $4, 'CALLS', $5, $6, $7)`, repo, source, file, name, targetRepo, target, targetFile)
		require.NoError(t, err)
	}
	ref("", "demo-math-mul", "demo/src/math.js", "add", "", "demo-math-add", "demo/src/math.js")
	ref("", "demo-math-square", "demo/src/math.js", "multiply", "", "demo-math-mul", "demo/src/math.js")
	ref("", "demo-shapes-square", "demo/src/shapes.js", "square", "", "demo-math-square", "demo/src/math.js")
	ref("acme/c", "c1", "c.go", "sym:add", "", "demo-math-add", "demo/src/math.js")
	ref("acme/c", "c1", "c.go", "sym:square", "", "demo-math-square", "demo/src/math.js")
	ref("acme/c", "c1", "c.go", "sym:multiply", "", "demo-math-mul", "demo/src/math.js")

	// math.js loses add (to util.js) and square.
	var lines []map[string]any
	raw, err := os.ReadFile("demo_sample.jsonl")
	require.NoError(t, err)
	for _, l := range slices.Collect(splitLines(raw)) {
		var a map[string]any
		require.NoError(t, json.Unmarshal(l, &a))
		if a["fileId"] == "demo/src/math.js" {
			lines = append(lines, a)
		}
	}
	require.Len(t, lines, 1)
	math := lines[0]
	var kept, moved []any
	for _, p := range math["pois"].([]any) {
		switch p.(map[string]any)["id"] {
		case "demo-math-add":
			p.(map[string]any)["filePath"] = "demo/src/util.js"
			moved = append(moved, p)
		case "demo-math-square":
		default:
			kept = append(kept, p)
		}
	}
	math["pois"] = kept
	util := map[string]any{"fileId": "demo/src/util.js", "pois": moved}
	var out []byte
	for _, a := range []any{math, util} {
		b, err := json.Marshal(a)
		require.NoError(t, err)
		out = append(append(out, b...), '\n')
	}
	republish := filepath.Join(t.TempDir(), "republish.jsonl")
	require.NoError(t, os.WriteFile(republish, out, 0o600))
	r = run(t, db, "", nil, "publish", republish)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	sqlPublish := func(fn string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		require.NoError(t, err)
		_, err = db.Pool.Exec(ctx, `SELECT `+fn+`($1::jsonb)`, string(b))
		require.NoError(t, err)
	}
	drain := func() {
		t.Helper()
		client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
		require.NoError(t, err)
		d := outbox.NewDrainer(db.Pool, outbox.New(client, nil, testdb.Logger(t)), outbox.DrainConfig{}, testdb.Logger(t))
		for {
			res, err := d.Drain(ctx)
			require.NoError(t, err)
			if res.Published+res.Rejected == 0 {
				break
			}
		}
		require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM publish_queue`))
	}
	sqlPublish("relay_publish", analysisJSON("acme/x", "x.go", [2]string{"x1", "m/y1"}, [2]string{"x2", "m/z1"}))
	sqlPublish("relay_publish_many", []any{
		analysisJSON("acme/y", "y.go", [2]string{"y1", ""}, [2]string{"y2", "m/x1"}),
		analysisJSON("acme/z", "z.go", [2]string{"z1", "m/y1"}),
		analysisJSON("acme/x", "x2.go", [2]string{"x3", ""}),
	})
	drain()
	ref("acme/x", "x1", "x.go", "sym:m/y1", "acme/y", "y1", "y.go")
	ref("acme/z", "z1", "z.go", "sym:m/y1", "acme/y", "y1", "y.go")
	ref("acme/y", "y2", "y.go", "sym:m/x1", "acme/x", "x1", "x.go")
	sqlPublish("relay_publish", analysisJSON("acme/y", "y.go", [2]string{"y2", "m/x1"}))
	drain()

	return map[string][]string{
		"files": rowsOf(t, db, `SELECT concat_ws(' ', repository, file_id, version, poi_count) FROM files ORDER BY 1`),
		"pois":  rowsOf(t, db, `SELECT concat_ws(' ', repository, poi_id, file_id, name, line_number) FROM pois ORDER BY 1`),
		"poi_references": rowsOf(t, db, `
			SELECT concat_ws(' ', repository, source_poi_id, type, name, '->', target_repository, target_poi_id, target_file_id)
			FROM poi_references ORDER BY 1`),
		"rejected_analyses": rowsOf(t, db, `SELECT concat_ws(' ', repository, file_id, reason) FROM rejected_analyses ORDER BY 1`),
	}
}

// splitLines yields data's non-empty lines.
func splitLines(data []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(data) > 0 {
			i := slices.Index(data, '\n')
			if i < 0 {
				i = len(data)
			}
			if line := data[:i]; len(line) > 0 && !yield(line) {
				return
			}
			data = data[min(i+1, len(data)):]
		}
	}
}

// The publish path writes on distributed tables exactly what it writes on
// plain PostgreSQL: each statement names one repository and runs on its
// node, the removed POIs lose their references, and every reference into
// them, of any repository, loses its target.
func TestCitusPublish_WritesWhatPlainPostgreSQLWrites(t *testing.T) {
	t.Parallel()
	want := publishPath(t, testdb.New(t))
	got := publishPath(t, distributed(t))
	require.Equal(t, want, got)

	// What the steps must have done, on both.
	require.Contains(t, got["pois"], " demo-math-add demo/src/util.js add 1", "add moved to util.js")
	for _, p := range got["pois"] {
		require.NotContains(t, p, "demo-math-square", "square was removed")
	}
	require.Equal(t, []string{
		" demo-shapes-square CALLS square -> ",
		"acme/c c1 CALLS sym:add -> ",
		"acme/c c1 CALLS sym:multiply ->  demo-math-mul demo/src/math.js",
		"acme/c c1 CALLS sym:square -> ",
		"acme/x x1 CALLS sym:m/y1 -> acme/y",
		"acme/z z1 CALLS sym:m/y1 -> acme/y",
	}, got["poi_references"], "the republished files' references went; the targets into removed POIs were cleared")
	require.Contains(t, got["files"], "acme/y y.go 2 1")
	require.Contains(t, got["files"], "acme/x x2.go 1 1")
}

// relay worker --until-idle drains the SQL API's queue on distributed
// tables, where a FOR UPDATE must name one repository, and returns.
func TestCitusWorker_UntilIdleReturnsOnceTheSQLAPIsQueueIsDrained(t *testing.T) {
	t.Parallel()
	db := distributed(t)
	ctx := context.Background()
	for _, q := range []struct{ fn, arg string }{
		{"relay_publish", mustJSON(t, analysisJSON("acme/x", "x.go", [2]string{"x1", "m/y1"}))},
		{"relay_publish_many", mustJSON(t, []any{
			analysisJSON("acme/y", "y.go", [2]string{"y1", ""}),
			analysisJSON("acme/z", "z.go", [2]string{"z1", "m/y1"}),
		})},
	} {
		_, err := db.Pool.Exec(ctx, `SELECT `+q.fn+`($1::jsonb)`, q.arg)
		require.NoError(t, err)
	}
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM publish_queue`))

	done := make(chan result, 1)
	go func() { done <- run(t, db, "", nil, "worker", "--until-idle") }()
	select {
	case r := <-done:
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	case <-time.After(3 * time.Minute):
		t.Fatal("relay worker --until-idle did not return")
	}
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM publish_queue`))
	require.Equal(t, []string{"acme/x x.go 1", "acme/y y.go 1", "acme/z z.go 1"},
		rowsOf(t, db, `SELECT concat_ws(' ', repository, file_id, version) FROM files ORDER BY 1`))
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// A repository delete on distributed tables deletes the repository's rows
// on its node and clears the targets of the other repositories' references
// into it, on theirs.
func TestCitusRepositoryDelete_ClearsOtherRepositoriesTargets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deleteOn := func(db *testdb.DB) (*repositories.Deleted, []string) {
		t.Helper()
		client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
		require.NoError(t, err)
		pub := outbox.New(client, nil, testdb.Logger(t))
		for _, a := range []map[string]any{
			analysisJSON("acme/a", "a.go", [2]string{"a1", "m/b1"}),
			analysisJSON("acme/b", "b.go", [2]string{"b1", ""}, [2]string{"b2", ""}),
			analysisJSON("acme/c", "c.go", [2]string{"c1", "m/b2"}),
		} {
			var an outbox.Analysis
			require.NoError(t, json.Unmarshal([]byte(mustJSON(t, a)), &an))
			require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
				_, err := pub.PublishTx(ctx, tx, an)
				return err
			}))
		}
		for _, q := range []string{
			`INSERT INTO poi_references (repository, source_poi_id, source_file_id, name, key, type, target_repository, target_poi_id, target_file_id)
			 VALUES ('acme/a', 'a1', 'a.go', 'sym:m/b1', 'sym:m/b1', 'CALLS', 'acme/b', 'b1', 'b.go')`,
			`INSERT INTO poi_references (repository, source_poi_id, source_file_id, name, key, type, target_repository, target_poi_id, target_file_id)
			 VALUES ('acme/c', 'c1', 'c.go', 'sym:m/b2', 'sym:m/b2', 'CALLS', 'acme/b', 'b2', 'b.go')`,
			`INSERT INTO poi_references (repository, source_poi_id, source_file_id, name, key, type, target_repository, target_poi_id, target_file_id)
			 VALUES ('acme/b', 'b2', 'b.go', 'sym:m/b1', 'sym:m/b1', 'CALLS', 'acme/b', 'b1', 'b.go')`,
		} {
			_, err := db.Pool.Exec(ctx, q)
			require.NoError(t, err)
		}
		d, err := repositories.New(db.Pool, client, testdb.Logger(t)).Delete(ctx, "acme/b", repositories.Options{Actor: "test"})
		require.NoError(t, err)
		return d, rowsOf(t, db, `
			SELECT concat_ws(' ', repository, source_poi_id, name, '->', target_repository, target_poi_id, target_file_id)
			FROM poi_references ORDER BY 1`)
	}
	wantDeleted, wantRefs := deleteOn(testdb.New(t))
	db := distributed(t)
	d, refs := deleteOn(db)
	require.Equal(t, []string{"acme/a a1 sym:m/b1 -> acme/b", "acme/c c1 sym:m/b2 -> acme/b"}, refs)
	require.Equal(t, wantRefs, refs)
	require.Equal(t, int64(2), d.ReferencesCleared)
	d.EventID, wantDeleted.EventID = 0, 0
	require.Equal(t, wantDeleted, d)
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE repository = 'acme/b'`))
	require.Positive(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue WHERE repository = 'acme/b' AND job_id = -publish_xid`),
		"the delete's link_queue rows")
}
