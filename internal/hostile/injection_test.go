package hostile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// injections are SQL injection attempts: if any filter were spliced into
// SQL, one of them would widen the match to every row, fail with a syntax
// error, or drop a table.
var injections = []string{
	`' OR '1'='1`,
	`x' OR 1=1 --`,
	`'; DROP TABLE failed_pois; --`,
	`h/inj.js' OR file_id LIKE '%`,
	`%`,
	`_`,
	`") OR ("1"="1`,
	`$1`,
	`\'; DELETE FROM failed_pois; --`,
	`1; UPDATE failed_pois SET status = 'ignored'`,
	`' UNION SELECT * FROM pois --`,
	`$$; DROP TABLE files; $$`,
}

// TestInjection_FiltersAreParameters sends SQL injection attempts through
// every operator filter that reaches SQL and requires that each matches
// nothing, changes nothing and raises no SQL error, while the honest filter
// finds the rows.
func TestInjection_FiltersAreParameters(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := `{"fileId":"h/inj.js","pois":[{"id":"bad1","type":"function_definition","name":"a","lineNumber":"x"},` +
		`{"id":"bad2","type":"function_definition","name":"b","lineNumber":-1},{"id":"ok1","type":"function_definition","name":"c","lineNumber":1}]}`
	require.Equal(t, cli.ExitOK, relay(t, db, []byte(input), "publish", "-").code)
	require.Equal(t, cli.ExitOK, relay(t, db, nil, "worker", "--until-idle").code)
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`))

	var signature string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT error_signature FROM failed_pois WHERE poi_id = 'bad1'`).Scan(&signature))

	// The honest filters find the rows, so a miss below means something.
	r := relay(t, db, nil, "failed", "list", "--file-id", "h/inj.js")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "bad1")
	r = relay(t, db, nil, "failed", "list", "--signature", signature)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "bad1")
	r = relay(t, db, nil, "reprocess", "--status", "new", "--file-id", "h/inj.js", "--dry-run")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "would reprocess 2 rows")

	state := func() string {
		var s string
		require.NoError(t, db.Pool.QueryRow(t.Context(), `
			SELECT string_agg(poi_id || ':' || status || ':' || attempts, ',' ORDER BY poi_id) FROM failed_pois`).Scan(&s))
		return s
	}
	before := state()
	for _, inj := range injections {
		for _, args := range [][]string{
			{"failed", "list", "--signature", inj},
			{"failed", "list", "--file-id", inj},
			{"failed", "list", "--signature", signature + inj},
			{"failed", "list", "--file-id", "h/inj.js" + inj},
			{"reprocess", "--status", "new", "--file-id", inj, "--dry-run"},
			{"reprocess", "--status", "new", "--file-id", inj, "--yes"},
			{"reprocess", "--status", "new", "--signature", inj, "--yes"},
		} {
			r := relay(t, db, nil, args...)
			out := r.stdout + r.stderr
			require.NotEqual(t, cli.ExitRuntime, r.code, "%q: %s", args, out)
			require.NotContains(t, r.stdout, "bad1", "%q matched rows", args)
			require.NotContains(t, strings.ToLower(out), "syntax error", "%q reached SQL as text", args)
			require.NotContains(t, out, "SQLSTATE", "%q", args)
		}
	}
	require.Equal(t, before, state(), "an injection changed failed_pois")
	for _, table := range []string{"failed_pois", "files", "pois"} {
		require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = $2`, db.Schema, table))
	}
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))
}

// TestInjection_DLQFilterIsAJSONPathParameter sends the same attempts, and
// JSONPath-shaped ones, through `relay dlq retry --filter` and `--job-id`:
// each is refused as a bad JSONPath or matches nothing, and the
// dead-lettered items and the tables are untouched.
func TestInjection_DLQFilterIsAJSONPathParameter(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(agent, []byte("#!/bin/sh\ncat >/dev/null\necho 'upstream down' >&2\nexit 3\n"), 0o755))
	input := filepath.Join(dir, "items.ndjson")
	require.NoError(t, os.WriteFile(input, []byte(`{"id":"a"}`+"\n"+`{"id":"b"}`+"\n"), 0o600))
	env := []string{"--mapreduce-workdir", t.TempDir()}
	if os.Geteuid() == 0 {
		// relay runs no agent as root: it runs this one as nobody, who must
		// reach the script and the workdir.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		env = append(env, "--agent-user", "nobody")
	}

	r := relay(t, db, nil, append([]string{"mapreduce", "run", "--input", input, "--agent", agent, "--job-id", "inj",
		"--max-retries", "0", "--retry-backoff", "10ms", "--wait"}, env...)...)
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE job_id = 'inj' AND status = 'dead_lettered'`))

	state := func() string {
		var s string
		require.NoError(t, db.Pool.QueryRow(t.Context(), `
			SELECT string_agg(item_id || ':' || status || ':' || failure_count, ',' ORDER BY item_id) FROM dead_lettered_items`).Scan(&s))
		return s
	}
	before := state()
	attempts := append([]string{
		`$.error_type == "Timeout"`, // valid JSONPath that matches nothing here: no item timed out
		`$.item_id == "x' OR '1'='1"`,
		`$.job_id == "inj\"; DROP TABLE dead_lettered_items; --"`,
	}, injections...)
	for _, inj := range attempts {
		r := relay(t, db, nil, append([]string{"dlq", "retry", "inj", "--filter", inj}, env...)...)
		out := r.stdout + r.stderr
		require.NotEqual(t, cli.ExitRuntime, r.code, "--filter %q: %s", inj, out)
		if strings.Contains(out, "syntax error") {
			// PostgreSQL's JSONPath parser refused it: it arrived as a
			// jsonpath value, never as SQL text.
			require.Contains(t, out, "of jsonpath input", "--filter %q reached SQL as text", inj)
			require.Equal(t, cli.ExitUsage, r.code)
		}

		require.Equal(t, before, state(), "--filter %q changed dead_lettered_items: %s", inj, out)

		r = relay(t, db, nil, "dlq", "list", "--job-id", inj, "--json")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.NotContains(t, r.stdout, `"item_id": "a"`, "--job-id %q matched items", inj)
	}
	require.Equal(t, before, state(), "an injection changed dead_lettered_items")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'dead_lettered_items'`, db.Schema))
}
