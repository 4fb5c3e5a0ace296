package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/mapreduce"
)

// A MapReduce job's page names the variables its agents are given
// (agent_env), as relay mapreduce status does: names only, since relay
// stores no values.
func TestConsole_JobPageShowsAgentEnvNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	job := &mapreduce.Job{ID: "job-env", Agent: "true", MaxRetries: 1, Parallel: 1, Timeout: time.Minute, DLQMaxItems: 100,
		Policy: mapreduce.DefaultPolicy(), AgentEnv: []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY"}}
	require.NoError(t, pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		return mapreduce.NewStore(f.db.Pool).CreateTx(ctx, tx, f.jobs, job,
			[]mapreduce.Item{{ID: "1", Data: []byte(`{"id":"1"}`)}})
	}))

	code, body, _ := f.get(t, "/jobs/job-env")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dt>Agent environment</dt><dd id="agent-env"><code>ANTHROPIC_API_KEY</code> <code>GITHUB_TOKEN</code> `)
	require.Contains(t, body, "relay stores no values")
	require.NotContains(t, body, "ANTHROPIC_API_KEY=", "a name, never NAME=VALUE")

	// A job without agent_env says so.
	f.seedDeadLettered(t, "job-plain", "item-1")
	code, body, _ = f.get(t, "/jobs/job-plain")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dd id="agent-env"><span class="muted">none (agent_env)</span></dd>`)
}
