package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/pgbouncer"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestGenerate_IsDeterministicAndConsistent(t *testing.T) {
	t.Parallel()
	a, err := Generate(20, 50, 0.05, 42)
	require.NoError(t, err)
	b, err := Generate(20, 50, 0.05, 42)
	require.NoError(t, err)
	require.Equal(t, a.NDJSON(), b.NDJSON(), "same seed, same corpus")
	c, err := Generate(20, 50, 0.05, 43)
	require.NoError(t, err)
	require.NotEqual(t, a.NDJSON(), c.NDJSON())

	require.Equal(t, 1000, a.POIs)
	require.Len(t, a.Malformed, 50)
	require.Len(t, a.ValidIDs, 950)
	require.Len(t, a.Lines, 20)
	valid := map[string]bool{}
	for _, id := range a.ValidIDs {
		valid[id] = true
	}
	for _, e := range a.Edges {
		require.True(t, valid[e.Source] && valid[e.Target], "edge %v between valid POIs", e)
		require.NotEqual(t, e.Source[:6], e.Target[:6], "edge %v crosses files", e)
	}
	require.Greater(t, len(a.Edges), 950, "most POIs have edges")
	for _, l := range a.Lines {
		require.True(t, json.Valid(l))
	}
}

func TestRun_RejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), &Config{Scenarios: []string{"postgres-restart", "meteor"}, RescueAfter: time.Second, JobTimeout: 2 * time.Second})
	require.ErrorContains(t, err, "--allow-pg-restart")
	require.ErrorContains(t, err, `invalid scenario "meteor"`)
	require.ErrorContains(t, err, "invalid rescue-after")
}

// TestRun_KillAndSIGTERMScenariosLoseNothing runs a tiny chaos run against
// the test server: a worker SIGKILLed three times and restarted, and workers
// sent SIGTERM with batches in flight; every invariant must hold.
func TestRun_KillAndSIGTERMScenariosLoseNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds relay and waits for River's rescuer (~20 s); runs without -short")
	}
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := Run(ctx, &Config{
		Files: 300, POIsPerFile: 50, Malformed: 0.02, Kills: 3, SIGTERMs: 2, Seed: 6,
		Scenarios:    []string{ScenarioKill, ScenarioSIGTERM},
		DatabaseURL:  testdb.ServerURL(t),
		KillDelayMin: 30 * time.Millisecond, KillDelayMax: 150 * time.Millisecond,
		ScenarioTimeout: 3 * time.Minute,
		Progress:        &progress,
	})
	require.NoError(t, err, progress.String())
	require.True(t, rep.Passed(), progress.String())
	require.Len(t, rep.Results, 2)

	kill := rep.Results[0]
	require.Equal(t, ScenarioKill, kill.Scenario)
	require.Equal(t, 3, kill.Kills)
	require.Zero(t, kill.Lost)
	require.Zero(t, kill.Duplicated)
	require.Equal(t, 15000-300, kill.Check.POIsStored)
	require.Equal(t, 300, kill.Check.FailedPOIRows)
	require.Zero(t, kill.Check.JobsRunning)

	term := rep.Results[1]
	require.Equal(t, ScenarioSIGTERM, term.Scenario)
	require.GreaterOrEqual(t, term.SIGTERMs, 1)
	require.Less(t, term.SIGTERMExitMax, ShutdownTimeoutDefault+sigtermMargin)
	require.Zero(t, term.Lost+term.Duplicated)

	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "kill      PASS")
	require.True(t, strings.Contains(progress.String(), "kill  3 after"), progress.String())
}

// TestRun_ShortScenariosBehindPgBouncer is `relay-chaos --short` with every
// relay process behind a stock transaction-pooling PgBouncer
// (database_pooler: transaction, migrations through database_direct_url):
// SIGKILLed workers, three workers at once, SIGTERM, an unwritable
// failed_pois, a killed reprocess and killed MapReduce workers. Each
// scenario ends with the corpus's relationships and failed_pois exactly, as
// over a direct connection (the scenarios' checks compare with the corpus's
// truth and the direct reference run).
func TestRun_ShortScenariosBehindPgBouncer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds relay and runs six chaos scenarios (~1 min); runs without -short")
	}
	if _, err := pgbouncer.Binary(); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	scenarios := []string{ScenarioKill, ScenarioScaleOut, ScenarioSIGTERM, ScenarioSafetyNet, ScenarioReprocess, ScenarioMapReduce}
	rep, err := Run(ctx, &Config{
		Files: 100, POIsPerFile: 100, Kills: 5, Seed: 11, Scenarios: scenarios,
		DatabaseURL:  testdb.ServerURL(t),
		PgBouncer:    true,
		KillDelayMin: 50 * time.Millisecond, KillDelayMax: 300 * time.Millisecond,
		ScenarioTimeout: 4 * time.Minute,
		Progress:        &progress,
	})
	require.NoError(t, err, progress.String())
	require.Contains(t, progress.String(), "relay connects through PgBouncer (pool_mode = transaction)")
	require.True(t, rep.Passed(), progress.String())
	require.Len(t, rep.Results, len(scenarios))
	for _, res := range rep.Results {
		require.Zero(t, res.Lost+res.Duplicated, res.Scenario)
		require.Equal(t, rep.Edges, res.Check.Relationships, res.Scenario)
		require.Equal(t, rep.Malformed, res.Check.FailedPOIRows, res.Scenario)
	}
}

// A wait ends at once on a hopeless condition (a worker that exited while
// work remained), saying what it waited for, instead of at the scenario's
// deadline; other errors are tolerated until the deadline.
func TestWaitFor_EndsAtOnceWhenHopeless(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := 0
	err := waitFor(ctx, time.Millisecond, time.Hour, "every batch to complete", func(context.Context) (bool, error) {
		calls++
		if calls < 3 {
			return false, errors.New("connection refused")
		}
		return false, hopeless(errors.New("scale-out-worker-03 exited 1"))
	})
	require.EqualError(t, err, "gave up waiting for every batch to complete: scale-out-worker-03 exited 1")
	require.Equal(t, 3, calls)

	err = waitFor(ctx, time.Millisecond, 20*time.Millisecond, "a batch in flight", func(context.Context) (bool, error) {
		return false, errors.New("connection refused")
	})
	require.ErrorContains(t, err, "timed out after 20ms waiting for a batch in flight (last error: connection refused)")
}
