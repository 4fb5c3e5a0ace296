//go:build citus

package cli_test

// The tests that run relay on distributed tables, against relay's own
// Citus cluster (make citus-cluster): go test -tags citus, with
// CITUS_DATABASE_URL naming the coordinator's database. With the tag and
// no reachable cluster they fail and say what to start; they never skip.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
)

// citusEnvURL names the variable that points the citus tests at the
// coordinator.
const citusEnvURL = "CITUS_DATABASE_URL"

// citusDB gives a test a schema of its own in the coordinator's database,
// migrated with relay migrate up, and drops it (with its distributed
// tables) when the test ends.
func citusDB(t *testing.T) *testdb.DB {
	t.Helper()
	url := os.Getenv(citusEnvURL)
	if url == "" {
		t.Fatalf("%s is not set: the citus tests need relay's Citus cluster (make citus-cluster), with "+
			"%s=postgres://root@127.0.0.1:5440/relay?sslmode=disable", citusEnvURL, citusEnvURL)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("the Citus cluster at %s (%s) is unreachable: start it with make citus-cluster: %v", config.RedactURL(url), citusEnvURL, err)
	}
	defer conn.Close(context.Background())
	var version string
	if err := conn.QueryRow(ctx, `SELECT citus_version()`).Scan(&version); err != nil {
		t.Fatalf("%s (%s) is not a Citus coordinator's database (make citus-cluster creates one): %v", config.RedactURL(url), citusEnvURL, err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	schema := "relay_citus_" + hex.EncodeToString(b)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		if os.Getenv("TEST_KEEP_SCHEMA") != "" {
			return
		}
		conn, err := pgx.Connect(context.Background(), url)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		require.NoError(t, err)
	})
	pool, err := database.Open(ctx, url, database.Options{Role: "test", Schema: schema, MaxConns: 4,
		StatementTimeout: time.Minute, IdleInTransactionTimeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := &testdb.DB{Pool: pool, Schema: schema, URL: url}
	r := run(t, db, "", nil, "migrate", "up")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	return db
}

func TestCitusMigrateDistribute_DistributesByRepositoryOnceAndSaysSo(t *testing.T) {
	t.Parallel()
	db := citusDB(t)

	r := run(t, db, "", nil, "migrate", "distribute")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "relay: distributed 7 tables by repository (Citus 13.2.2")
	require.Equal(t, len(citus.Tables), testdb.Count(t, db.Pool, `
		SELECT count(*) FROM pg_dist_partition p
		WHERE p.logicalrelid::regclass::text = ANY($1) AND p.partmethod = 'h'
		  AND column_to_column_name(p.logicalrelid, p.partkey) = 'repository'
		  AND p.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'files'::regclass)`,
		citus.Tables), "every table distributed by repository, co-located with files")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::regclass::text LIKE 'river%'`),
		"River's tables stay on the coordinator")

	// Again: nothing to do, and it says so.
	r = run(t, db, "", nil, "migrate", "distribute", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rep citus.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Tables, len(citus.Tables))
	for _, tb := range rep.Tables {
		require.Equal(t, citus.AlreadyDistributed, tb.Action, tb.Name)
		require.Positive(t, tb.Shards, tb.Name)
	}
	r = run(t, db, "", nil, "migrate", "distribute")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "relay: every table was already distributed by repository; nothing changed")
}

// A database with failed POIs distributes, and its counts stay what they
// were: the counts triggers are dropped and the counts tables emptied (on
// a distributed table the triggers would run on the worker nodes, which do
// not have them), and relay failed stats counts the rows it copied, once.
func TestCitusMigrateDistribute_KeepsTheCountsOfRowsItCopies(t *testing.T) {
	t.Parallel()
	db := citusDB(t)
	r := run(t, db, "", nil, "publish", "demo_sample.jsonl")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	failed := testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`)
	require.Positive(t, failed, "the demo's sample has POIs that fail")
	require.Equal(t, failed, testdb.Count(t, db.Pool, `SELECT coalesce(sum(n), 0)::int FROM failed_pois_counts`))

	r = run(t, db, "", nil, "migrate", "distribute")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "relay: distributed 7 tables by repository")
	require.Contains(t, r.stdout, "relay: dropped the 8 counts triggers of failed_pois (failed_pois_count_insert, ")
	require.Equal(t, failed, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'failed_pois'::regclass AND tgname = ANY($1)`,
		citus.CountsTriggers))
	for _, table := range []string{"failed_pois_counts", "failed_pois_signature_counts", "failed_pois_hourly_counts"} {
		require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM `+table), "%s is emptied: it is no longer kept", table)
	}
	r = run(t, db, "", nil, "failed", "stats", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var st struct {
		Total int `json:"total"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	require.Equal(t, failed, st.Total, "relay failed stats counts the rows")

	// Again: the triggers are gone, and nothing is said about them.
	r = run(t, db, "", nil, "migrate", "distribute")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "dropped")
}

// publishDemoAndRepositories publishes the demo's sample and
// repositoryAnalyses (POIs of which fail) with relay publish and runs the
// worker until idle.
func publishDemoAndRepositories(t *testing.T, db *testdb.DB) {
	t.Helper()
	corpus := filepath.Join(t.TempDir(), "repositories.jsonl")
	require.NoError(t, os.WriteFile(corpus, []byte(repositoryAnalyses), 0o600))
	for _, f := range []string{"demo_sample.jsonl", corpus} {
		r := run(t, db, "", nil, "publish", f)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	r := run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
}
