package cli_test

import (
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

// trickyCode is rawCode an export must carry exactly.
const trickyCode = "function f(a, b) {\n  return \"a, \\\"quoted\\\"\" + 'b';\r\n}"

// seedFailed writes rows straight into failed_pois: ids 1..3 in file
// src/x.js (3 has a rawCode full of commas, quotes and newlines, and a
// multi-line error context), 4 in src/y.js with another signature.
func seedFailed(t *testing.T, db *testdb.DB) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"id": "x3", "type": "function_definition", "name": "f", "lineNumber": "bad", "rawCode": trickyCode})
	_, err := db.Pool.Exec(context.Background(), `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_context,
		                         error_class, error_signature, error_history, original_poi_data)
		SELECT 10, 'src/x.js', 'x' || i, i, now() - make_interval(hours => i),
		       'poi "x' || i || '": lineNumber must be a non-negative integer, got string "bad"',
		       CASE WHEN i = 3 THEN E'line one\nline "two", with comma' ELSE '' END, 'validation',
		       'poi "<str>": lineNumber must be a non-negative integer, got string "<str>"',
		       jsonb_build_array(jsonb_build_object('job_id', 10, 'error_message', 'first')),
		       CASE WHEN i = 3 THEN $1::jsonb ELSE jsonb_build_object('id', 'x' || i, 'lineNumber', 'bad') END
		FROM generate_series(1, 3) AS i
		UNION ALL
		SELECT 11, 'src/y.js', NULL, 0, now() - interval '3 days', 'panic: boom', 'goroutine 1', 'panic', 'panic: boom', '[]', '{}'`,
		string(data))
	require.NoError(t, err)
}

func TestFailed_ListInspectStatsAnalyzeWithJSON(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedFailed(t, db)

	r := run(t, db, "", nil, "failed", "list")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^ID +FAILED_AT +STATUS +ATTEMPTS +CLASS +FILE +POI +ERROR$`, r.stdout)
	require.Regexp(t, `(?m)^1 +\S+ +new +1 +validation +src/x\.js +x1 +poi "x1": lineNumber`, r.stdout)
	require.Regexp(t, `(?m)^4 +\S+ +new +1 +panic +src/y\.js +- +panic: boom$`, r.stdout)
	require.Less(t, strings.Index(r.stdout, "\n1 "), strings.Index(r.stdout, "\n4 "), "newest first")

	r = run(t, db, "", nil, "failed", "list", "--error-class", "PANIC", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Len(t, rows, 1)
	require.EqualValues(t, 4, rows[0]["id"])

	r = run(t, db, "", nil, "failed", "list", "--since", "150m", "--limit", "1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "x1")
	require.Contains(t, r.stdout, "(first 1 rows")

	r = run(t, db, "", nil, "failed", "inspect", "3")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	for _, want := range []string{"status           new", "error class      validation", "error context:\n  line one\n  line \"two\", with comma",
		"error history (oldest first):", "jobs:\n  10  original  (no longer in river_job)", `"rawCode": "function f(a, b) {\n  return`} {
		require.Contains(t, r.stdout, want)
	}
	r = run(t, db, "", nil, "failed", "inspect", "3", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var in struct {
		POIData struct {
			RawCode string `json:"rawCode"`
		} `json:"original_poi_data"`
		Jobs []struct{ ID int64 } `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &in))
	require.Equal(t, trickyCode, in.POIData.RawCode)
	require.Len(t, in.Jobs, 1)
	r = run(t, db, "", nil, "failed", "inspect", "99")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "failed_pois row not found")
	r = run(t, db, "", nil, "failed", "inspect", "x")
	require.Equal(t, cli.ExitUsage, r.code)

	r = run(t, db, "", nil, "failed", "stats")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "failed_pois: 4 rows")
	require.Contains(t, r.stdout, "by status:          new 4, reprocessing 0, reprocessed 0, ignored 0")
	require.Contains(t, r.stdout, "by error class:     validation 3, panic 1, timeout 0, resolver 0, storage 0")
	r = run(t, db, "", nil, "failed", "stats", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"total": 4`)
	require.Contains(t, r.stdout, `"stuck_reprocessing": 0`)

	r = run(t, db, "", nil, "failed", "analyze")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "4 failed POIs in 2 signature groups")
	require.Regexp(t, `(?m)^3 +75\.0% +validation +\S+ +\S+ +x1,x2,x3 +poi "<str>": lineNumber`, r.stdout)
	require.Regexp(t, `(?m)^1 +25\.0% +panic +\S+ +\S+ +#4 +panic: boom$`, r.stdout)
	require.Contains(t, r.stdout, "failures per hour (UTC):")
	r = run(t, db, "", nil, "failed", "analyze", "--since", "1d", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var an struct {
		Total  int
		Groups []struct {
			Count        int      `json:"count"`
			SamplePOIIDs []string `json:"sample_poi_ids"`
		}
		Hourly []struct{ Count int } `json:"hourly"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &an))
	require.Equal(t, 3, an.Total)
	require.Len(t, an.Groups, 1)
	require.Equal(t, []string{"x1", "x2", "x3"}, an.Groups[0].SamplePOIIDs)
	require.Len(t, an.Hourly, 3)
}

func TestFailed_ExportCSVAndJSONCarryEveryByteSafely(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedFailed(t, db)
	dir := t.TempDir()

	file := filepath.Join(dir, "failed.csv")
	r := run(t, db, "", nil, "failed", "export", file, "--file-id", "src/x.js")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "exported 3 rows to "+file)
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 4)
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	last := recs[3]
	require.Equal(t, "3", last[col["id"]])
	require.Equal(t, "line one\nline \"two\", with comma", last[col["error_context"]])
	var data struct {
		RawCode string `json:"rawCode"`
	}
	require.NoError(t, json.Unmarshal([]byte(last[col["original_poi_data"]]), &data))
	require.Equal(t, trickyCode, data.RawCode)
	require.Equal(t, `poi "<str>": lineNumber must be a non-negative integer, got string "<str>"`, last[col["error_signature"]])

	jfile := filepath.Join(dir, "failed.ndjson") // JSON Lines, from the extension
	r = run(t, db, "", nil, "failed", "export", jfile)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	raw, err := os.ReadFile(jfile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 4)
	var row struct {
		ID      int64 `json:"id"`
		POIData struct {
			RawCode string `json:"rawCode"`
		} `json:"original_poi_data"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &row))
	require.EqualValues(t, 3, row.ID)
	require.Equal(t, trickyCode, row.POIData.RawCode)

	r = run(t, db, "", nil, "failed", "export", "-", "--format", "jsonl", "--limit", "1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"))

	r = run(t, db, "", nil, "failed", "export", filepath.Join(dir, "x.xml"), "--format", "xml")
	require.Equal(t, cli.ExitUsage, r.code)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no partial or temporary files left behind")
}

