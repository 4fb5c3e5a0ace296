package cli_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
)

// seedForRollback publishes two files (3 POIs, 2 resolve_file jobs) and
// dead-letters one POI, so a rollback has rows to lose.
func seedForRollback(t *testing.T, db *testdb.DB) {
	t.Helper()
	input := `{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1,"rawCode":"function a() { b(); }"}]}
{"fileId":"src/b.js","pois":[{"id":"b1","type":"function_definition","name":"b","filePath":"src/b.js","lineNumber":1},{"id":"b2","type":"import","name":"a","lineNumber":2}]}
`
	r := run(t, db, input, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO failed_pois (original_job_id, poi_id, poi_index, file_id,
		error_message, error_signature, error_class, original_poi_data)
		VALUES (1, 'b2', 1, 'src/b.js', 'boom', 'boom', 'resolver', '{}')`)
	require.NoError(t, err)
	requireRowsKept(t, db)
}

// requireRowsKept checks that what seedForRollback wrote is all there.
func requireRowsKept(t *testing.T, db *testdb.DB) {
	t.Helper()
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`))
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM mapreduce_jobs`))
}

// latestVersion is the newest migration's version.
func latestVersion() int {
	return int(slices.Max(slices.Collect(maps.Keys(migrations.DownEffects))))
}

// downToEleven rolls back the migrations above 11 with --yes (12 drops
// pois.symbol, and so loses data), for the tests about 9 to 11, which lose
// none.
func downToEleven(t *testing.T, db *testdb.DB) {
	t.Helper()
	r := run(t, db, "", nil, "migrate", "down", "--to", "11", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 11, schemaVersion(t, db))
}

func schemaVersion(t *testing.T, db *testdb.DB) int {
	t.Helper()
	return testdb.Count(t, db.Pool, `SELECT coalesce(max(version_id), 0) FROM `+migrations.TableName)
}

func tableCount(t *testing.T, db *testdb.DB) int {
	t.Helper()
	return testdb.Count(t, db.Pool, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, db.Schema)
}

func TestMigrateDown_RefusesToDestroyDataWithoutYesWhenStdinIsNotATerminal(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedForRollback(t, db)
	latest := schemaVersion(t, db)
	tables := tableCount(t, db)

	// "y" on a pipe is not a person answering: --yes is the only way.
	for _, args := range [][]string{{"migrate", "down", "--all"}, {"migrate", "down", "--to", "0"}, {"migrate", "down", "--to", "1"}} {
		r := run(t, db, "y\n", nil, args...)
		require.Equal(t, cli.ExitRuntime, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "standard input is not a terminal, so nothing was rolled back: run it again with --yes", args)
		require.NotContains(t, r.stderr, "[y/N]", "no question when nobody can answer it")
		require.Empty(t, r.stdout)
	}
	r := run(t, db, "", nil, "migrate", "down", "--all")
	// The refusal lists what would be destroyed, with row counts.
	for _, want := range []string{
		fmt.Sprintf("Rolling back %d migrations (schema version %d -> 0):", latest, latest),
		"drops tables: dead_letter_events (0 rows), dead_lettered_items (0 rows), failed_pois (1 row), files (2 rows), poi_references (",
		"pois (3 rows)",
		"00001 River's migrations (Go): removes River's tables",
		"river_job (2 rows)",
		"drops tables: mapreduce_items (0 rows), mapreduce_jobs (0 rows)",
		"Row counts are count(*) over at most 100000 rows per table.",
	} {
		require.Contains(t, r.stderr, want)
	}
	require.Equal(t, latest, schemaVersion(t, db))
	require.Equal(t, tables, tableCount(t, db))
	requireRowsKept(t, db)
}

// Ten non-interactive runs without --yes used to empty the database. Now
// they roll back the migrations that lose no data, one per run, and then
// refuse.
func TestMigrateDown_TenRunsWithoutYesKeepTheData(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedForRollback(t, db)
	downToEleven(t, db)
	var rolledBack []string
	for i := range 10 {
		r := run(t, db, "", nil, "migrate", "down")
		if r.code == cli.ExitOK {
			rolledBack = append(rolledBack, strings.TrimSpace(r.stdout))
			continue
		}
		require.Equal(t, cli.ExitRuntime, r.code, "run %d: %s", i+1, r.stderr)
		require.Contains(t, r.stderr, "00008 00008_one_row_per_reference.sql", "run %d", i+1)
		require.Contains(t, r.stderr, "drops columns: poi_references.target_poi_id", "run %d", i+1)
		require.Contains(t, r.stderr, "run it again with --yes", "run %d", i+1)
	}
	require.Equal(t, []string{
		"rolled back 00011 00011_relationships_one_row_per_edge.sql",
		"rolled back 00010 00010_reference_names_by_horizon.sql",
		"rolled back 00009 00009_failed_pois_counts.sql",
	}, rolledBack)
	require.Equal(t, 8, schemaVersion(t, db))
	requireRowsKept(t, db)
}

func TestMigrateDown_YesRollsBackExactlyOneVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedForRollback(t, db)
	downToEleven(t, db)

	r := run(t, db, "", nil, "migrate", "down", "--to", "8")
	require.Equal(t, cli.ExitOK, r.code, "11, 10 and 9 lose no data: no --yes needed: %s", r.stderr)
	require.Equal(t, "rolled back 00011 00011_relationships_one_row_per_edge.sql\n"+
		"rolled back 00010 00010_reference_names_by_horizon.sql\nrolled back 00009 00009_failed_pois_counts.sql\n", r.stdout)
	require.Equal(t, 8, schemaVersion(t, db))

	for _, yes := range []string{"--yes", "-y"} {
		before := schemaVersion(t, db)
		r = run(t, db, "", nil, "migrate", "down", yes)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Equal(t, 1, strings.Count(r.stdout, "rolled back"), r.stdout)
		require.Equal(t, before-1, schemaVersion(t, db), "%s rolls back one version", yes)
	}
	require.Equal(t, 6, schemaVersion(t, db))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'poi_references' AND column_name = 'target_poi_id'`, db.Schema), "8's rollback ran")
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))
}

