package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/bench"
	"github.com/relay-dev/relay/internal/testdb"
)

// TestMain_SmokeRunOfPhasesOneToFour runs the benchmark end to end with a
// tiny corpus: figures are not checked (speed targets live in the
// benchmark's output), only that each phase measured what it claims to.
func TestMain_SmokeRunOfPhasesOneToFour(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := bench.Main(context.Background(), []string{
		"--database-url", testdb.ServerURL(t), "--files", "5", "--pois-per-file", "4", "--malformed", "0.1",
		"--phases", "1,2,3,4", "--failure-rate", "0.2", "--failures-files", "5", "--json",
		"--files-per-tx", "1", // the concurrent run: workers between the publishes
	}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())

	var res bench.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.NotNil(t, res.Ceiling)
	require.EqualValues(t, 18, res.Ceiling.POIRows) // 20 POIs, 2 malformed
	require.Positive(t, res.Ceiling.RowsPerSec)

	require.NotNil(t, res.Relay)
	require.Equal(t, 20, res.Relay.POIs)
	require.EqualValues(t, res.Relay.Files, res.Relay.Jobs, "one job per file")
	require.InDelta(t, 1.0, res.Relay.JobsPerFile, 0)
	require.Equal(t, 2, res.Relay.Malformed)
	require.EqualValues(t, 2, res.Relay.FailedPOIs, "every malformed POI is in failed_pois")
	require.Equal(t, res.Ceiling.RelationshipRows, res.Relay.Relationships, "relay writes the ceiling's relationships")
	// Relay.Reresolved is not asserted: a stamp is a snapshot's xmin, and a
	// transaction of another test on the server can hold it below the
	// publishes, so that their jobs resolve references again (correctly).

	// Published while the workers run, referrers often resolve before the
	// files they call are published: the edges must come out the same.
	require.NotNil(t, res.RelayConcurrent)
	require.True(t, res.RelayConcurrent.Concurrent)
	require.EqualValues(t, res.RelayConcurrent.Files, res.RelayConcurrent.Jobs, "one job per file")
	require.EqualValues(t, 2, res.RelayConcurrent.FailedPOIs)
	require.Equal(t, res.Ceiling.RelationshipRows, res.RelayConcurrent.Relationships, "relay writes the ceiling's relationships")
	require.Positive(t, res.RelayVsCeiling)
	require.Positive(t, res.RelayVsCeilingSequential)

	require.NotNil(t, res.Baseline)
	require.EqualValues(t, res.Baseline.POIs, res.Baseline.Jobs, "the baseline has one job per POI")
	require.Equal(t, res.Relay.Relationships, res.Baseline.Relationships, "the baseline writes the same rows")
	require.Equal(t, res.Relay.FailedPOIs, res.Baseline.FailedPOIs)

	require.NotNil(t, res.Failures)
	require.Zero(t, res.Failures.Clean.FailedPOIs)
	require.Equal(t, 5, res.Failures.Failing.Malformed) // 20 well-formed + 5 malformed = 20%
	require.EqualValues(t, 5, res.Failures.Failing.FailedPOIs)
	require.Equal(t, res.Failures.Clean.Relationships, res.Failures.Failing.Relationships)
	for _, r := range []*bench.RunResult{res.Relay, res.RelayConcurrent, res.Baseline, res.Failures.Clean, res.Failures.Failing} {
		require.Positive(t, r.E2EPOIsPerSec)
		require.Positive(t, r.RowsPerSec)
		if !r.Concurrent {
			require.InDelta(t, r.PublishSeconds+r.WorkSeconds, r.TotalSeconds, 1e-9, "publish, then work")
		}
	}
	require.NotEmpty(t, res.Targets)
	require.Positive(t, res.PeakRSSBytes)
}