func TestFailed_IgnoreNeedsReasonAndReportsEveryID(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedFailed(t, db)
	_, err := db.Pool.Exec(context.Background(), `UPDATE failed_pois SET status = 'reprocessing' WHERE id = 2`)
	require.NoError(t, err)

	r := run(t, db, "", nil, "failed", "ignore", "1")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "--reason is required")

	r = run(t, db, "", nil, "failed", "ignore", "1", "2", "77", "--reason", "generator bug #12", "--actor", "alice")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stdout, "ignored 1 rows")
	require.Contains(t, r.stderr, "row 77: not found")
	require.Contains(t, r.stderr, "row 2: refused: status is reprocessing")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'ignored' AND ignored_reason = 'generator bug #12'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'ignore' AND actor = 'alice' AND item_count = 1 AND details->'ids' = '[1]'`))

	r = run(t, db, "", nil, "failed", "ignore", "4", "--reason", "known", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"ignored": [`)
}

func TestFailed_PurgeAsksFirstAndRefusesReprocessing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedFailed(t, db)
	_, err := db.Pool.Exec(context.Background(), `
		UPDATE failed_pois SET updated_at = now() - interval '40 days';
		UPDATE failed_pois SET status = 'reprocessing' WHERE id = 2;
		UPDATE failed_pois SET updated_at = now() WHERE id = 4`)
	require.NoError(t, err)

	r := run(t, db, "", nil, "failed", "purge", "--older-than-days", "30", "--status", "reprocessing", "--yes")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "reprocessing cannot be purged")
	r = run(t, db, "", nil, "failed", "purge")
	require.Equal(t, cli.ExitUsage, r.code)

	r = runOnTerminal(t, db, "n\n", "failed", "purge", "--older-than-days", "30")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "Delete 2 failed_pois rows not updated for 30 days (new 2)? This cannot be undone. [y/N]")
	require.Contains(t, r.stderr, "purge cancelled: nothing deleted")
	r = runOnTerminal(t, db, "", "failed", "purge", "--older-than-days", "30")
	require.Equal(t, cli.ExitRuntime, r.code, "no answer is no")
	r = run(t, db, "yes\n", nil, "failed", "purge", "--older-than-days", "30")
	require.Equal(t, cli.ExitRuntime, r.code, "an answer piped in is no answer")
	require.Contains(t, r.stderr, "run it again with --yes")
	require.Equal(t, 4, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`))

	r = runOnTerminal(t, db, "yes\n", "failed", "purge", "--older-than-days", "30", "--actor", "bob")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "purged 2 rows")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE id IN (1, 3)`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE id = 2`), "reprocessing rows stay")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'purge' AND actor = 'bob' AND item_count = 2`))

	r = run(t, db, "", nil, "failed", "purge", "--older-than-days", "30", "--yes", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"purged": 0`)
}

func TestFailed_InjectionAttemptsMatchNothingAndHarmNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedFailed(t, db)
	for _, args := range [][]string{
		{"failed", "list", "--signature", "x' OR 1=1 --"},
		{"failed", "list", "--file-id", "src/x.js' OR '1'='1"},
		{"failed", "list", "--file-id", "'; DROP TABLE failed_pois; --"},
		{"failed", "analyze", "--signature", "x' OR 1=1 --"},
	} {
		r := run(t, db, "", nil, args...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Equal(t, "no failed POIs match\n", r.stdout, "args %q", args)
	}
	for _, args := range [][]string{
		{"reprocess", "--status", "new", "--signature", "x' OR 1=1 --", "--yes"},
		{"reprocess", "--status", "new", "--file-id", "src/x.js' OR '1'='1", "--yes"},
	} {
		r := run(t, db, "", nil, args...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Equal(t, "nothing to reprocess\n", r.stdout)
	}
	r := run(t, db, "", nil, "failed", "list", "--status", "new' OR '1'='1")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "unknown status")
	require.Equal(t, 4, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'new'`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job`))
}

func TestFailedList_FiltersByPOIIDAndMessageText(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	require.Equal(t, cli.ExitOK, run(t, db, "", nil, "demo").code)
	for _, args := range [][]string{{"--poi-id", "demo-math-bad-line"}, {"--search", "GOT STRING \"TWELVE"}} {
		r := run(t, db, "", nil, append([]string{"failed", "list", "--json"}, args...)...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		var rows []map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
		require.Len(t, rows, 1, "%v", args)
		require.Equal(t, "demo-math-bad-line", rows[0]["poi_id"])
	}
	r := run(t, db, "", nil, "failed", "list", "--search", "100%", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.JSONEq(t, "[]", r.stdout)
}
