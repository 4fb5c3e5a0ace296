package cli_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// deadLetterTable is one dead-letter table as the CLI shows it: relay failed
// (failed_pois) or relay dlq (dead_lettered_items).
type deadLetterTable struct {
	cmd   string // the command group
	table string
	// seed writes one row per time, named r0, r1, ...: the time is when the
	// row last failed and when it was last changed or dead-lettered (what
	// purge goes by). Every row's signature holds <n>.
	seed func(t *testing.T, db *testdb.DB, at []time.Time)
	// name is the column, and JSON key, that holds a row's name.
	name string
	// listed decodes list --json into rows.
	listed func(t *testing.T, stdout string) []map[string]any
	// analyzed decodes analyze --json into the number of rows analysed.
	analyzed func(t *testing.T, stdout string) int
	// purgeAction is the audit action one purge run records.
	purgeAction string
}

var deadLetterTables = []deadLetterTable{
	{
		cmd: "failed", table: "failed_pois", name: "poi_id", purgeAction: "purge",
		seed: func(t *testing.T, db *testdb.DB, at []time.Time) {
			_, err := db.Pool.Exec(context.Background(), `
				INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, updated_at, error_message,
				                         error_class, error_signature, error_history, original_poi_data)
				SELECT 1, 'src/a.go', 'r' || (i - 1), i - 1, at, at, 'timed out after 5ms', 'timeout',
				       'timed out after <n>ms', '[]', '{"id": "x"}'
				FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(at, i)`, at)
			require.NoError(t, err)
		},
		listed: func(t *testing.T, stdout string) []map[string]any {
			var rows []map[string]any
			require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
			return rows
		},
		analyzed: func(t *testing.T, stdout string) int {
			var an struct{ Total int }
			require.NoError(t, json.Unmarshal([]byte(stdout), &an))
			return an.Total
		},
	},
	{
		cmd: "dlq", table: "dead_lettered_items", name: "item_id", purgeAction: "item_removed",
		seed: func(t *testing.T, db *testdb.DB, at []time.Time) {
			_, err := db.Pool.Exec(context.Background(), `
				INSERT INTO dead_lettered_items (job_id, item_id, item_data, first_attempt, last_attempt, failure_count,
				                                 error_signature, error_type, dead_lettered_at)
				SELECT 'job1', 'r' || (i - 1), '{"id": "x"}', at, at, 1, 'timed out after <n>ms', 'Timeout', at
				FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(at, i)`, at)
			require.NoError(t, err)
		},
		listed: func(t *testing.T, stdout string) []map[string]any {
			var l struct{ Items []map[string]any }
			require.NoError(t, json.Unmarshal([]byte(stdout), &l))
			return l.Items
		},
		analyzed: func(t *testing.T, stdout string) int {
			var an struct {
				Total int `json:"total_items"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &an))
			return an.Total
		},
	},
}

// names returns the name column of rows.
func names(t *testing.T, key string, rows []map[string]any) []string {
	t.Helper()
	out := []string{}
	for _, r := range rows {
		s, ok := r[key].(string)
		require.True(t, ok, "row %v has no %s", r, key)
		out = append(out, s)
	}
	return out
}

// readExport parses an export file in format back into rows.
func readExport(t *testing.T, path, format string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rows []map[string]any
	switch format {
	case "csv":
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		require.NoError(t, err, "%s is CSV", path)
		for _, rec := range recs[1:] {
			row := map[string]any{}
			for i, col := range recs[0] {
				row[col] = rec[i]
			}
			rows = append(rows, row)
		}
	case "jsonl":
		for line := range strings.Lines(string(b)) {
			var row map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &row), "%s is JSON Lines", path)
			rows = append(rows, row)
		}
	case "json":
		require.NoError(t, json.Unmarshal(b, &rows), "%s is one JSON array", path)
	}
	return rows
}

// The same scenarios against both dead-letter tables: relay failed and
// relay dlq take the same flags, time formats, export formats and purge
// rules, and record the same audit trail.
func TestDeadLetters_BothTablesBehaveAlike(t *testing.T) {
	t.Parallel()
	for _, tb := range deadLetterTables {
		t.Run(tb.cmd, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			now := time.Now().UTC()
			// r0 and r1 failed within 7 days; r3 exactly at the absolute
			// cut-off 20 days ago, r2 a second before it.
			cutoff := now.Add(-20 * 24 * time.Hour).Truncate(time.Minute)
			tb.seed(t, db, []time.Time{now.Add(-time.Hour), now.Add(-48 * time.Hour), cutoff.Add(-time.Second), cutoff})
			all := []string{"r0", "r1", "r2", "r3"}
			rowCount := func() int { return testdb.Count(t, db.Pool, `SELECT count(*) FROM `+tb.table) }
			events := func() int { return testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events`) }

			// list --json prints signatures as they are: <n>, not \u003cn\u003e.
			r := run(t, db, "", nil, tb.cmd, "list", "--json")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, `"error_signature": "timed out after <n>ms"`)
			require.NotContains(t, r.stdout, `\u003c`)
			require.ElementsMatch(t, all, names(t, tb.name, tb.listed(t, r.stdout)))
			r = run(t, db, "", nil, tb.cmd, "list", "--json", "--since", "7d", "--limit", "1")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Equal(t, []string{"r0"}, names(t, tb.name, tb.listed(t, r.stdout)))
			for _, limit := range []string{"0", "10001"} {
				r = run(t, db, "", nil, tb.cmd, "list", "--limit", limit)
				require.Equal(t, cli.ExitUsage, r.code, r.stderr)
				require.Contains(t, r.stderr, "--limit "+limit+" must be between 1 and 10000")
			}

			// analyze takes an age and an absolute time (UTC), and only reads.
			r = run(t, db, "", nil, tb.cmd, "analyze", "--since", "7d", "--json")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Equal(t, 2, tb.analyzed(t, r.stdout))
			r = run(t, db, "", nil, tb.cmd, "analyze", "--since", cutoff.Format("2006-01-02 15:04"), "--json")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Equal(t, 3, tb.analyzed(t, r.stdout), "--since is inclusive")
			r = run(t, db, "", nil, tb.cmd, "analyze", "--until", cutoff.Format(time.RFC3339), "--json")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Equal(t, 1, tb.analyzed(t, r.stdout), "--until is exclusive")
			r = run(t, db, "", nil, tb.cmd, "analyze", "--since", "yesterday")
			require.Equal(t, cli.ExitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, `--since: "yesterday" is not a time`)
			require.Zero(t, events(), "reads record no audit event")

			// Every export format, named or from the extension, parses back
			// to the rows in order, in a file only its owner can read.
			dir := t.TempDir()
			for _, tc := range []struct{ file, flag, format string }{
				{"out-csv", "csv", "csv"}, {"out-jsonl", "jsonl", "jsonl"}, {"out-json", "json", "json"},
				{"out.csv", "", "csv"}, {"out.jsonl", "", "jsonl"}, {"out.ndjson", "", "jsonl"}, {"out.json", "", "json"},
				{"out", "", "csv"}, {"out2.json", "jsonl", "jsonl"},
			} {
				path := filepath.Join(dir, tc.file)
				args := []string{tb.cmd, "export", path}
				if tc.flag != "" {
					args = append(args, "--format", tc.flag)
				}
				r = run(t, db, "", nil, args...)
				require.Equal(t, cli.ExitOK, r.code, "%q: %s", args, r.stderr)
				require.Contains(t, r.stderr, "exported 4 ")
				require.Equal(t, all, names(t, tb.name, readExport(t, path, tc.format)), "%q", args)
				st, err := os.Stat(path)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
			}
			r = run(t, db, "", nil, tb.cmd, "export", "-", "--format", "jsonl", "--since", "7d", "--limit", "1")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Equal(t, 1, strings.Count(r.stdout, "\n"))
			require.Contains(t, r.stdout, `"timed out after <n>ms"`)
			r = run(t, db, "", nil, tb.cmd, "export", filepath.Join(dir, "x.xml"), "--format", "xml")
			require.Equal(t, cli.ExitUsage, r.code)
			require.Contains(t, r.stderr, `--format "xml" must be csv, jsonl or json`)
			require.Zero(t, events(), "exports record no audit event")

			// purge: 1 to 36500 days; without a terminal only with --yes,
			// whatever is piped in.
			for _, days := range []string{"0", "36501"} {
				r = run(t, db, "", nil, tb.cmd, "purge", "--older-than-days", days, "--yes")
				require.Equal(t, cli.ExitUsage, r.code, r.stderr)
				require.Contains(t, r.stderr, "--older-than-days "+days+" must be between 1 and 36500")
			}
			r = run(t, db, "y\n", nil, tb.cmd, "purge", "--older-than-days", "10")
			require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
			require.Contains(t, r.stderr, "purge would delete ")
			require.Contains(t, r.stderr, "standard input is not a terminal, so nothing was deleted: run it again with --yes to confirm")
			require.NotContains(t, r.stderr, "[y/N]")
			r = runOnTerminal(t, db, "n\n", tb.cmd, "purge", "--older-than-days", "10")
			require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
			require.Contains(t, r.stderr, "[y/N]")
			require.Contains(t, r.stderr, "purge cancelled: nothing deleted")
			require.Equal(t, 4, rowCount())

			// "y" on a terminal purges r2 and r3 (20 days old); -y purges r1.
			r = runOnTerminal(t, db, "y\n", tb.cmd, "purge", "--older-than-days", "10", "--actor", "alice")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, "purged 2 ")
			r = run(t, db, "", nil, tb.cmd, "purge", "--older-than-days", "1", "-y", "--json", "--actor", "bob")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			var purged struct{ Purged *int }
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &purged), r.stdout)
			require.Equal(t, 1, *purged.Purged)
			r = run(t, db, "", nil, tb.cmd, "purge", "--older-than-days", "1", "-y", "--json")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			require.JSONEq(t, `{"purged": 0}`, r.stdout)
			require.Equal(t, 1, rowCount())

			// One audit event per purge run that deleted rows, with its actor.
			require.Equal(t, 2, events())
			for actor, n := range map[string]int{"alice": 2, "bob": 1} {
				require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events
					WHERE actor = $1 AND action = $2 AND target = $3 AND item_count = $4`, actor, tb.purgeAction, tb.table, n), actor)
			}
		})
	}
}

// dlq analyze's old --after and --before still work, deprecated, and the
// warning goes to standard error, not into the JSON.
func TestDLQ_AnalyzeAfterBeforeAreDeprecatedAliases(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	now := time.Now().UTC()
	deadLetterTables[1].seed(t, db, []time.Time{now.Add(-time.Hour), now.Add(-72 * time.Hour)})
	r := run(t, db, "", nil, "dlq", "analyze", "--after", now.Add(-24*time.Hour).Format("2006-01-02 15:04"), "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "--after has been deprecated, use --since")
	var an struct {
		Total int        `json:"total_items"`
		Since *time.Time `json:"since"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &an))
	require.Equal(t, 1, an.Total)
	require.NotNil(t, an.Since)
	r = run(t, db, "", nil, "dlq", "analyze", "--before", "2d", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &an))
	require.Equal(t, 1, an.Total)
	r = run(t, db, "", nil, "dlq", "analyze", "--help")
	require.NotContains(t, r.stdout, "--after", "deprecated flags are hidden")
}

// dlq clear confirms like every destructive command and records its actor.
func TestDLQ_ClearConfirmsAndRecordsTheActor(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	deadLetterTables[1].seed(t, db, []time.Time{time.Now(), time.Now()})
	_, err := db.Pool.Exec(context.Background(), `UPDATE dead_lettered_items SET status = 'reprocessed'`)
	require.NoError(t, err)

	r := run(t, db, "y\n", nil, "dlq", "clear", "job1")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "clear would delete 2 items of job job1 that were successfully reprocessed; standard input is not a terminal")
	r = runOnTerminal(t, db, "\n", "dlq", "clear", "job1")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "clear cancelled: nothing deleted")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items`))

	r = run(t, db, "", nil, "dlq", "clear", "job1", "-y", "--actor", "carol", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.JSONEq(t, `{"cleared": 2}`, r.stdout)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE actor = 'carol' AND action = 'item_removed' AND item_count = 2`))
}