func TestMigrateDown_ToAndAll(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedForRollback(t, db)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all", "--to", "3"}, "--all and --to exclude each other"},
		{[]string{"--to", "-1"}, "--to -1: want a version, or 0 for all"},
		{[]string{"--to", "99", "--yes"}, fmt.Sprintf("--to 99: no such migration (versions 1 to %d; 0 for all)", latestVersion())},
		{[]string{"extra"}, "accepts 0 arg(s)"},
	} {
		r := run(t, db, "", nil, append([]string{"migrate", "down"}, tc.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want)
	}
	require.Equal(t, latestVersion(), schemaVersion(t, db))

	// --to VERSION leaves VERSION applied.
	r := run(t, db, "", nil, "migrate", "down", "--to", "5", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, latestVersion()-5, strings.Count(r.stdout, "rolled back"), r.stdout)
	require.Contains(t, r.stdout, "rolled back 00006 ")
	require.NotContains(t, r.stdout, "00005")
	require.Equal(t, 5, schemaVersion(t, db))
	r = run(t, db, "", nil, "migrate", "down", "--to", "5", "--yes")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "relay: nothing to roll back (schema at version 5)\n", r.stdout)

	// --all removes everything relay created: River's tables, relay's and
	// goose's version table.
	r = run(t, db, "", nil, "migrate", "down", "--all", "-y")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "rolled back 00001 River's migrations (Go)\n")
	require.Contains(t, r.stdout, "dropped relay_goose_db_version")
	require.Zero(t, tableCount(t, db), "no table is left in the schema")

	r = run(t, db, "", nil, "migrate", "down", "--all")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing to roll back (schema at version 0)")
	require.Zero(t, tableCount(t, db), "nothing to roll back leaves nothing behind either")

	r = run(t, db, "", nil, "migrate", "up")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, latestVersion(), schemaVersion(t, db))
}

func TestMigrateDown_DryRunListsWhatWouldBeDestroyedAndChangesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedForRollback(t, db)
	tables := tableCount(t, db)

	r := run(t, db, "", nil, "migrate", "down", "--to", "2", "--dry-run")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	for _, want := range []string{
		fmt.Sprintf("Rolling back %d migrations (schema version %d -> 2):", latestVersion()-2, latestVersion()),
		"00009 00009_failed_pois_counts.sql: drops the failed_pois counters",
		"drops derived tables (recomputed on the way up): failed_pois_counts (",
		"00007 00007_drop_river_job_args_index.sql: recreates river_job's GIN index on args; no data lost",
		"drops columns: failed_pois.ignored_reason, failed_pois.manual_review_required, failed_pois.reprocessed_at, " +
			"failed_pois.reprocess_requested_at, failed_pois.reprocess_job_id, of failed_pois (1 row)",
		"deletes rows from: poi_references (",
		"dry run: nothing rolled back",
	} {
		require.Contains(t, r.stdout, want)
	}
	require.NotContains(t, r.stdout, "00002 ")
	require.Equal(t, latestVersion(), schemaVersion(t, db))
	require.Equal(t, tables, tableCount(t, db))
	requireRowsKept(t, db)
}
