//go:build citus

package cli_test

// relay's worker, dead-letter, reprocess and graph reads on distributed
// tables give what they give on plain PostgreSQL: the same steps run on a
// plain schema (internal/testdb) and on a distributed one (citusDB, then
// relay migrate distribute), and their results are compared.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// workerOutcome is what workerSteps saw, everything that does not depend on
// ids, times or the order jobs ran in.
type workerOutcome struct {
	// Failed is every failed_pois row after the steps, sorted.
	Failed []string
	// StatsBefore and StatsAfter are relay failed stats --json before and
	// after the reprocess, less its times.
	StatsBefore, StatsAfter failedStats
	// Inspected is relay failed inspect of a row, less ids and times.
	Inspected string
	// Ignore is relay failed ignore's output, with the row's id replaced.
	Ignore string
	// Reprocess is relay reprocess --status new --yes's output, less its
	// durations.
	Reprocess string
	// Callers is relay graph callers --json of a POI by its id.
	Callers string
	// Analyze is relay failed analyze --json's groups: count, class,
	// signature and sample POIs.
	Analyze []string
	// Preview is what relay repository delete shows before asking.
	Preview map[string]string
	// References is every poi_references row, sorted.
	References []string
}

// failedStats is relay failed stats --json, less its times.
type failedStats struct {
	Total  int64            `json:"total"`
	Status map[string]int64 `json:"by_status"`
	Class  map[string]int64 `json:"by_error_class"`
	Manual int64            `json:"manual_review_required"`
	Stuck  int64            `json:"stuck_reprocessing"`
}

// workerSteps publishes the demo's sample and repositoryAnalyses (POIs of
// which fail) and runs the worker, then, after distribute (the tables
// distributed by then, or not), reads and works the dead letters and the
// graph as an operator would.
func workerSteps(t *testing.T, db *testdb.DB, distribute func()) workerOutcome {
	t.Helper()
	publishDemoAndRepositories(t, db)
	distribute()

	var out workerOutcome
	stats := func() failedStats {
		r := run(t, db, "", nil, "failed", "stats", "--json")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		var s failedStats
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), r.stdout)
		return s
	}
	out.StatsBefore = stats()
	require.Positive(t, out.StatsBefore.Total, "the corpus has POIs that fail")

	// A row by its id: inspect, then ignore it.
	var id int64
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT id FROM failed_pois WHERE repository = 'acme/c' AND poi_id = 'bad'`).Scan(&id))
	ids := strconv.FormatInt(id, 10)
	r := run(t, db, "", nil, "failed", "inspect", ids, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var in failed.Inspection
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &in), r.stdout)
	out.Inspected = strings.Join([]string{in.Repository, in.FileID, in.POIID, string(in.Status), string(in.ErrorClass),
		in.ErrorMessage, string(in.POIData), strconv.Itoa(len(in.History)), strconv.Itoa(len(in.Jobs))}, "|")
	r = run(t, db, "", nil, "failed", "inspect", ids)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "acme/c")
	r = run(t, db, "", nil, "failed", "ignore", ids, "--reason", "citus test", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	out.Ignore = strings.ReplaceAll(r.stdout, ids, "ID")

	// Reprocess every new row, and work the jobs.
	r = run(t, db, "", nil, "reprocess", "--status", "new", "--yes", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rep failed.ReprocessResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	out.Reprocess = strconv.FormatInt(rep.Rows, 10) + " rows, " + strconv.FormatInt(rep.Superseded, 10) + " superseded, " +
		strconv.FormatInt(rep.Jobs, 10) + " jobs"
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	out.StatsAfter = stats()
	r = run(t, db, "", nil, "failed", "analyze", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var an failed.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &an), r.stdout)
	for _, g := range an.Groups {
		out.Analyze = append(out.Analyze, strings.Join(append([]string{strconv.FormatInt(g.Count, 10), string(g.ErrorClass), g.Signature},
			g.SamplePOIIDs...), "|"))
	}

	r = run(t, db, "", nil, "graph", "callers", "demo-math-add", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	out.Callers = r.stdout

	r = runOnTerminal(t, db, "n\n", "repository", "delete", "acme/b", "--json")
	out.Preview = map[string]string{"stdout": r.stdout, "code": strconv.Itoa(r.code)}

	out.Failed = rowsAsText(t, db, `
		SELECT concat_ws('|', repository, file_id, poi_id, poi_index, status, attempts, error_class, error_signature,
		                 file_version, superseded_reason, ignored_reason, manual_review_required)
		FROM failed_pois ORDER BY 1`)
	out.References = rowsAsText(t, db, `
		SELECT concat_ws('|', repository, source_poi_id, source_file_id, name, key, type, target_repository, target_poi_id, target_file_id)
		FROM poi_references ORDER BY 1`)
	return out
}

func TestCitusWorker_DeadLettersReprocessesAndReadsAsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	plain := testdb.New(t)
	want := workerSteps(t, plain, func() {})

	db := citusDB(t)
	got := workerSteps(t, db, func() {
		r := run(t, db, "", nil, "migrate", "distribute")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "relay: dropped the 8 counts triggers of failed_pois")
	})
	require.Equal(t, want, got)
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois_counts`),
		"no counts are kept on a distributed failed_pois")
}

// rowsAsText runs sql, which returns one text column, and returns its
// values.
func rowsAsText(t *testing.T, db *testdb.DB, sql string) []string {
	t.Helper()
	rows, err := db.Pool.Query(t.Context(), sql)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}