// TestMain_SmokeRunOfSQLPhases runs the sql and sqllatency phases on a
// tiny corpus: the SQL API's runs write what the Go publisher's write, and
// every figure is filled in, directly and through PgBouncer.
func TestMain_SmokeRunOfSQLPhases(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := bench.Main(context.Background(), []string{
		"--database-url", testdb.ServerURL(t), "--files", "6", "--pois-per-file", "4", "--malformed", "0.1",
		"--phases", "sql,sqllatency", "--files-per-tx", "2", "--rounds", "2",
		"--sql-latency-samples", "3", "--sql-latency-gap", "1ms", "--json",
	}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())

	var res bench.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	s := res.SQLPublish
	require.NotNil(t, s)
	require.Len(t, s.Rounds, 2)
	require.Equal(t, []string{"go", "sql"}, []string{s.Rounds[0].First, s.Rounds[1].First}, "the order alternates")
	for _, r := range s.Rounds {
		for _, run := range []*bench.RunResult{r.Go, r.SQL} {
			require.True(t, run.Concurrent)
			require.Equal(t, 24, run.POIs)
			require.EqualValues(t, run.Files, run.Jobs, "one job per file")
			require.EqualValues(t, 2, run.FailedPOIs, "every malformed POI is in failed_pois")
			require.Positive(t, run.E2EPOIsPerSec)
		}
		require.Positive(t, r.SQL.Relationships)
		require.Equal(t, r.Go.Relationships, r.SQL.Relationships, "the SQL API's run writes the Go publisher's relationships")
		require.InDelta(t, r.SQL.E2EPOIsPerSec/r.Go.E2EPOIsPerSec, r.SQLVsGo, 1e-9)
	}
	require.NotNil(t, s.Go)
	require.NotNil(t, s.SQL)
	require.Positive(t, s.SQLVsGo)

	l := res.SQLLatency
	require.NotNil(t, l)
	for _, run := range []*bench.LatencyRun{l.Direct, l.PgBouncer} {
		require.NotNil(t, run)
		require.Equal(t, 3, run.Samples)
		require.Positive(t, run.Min, "a job cannot start before its publish commits")
		require.LessOrEqual(t, run.Min, run.P50)
		require.LessOrEqual(t, run.P50, run.P99)
		require.LessOrEqual(t, run.P99, run.Max)
	}
	require.False(t, l.Direct.PollOnly)
	require.True(t, l.PgBouncer.PollOnly, "behind a transaction pooler River polls")
	names := make([]string, 0, len(res.Targets))
	for _, tg := range res.Targets {
		names = append(names, tg.Name)
	}
	require.Contains(t, names, "SQL API vs Go publisher, e2e POIs/s (medians of 2 rounds)")
	require.Contains(t, names, "SQL API first attempt p99, PgBouncer (s)")
}

func TestMain_RejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--phases", "15"},
		{"--graph-pois", "10"},
		{"--sql-latency-samples", "-1"},
		{"--sql-latency-gap", "-1s"},
		{"--cli-workers", "1,0"},
		{"--rounds", "0"},
		{"--phases", "nope"},
		{"--files", "-1"},
		{"--malformed", "1"},
		{"--relay-runs", "parallel"},
	} {
		var out, errOut bytes.Buffer
		code := bench.Main(context.Background(), append(args, "--database-url", "postgres://nobody@127.0.0.1:1/x"), &out, &errOut)
		require.NotEqual(t, 0, code, args)
		require.Contains(t, errOut.String(), "invalid", args)
	}
}

// TestMain_SmokeRunOfTheRepositoriesPhase runs the repositories phase on a
// tiny corpus: the order alternates, and the split corpus resolves exactly
// what the one-repository corpus does.
func TestMain_SmokeRunOfTheRepositoriesPhase(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := bench.Main(context.Background(), []string{
		"--database-url", testdb.ServerURL(t), "--files", "8", "--pois-per-file", "4", "--malformed", "0.1",
		"--phases", "repositories", "--repositories", "2", "--rounds", "2", "--json",
	}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())

	var res bench.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	p := res.Repositories
	require.NotNil(t, p)
	require.Equal(t, 2, p.N)
	require.Len(t, p.Rounds, 2)
	require.Equal(t, []string{"one", "many"}, []string{p.Rounds[0].First, p.Rounds[1].First}, "the order alternates")
	for _, r := range p.Rounds {
		for _, run := range []*bench.RunResult{r.One, r.Many} {
			require.True(t, run.Concurrent)
			require.Equal(t, 32, run.POIs)
			require.EqualValues(t, run.Files, run.Jobs, "one job per file")
			require.EqualValues(t, 3, run.FailedPOIs, "every malformed POI is in failed_pois")
		}
		require.Positive(t, r.One.Relationships)
		require.Equal(t, r.One.Relationships, r.Many.Relationships, "the split corpus resolves what one repository does")
		require.InDelta(t, r.Many.E2EPOIsPerSec/r.One.E2EPOIsPerSec, r.ManyVsOne, 1e-9)
	}
	require.Positive(t, p.ManyVsOne)
}

// TestMain_SmokeRunOfTheGraphPhase runs the graph phase on its smallest
// corpus: the tree's root has its 1,110 callers to depth 3, and every
// figure is filled in and checked against a target.
func TestMain_SmokeRunOfTheGraphPhase(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := bench.Main(context.Background(), []string{
		"--database-url", testdb.ServerURL(t), "--phases", "graph", "--graph-pois", "5000", "--json",
	}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())

	var res bench.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	g := res.Graph
	require.NotNil(t, g)
	require.EqualValues(t, 5000, g.POIs)
	// 1,110 tree edges and about 3 for each other POI (a few drawn twice).
	require.InDelta(t, 1110+3*(5000-1111), g.Relationships, 60)
	require.Equal(t, 1110, g.DepthThreeResults)
	for _, l := range []bench.Latency{g.Callers, g.Callees, g.DepthThree, g.Page, g.Complete} {
		require.Positive(t, l.P50)
		require.LessOrEqual(t, l.P50, l.P99)
		require.LessOrEqual(t, l.P99, l.Max)
	}
	var names []string
	for _, tg := range res.Targets {
		names = append(names, tg.Name)
	}
	require.Contains(t, names, "console POI page over HTTP p99 at 5000 POIs (ms)")
	require.Contains(t, names, "transitive callers, depth 3, 1110 results, p50 at 5000 POIs (ms)")
}
