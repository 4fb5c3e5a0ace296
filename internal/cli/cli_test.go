package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

type result struct {
	code           int
	stdout, stderr string
}

// run runs relay with args against db (nil for no database flags).
func run(t *testing.T, db *testdb.DB, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	if db != nil {
		args = append(args, "--database-url", db.URL, "--database-schema", db.Schema)
	}
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	return result{code, out.String(), errOut.String()}
}

// runOnTerminal is run with standard input a terminal on which a person
// types stdin (Env.StdinIsTerminal).
func runOnTerminal(t *testing.T, db *testdb.DB, stdin string, args ...string) result {
	t.Helper()
	args = append(args, "--database-url", db.URL, "--database-schema", db.Schema)
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		LookupEnv:       func(string) (string, bool) { return "", false },
		StdinIsTerminal: func() bool { return true },
	})
	return result{code, out.String(), errOut.String()}
}

func TestPublish_MixedGoodAndBadLines(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := strings.Join([]string{
		`{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1,"rawCode":"function a() { b(); }"}]}`,
		`{"fileId":"src/broken.js","pois":[`,
		`{"fileId":"src/c.js","pois":[{"id":"c1","type":"function_definition","name":"c","filePath":"src/other.js","lineNumber":1}]}`,
		``,
		`{"fileId":"src/b.js","pois":[{"id":"b1","type":"function_definition","name":"b","filePath":"src/b.js","lineNumber":1,"rawCode":"function b() {}"},{"id":"b2","type":"import","name":"a","lineNumber":2,"rawCode":"import { a } from './a'"}]}`,
		`{"fileId":"","pois":[]}`,
	}, "\n")
	file := filepath.Join(t.TempDir(), "in.ndjson")
	require.NoError(t, os.WriteFile(file, []byte(input), 0o600))

	r := run(t, db, "", nil, "publish", file)
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stdout, "published 2 files, 3 POIs, 2 jobs; 3 lines rejected")
	require.Contains(t, r.stderr, "line 2: rejected: invalid JSON")
	require.Contains(t, r.stderr, `line 3: rejected: poi "c1" (file "src/c.js"): filePath "src/other.js" does not match`)
	require.Contains(t, r.stderr, "line 6: rejected: fileId is empty")
	require.NotContains(t, r.stderr, "line 4", "blank lines are skipped")

	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file'`))
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))

	// The same input from stdin, as JSON: the good lines again (re-published,
	// nothing duplicated), the same rejections.
	r = run(t, db, input, nil, "publish", "--json")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stdout, `"files": 2`)
	require.Contains(t, r.stdout, `"line": 3`)
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))

	// Work everything; the published files resolve against each other.
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "idle after")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'a1' AND target_poi_id = 'b1' AND type = 'CALLS'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'b2' AND target_poi_id = 'a1' AND type = 'IMPORTS'`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND state <> 'completed'`))
}

func TestMain_UsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"frobnicate"},
		{"publish", "a", "b"},
		{"migrate", "sideways"},
		{"worker", "--until-idle=maybe"},
		{"--worker-concurrency", "0", "migrate", "status"},
	} {
		r := run(t, nil, "", nil, args...)
		require.Equal(t, cli.ExitUsage, r.code, "args %q: stderr %s", args, r.stderr)
		require.Contains(t, r.stderr, "relay:")
	}
}

func TestMain_PasswordsNeverPrinted(t *testing.T) {
	t.Parallel()
	secret := "s3cr3t-Pa55"
	url := "postgres://relay:" + secret + "@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"

	r := run(t, nil, "", nil, "--database-url", url, "migrate", "status")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.NotContains(t, r.stderr+r.stdout, secret)
	require.Contains(t, r.stderr, "postgres://relay:xxxxx@127.0.0.1:1/relay")

	r = run(t, nil, "", map[string]string{"RELAY_DATABASE_URL": url, "RELAY_LOG_LEVEL": "debug"}, "publish")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.NotContains(t, r.stderr+r.stdout, secret)

	r = run(t, nil, "", map[string]string{"RELAY_DATABASE_URL": url}, "--help")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stdout, "--database-url")
	require.NotContains(t, r.stdout+r.stderr, secret)
}

func TestDemo_RunsEndToEndAndSummarises(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, "", nil, "demo")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "published 4 files, 16 POIs in 4 resolve_file jobs (one per file)")
	require.Contains(t, r.stdout, "3 failed POIs")
	require.Contains(t, r.stdout, "demo-math-bad-line")
	require.Contains(t, r.stdout, "EXTENDS       demo-shapes-square     demo-shapes-shape")

	// A second run works the same way: its publishes supersede the first
	// run's failures (issue 37, defect 4), so each failed POI has one row a
	// reprocess takes.
	r = run(t, db, "", nil, "demo")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "3 failed POIs")
	require.Equal(t, 6, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`))
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'new'`))
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'superseded'`))
	r = run(t, db, "", nil, "reprocess", "--status", "new", "--dry-run")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "would reprocess 3 rows of 3 files")
}

func TestMigrate_StatusListsEveryMigrationAsJSON(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, "", nil, "migrate", "status", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"version": 1`)
	require.Contains(t, r.stdout, `"applied": true`)
	r = run(t, db, "", nil, "migrate", "up")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "schema is up to date")
}
