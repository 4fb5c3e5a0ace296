package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/chaos"
	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/pgbouncer"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/worker"
)

// runEnv runs relay with only env's RELAY_* settings (no flags added).
func runEnv(ctx context.Context, env map[string]string, stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	code := cli.Main(ctx, args, cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	return result{code, out.String(), errOut.String()}
}

// The first deliverable: every command works behind a stock
// transaction-pooling PgBouncer (database_pooler: transaction,
// database_direct_url for migrate), and what it computes equals a direct
// connection's: a corpus published in shuffled order by two publishers
// while three workers run gives the relationships and failed_pois that one
// publisher and one worker give over a direct connection; reprocess,
// failed, dlq, mapreduce, status, analyze and demo agree too.
func TestPooler_EveryCommandBehindPgBouncerMatchesADirectConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref, db := testdb.New(t), testdb.New(t)
	bouncer := pgbouncer.ForTest(t, db.URL)
	workdir := t.TempDir()
	direct := map[string]string{"RELAY_DATABASE_URL": ref.URL, "RELAY_DATABASE_SCHEMA": ref.Schema,
		"RELAY_MAPREDUCE_WORKDIR": workdir}
	pooled := map[string]string{"RELAY_DATABASE_URL": bouncer.URL(db.URL), "RELAY_DATABASE_SCHEMA": db.Schema,
		"RELAY_DATABASE_POOLER": "transaction", "RELAY_MAPREDUCE_WORKDIR": workdir}

	// What the issue found: settings sent at connect are refused.
	r := runEnv(ctx, map[string]string{"RELAY_DATABASE_URL": bouncer.URL(db.URL), "RELAY_DATABASE_SCHEMA": db.Schema}, "", "status")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "unsupported startup parameter")
	// Behind the pooler, settings that are not the role's defaults are
	// named, with the SQL that sets them.
	r = runEnv(ctx, pooled, "", "status")
	require.Equal(t, cli.ExitRuntime, r.code)
	require.Contains(t, r.stderr, "statement_timeout is 0 (relay's statement_timeout is 1m0s)")
	require.Contains(t, r.stderr, `SET search_path = "relay";`)
	// migrate needs a session: without database_direct_url every subcommand says so.
	for _, sub := range []string{"status", "down"} {
		r = runEnv(ctx, pooled, "", "migrate", sub)
		require.Equal(t, cli.ExitUsage, r.code, "migrate %s", sub)
		require.Contains(t, r.stderr, "set database_direct_url (RELAY_DATABASE_DIRECT_URL)", "migrate %s", sub)
	}

	pooled["RELAY_DATABASE_DIRECT_URL"] = db.URL
	opts := database.OptionsFromConfig(db.Config(), "test")
	require.NoError(t, database.SetSessionDefaults(ctx, db.URL, opts))
	require.NoError(t, bouncer.Reconnect(ctx, db.URL))

	for _, env := range []map[string]string{direct, pooled} {
		r = runEnv(ctx, env, "", "migrate", "up")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "schema is up to date")
		r = runEnv(ctx, env, "", "migrate", "status")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.NotContains(t, r.stdout, "pending")
	}

	// Publish and work: direct in file order with one worker; pooled
	// shuffled, from two publishers, while three workers run.
	corpus, err := chaos.Generate(40, 25, 0.04, 7)
	require.NoError(t, err)
	r = runEnv(ctx, direct, string(corpus.NDJSON()), "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = runEnv(ctx, direct, "", "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	lines := append([][]byte(nil), corpus.Lines...)
	mrand.New(mrand.NewPCG(3, 5)).Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	workCtx, stopWorkers := context.WithCancel(ctx)
	var workers sync.WaitGroup
	workerResults := make([]result, 3)
	for i := range workerResults {
		workers.Go(func() { workerResults[i] = runEnv(workCtx, pooled, "", "worker") })
	}
	var publishers sync.WaitGroup
	publishResults := make([]result, 2)
	for half := range publishResults {
		var in bytes.Buffer
		for i := half; i < len(lines); i += 2 {
			in.Write(lines[i])
			in.WriteByte('\n')
		}
		publishers.Go(func() { publishResults[half] = runEnv(ctx, pooled, in.String(), "publish") })
	}
	publishers.Wait()
	for _, r := range publishResults {
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	require.NoError(t, worker.WaitIdle(waitCtx, db.Pool, nil))
	stopWorkers()
	workers.Wait()
	for i, r := range workerResults {
		require.Equal(t, cli.ExitOK, r.code, "worker %d: %s", i, r.stderr)
		require.Contains(t, r.stderr, "river_synchronous_commit is not applied behind a transaction pooler", "said, not silently dropped")
	}
	r = runEnv(ctx, pooled, "", "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	want := relationshipRows(t, ref.Pool)
	require.Len(t, want, len(corpus.Edges))
	require.Equal(t, want, relationshipRows(t, db.Pool))
	require.NotEmpty(t, failedRows(t, ref.Pool))
	require.Equal(t, failedRows(t, ref.Pool), failedRows(t, db.Pool))

	// reprocess (the malformed POIs fail again), then failed's and dlq's
	// views agree.
	for _, env := range []map[string]string{direct, pooled} {
		r = runEnv(ctx, env, "", "reprocess", "--status", "new", "--yes")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		r = runEnv(ctx, env, "", "worker", "--until-idle")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	require.Equal(t, failedRows(t, ref.Pool), failedRows(t, db.Pool))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT min(attempts) FROM failed_pois`), "reprocessed once")
	for _, args := range [][]string{
		{"failed", "stats", "--json"},
		{"dlq", "stats", "--json"},
	} {
		rd, rp := runEnv(ctx, direct, "", args...), runEnv(ctx, pooled, "", args...)
		require.Equal(t, cli.ExitOK, rp.code, "%q: %s", args, rp.stderr)
		require.Equal(t, rd.code, rp.code)
		require.Equal(t, timestamps.ReplaceAllString(rd.stdout, "TIME"), timestamps.ReplaceAllString(rp.stdout, "TIME"), "%q", args)
	}
	// Row ids and samples differ with the order rows were written in.
	for _, args := range [][]string{{"failed", "list", "--json"}, {"failed", "analyze", "--json"}} {
		r = runEnv(ctx, pooled, "", args...)
		require.Equal(t, cli.ExitOK, r.code, "%q: %s", args, r.stderr)
	}
	r = runEnv(ctx, pooled, "", "status")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	// mapreduce, and its dead letters through dlq.
	agent, _ := testAgent(t)
	input := writeInput(t, `{"id":"ok-1","kind":"good"}`, `{"id":"ok-2","kind":"good"}`, `{"id":"inv","kind":"invalid"}`)
	for _, env := range []map[string]string{direct, pooled} {
		r = runEnv(ctx, agentsEnv(t, env), "", "mapreduce", "run", "--input", input, "--agent", agent, "--job-id", "job1", "--wait")
		require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
		require.Contains(t, r.stderr, "1 of 3 items did not succeed (1 dead-lettered)")
		r = runEnv(ctx, env, "", "mapreduce", "status", "job1")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		r = runEnv(ctx, env, "", "dlq", "list", "--job-id", "job1")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "inv")
	}

	// analyze publishes Go source and works it.
	root := writeTree(t, map[string]string{
		"calc/add.go":   "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc/twice.go": "package calc\n\nfunc Twice(a int) int { return Add(a, a) }\n",
	})
	for _, env := range []map[string]string{direct, pooled} {
		r = runEnv(ctx, env, "", "analyze", root, "--work")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	require.Equal(t, relationshipRows(t, ref.Pool), relationshipRows(t, db.Pool))

	// demo creates its own database (through database_direct_url) and
	// prints the same summary as a direct run.
	demo := func(env map[string]string) string {
		r := runEnv(ctx, env, "", "demo")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		// Failed POIs' ids follow the order batches ran in, in both.
		out := regexp.MustCompile(`(?m)^  psql .*$`).ReplaceAllString(r.stdout, "  psql URL")
		out = regexp.MustCompile(`applied in [0-9.]+[µm]?s`).ReplaceAllString(out, "applied in DURATION")
		lines := strings.Split(regexp.MustCompile(`(?m)^#\d+ `).ReplaceAllString(out, "#N "), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	directDemo, pooledDemo := demoDatabase(t), demoDatabase(t)
	wantDemo := demo(map[string]string{"RELAY_DATABASE_URL": directDemo})
	require.Contains(t, wantDemo, "relationships")
	require.Equal(t, wantDemo, demo(map[string]string{"RELAY_DATABASE_URL": bouncer.URL(pooledDemo),
		"RELAY_DATABASE_DIRECT_URL": pooledDemo, "RELAY_DATABASE_POOLER": config.PoolerTransaction}))
}

// timestamps matches the times in JSON output, which differ between runs.
var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)

// demoDatabase names a database for relay demo to create on the test
// server, dropped when t ends.
func demoDatabase(t *testing.T) string {
	t.Helper()
	server := testdb.ServerURL(t)
	u, err := url.Parse(server)
	require.NoError(t, err)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("relay_test_db_%d_demo_%s", time.Now().Unix(), hex.EncodeToString(b))
	u.Path = "/" + name
	t.Cleanup(func() { require.NoError(t, database.Drop(context.Background(), server, name)) })
	return u.String()
}

func relationshipRows(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, pool, `SELECT source_poi_id || ' ' || type || ' ' || target_poi_id FROM relationships ORDER BY 1`)
}

func failedRows(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, pool, `SELECT concat_ws(' ', file_id, coalesce(poi_id, '-'), error_class, status, attempts, error_signature)
		FROM failed_pois ORDER BY 1`)
}

func queryStrings(t *testing.T, pool *pgxpool.Pool, sql string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}
