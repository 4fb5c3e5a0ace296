package cli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestReprocess_CommandEndToEnd(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := strings.Join([]string{
		`{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1,"rawCode":"function a() {}"}]}`,
		`{"fileId":"src/b.js","pois":[{"id":"b1","type":"function_definition","name":"b","filePath":"src/b.js","lineNumber":"one","rawCode":"function b() { a(); }"}]}`,
	}, "\n")
	r := run(t, db, input, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'new'`))

	// Usage errors.
	for _, args := range [][]string{
		{"reprocess", "--yes"},
		{"reprocess", "--status", "done"},
		{"reprocess", "--status", "new", "--error-class", "flaky"},
		{"reprocess", "--status", "new", "--rate", "fast"},
		{"reprocess", "--status", "new", "--since", "yesterday"},
		{"reprocess", "--status", "new", "--since", "1h", "--until", "2h"},
	} {
		r := run(t, db, "", nil, args...)
		require.Equal(t, cli.ExitUsage, r.code, "args %q: %s", args, r.stderr)
	}

	// Fix the row with SQL, then look before leaping.
	_, err := db.Pool.Exec(t.Context(), `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '1')`)
	require.NoError(t, err)
	r = run(t, db, "", nil, "reprocess", "--status", "new", "--dry-run")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "would reprocess 1 rows of 1 files (about 1 resolve_file jobs), 1 signatures")
	require.Regexp(t, `(?m)^1 +src/b\.js$`, r.stdout)
	require.Contains(t, r.stdout, "dry run: nothing changed")
	r = run(t, db, "", nil, "reprocess", "--status", "new", "--dry-run", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var plan struct {
		Rows   int `json:"rows"`
		ByFile []struct {
			Key   string `json:"key"`
			Count int    `json:"count"`
		} `json:"by_file"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
	require.Equal(t, 1, plan.Rows)
	require.Equal(t, "src/b.js", plan.ByFile[0].Key)

	r = runOnTerminal(t, db, "no\n", "reprocess", "--status", "new")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "Reprocess 1 rows of 1 files? [y/N]")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status <> 'new'`))

	// "y" piped in is not a person answering: without a terminal, --yes.
	r = run(t, db, "y\n", nil, "reprocess", "--status", "new")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "standard input is not a terminal, so nothing was changed: run it again with --yes")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status <> 'new'`))

	r = runOnTerminal(t, db, "y\n", "reprocess", "--status", "new", "--rate", "100/s", "--actor", "carol")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `reprocess enqueued 1 rows in 1 resolve_file jobs \(1 chunks, \S+, audit event \d+\)`, r.stdout)
	require.Contains(t, r.stderr, "reprocess: 1/1 rows, 1 jobs")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess' AND actor = 'carol' AND item_count = 1`))

	r = run(t, db, "", nil, "reprocess", "--status", "new", "--yes", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"rows": 0`, "the second run enqueues nothing")

	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "failed", "list", "--status", "reprocessed")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^1 +\S+ +reprocessed +1 +validation +src/b\.js +b1 `, r.stdout)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'b1' AND target_poi_id = 'a1'`))
}

// Issue 37, defect 5: a reprocess never recreates a deleted repository.
// `relay repository delete` keeps the repository's failed_pois rows; a
// corrected row reprocessed afterwards brings back neither its file nor its
// POI: the row is closed as superseded, and inspect and stats say so.
func TestReprocess_DoesNotRecreateADeletedRepository(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, repositoryAnalyses, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "repository", "delete", "acme/c", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/c' AND status = 'new'`),
		"the delete keeps the failed POIs")

	// The operator corrects the row, then reprocesses every new row.
	_, err := db.Pool.Exec(t.Context(), `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{references}', '[]')
		WHERE repository = 'acme/c'`)
	require.NoError(t, err)
	r = run(t, db, "", nil, "reprocess", "--status", "new", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	for _, table := range []string{"files", "pois"} {
		require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM `+table+` WHERE repository = 'acme/c'`),
			"the reprocess brought back the deleted repository's %s", table)
	}
	var id int64
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT id FROM failed_pois WHERE repository = 'acme/c'`).Scan(&id))
	r = run(t, db, "", nil, "failed", "inspect", strconv.FormatInt(id, 10))
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^status +superseded$`, r.stdout)
	require.Regexp(t, `(?m)^superseded reason +repository "acme/c" was deleted: reprocessing would recreate it$`, r.stdout)
	r = run(t, db, "", nil, "failed", "stats")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "superseded:         1")
	r = run(t, db, "", nil, "failed", "stats", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"superseded": 1`)
	r = run(t, db, "", nil, "reprocess", "--status", "superseded", "--yes")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
}
