package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/agent"
)

func TestResolveEnv(t *testing.T) {
	t.Parallel()
	relayEnv := map[string]string{"API_KEY": "sk-from-env", "EMPTY": "", "RELAY_DATABASE_URL": "postgres://u:pw@db/x"}
	lookup := func(k string) (string, bool) { v, ok := relayEnv[k]; return v, ok }
	for _, tc := range []struct {
		name  string
		specs []string
		want  []string
		err   string
	}{
		{name: "none", specs: nil, want: nil},
		{name: "NAME takes relay's value", specs: []string{"API_KEY"}, want: []string{"API_KEY=sk-from-env"}},
		{name: "NAME set empty", specs: []string{"EMPTY"}, want: []string{"EMPTY="}},
		{name: "NAME=VALUE as given", specs: []string{"GOFLAGS=-mod=mod", "NO_PROXY=a,b c"},
			want: []string{"GOFLAGS=-mod=mod", "NO_PROXY=a,b c"}},
		{name: "a later entry replaces", specs: []string{"API_KEY", "X=1", "API_KEY=override"},
			want: []string{"X=1", "API_KEY=override"}},
		{name: "missing NAME", specs: []string{"NOT_SET"}, err: "agent_env: NOT_SET: relay's environment has no NOT_SET to pass on"},
		{name: "relay's own", specs: []string{"RELAY_DATABASE_URL"}, err: "RELAY_* variables are relay's own"},
		{name: "relay's own with a value", specs: []string{"RELAY_JOB_ID=x"}, err: "RELAY_* variables are relay's own"},
		{name: "the database's", specs: []string{"PGPASSWORD=hunter2"}, err: "PG* variables are the database's connection settings and credentials"},
		{name: "not a name", specs: []string{"1X=y"}, err: `"1X" is not a variable name`},
		{name: "empty", specs: []string{""}, err: `"" is not a variable name`},
		{name: "blank in name", specs: []string{"A B=c"}, err: `"A B" is not a variable name`},
	} {
		got, err := agent.ResolveEnv(tc.specs, lookup)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			for _, secret := range []string{"pw", "hunter2", "sk-from-env", "=y", "=x", "=c"} {
				require.NotContains(t, err.Error(), secret, "%s: an error shows no value", tc.name)
			}
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
	require.Equal(t, []string{"A", "B"}, agent.EnvNames([]string{"B=1", "A=2", "B=3"}))
	require.Equal(t, []string{"C", "D"}, agent.MissingEnv([]string{"D", "A", "C"}, []string{"A=1", "B=2"}))
	require.Empty(t, agent.MissingEnv([]string{"A"}, []string{"A="}))
}

// agent_env reaches the agent: added to the allow-list, replacing a
// variable of the same name, and never RELAY_* or PG*.
func TestRunner_AddEnvReachesTheAgent(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	r := &agent.Runner{Argv: []string{script(t, dir, `env | sort`)}, BaseDir: filepath.Join(dir, "work"), User: agentUser(t),
		Env: []string{"PATH=/usr/bin:/bin", "TZ=UTC"}, AddEnv: []string{"API_KEY=sk-1", "TZ=Europe/Paris", "NO_PROXY=a,b c"}}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	got := map[string]int{}
	for _, kv := range strings.Split(strings.TrimSpace(string(o.Result)), "\n") {
		got[kv]++
	}
	for _, kv := range []string{"API_KEY=sk-1", "TZ=Europe/Paris", "NO_PROXY=a,b c", "PATH=/usr/bin:/bin", "RELAY_ITEM_ID=1"} {
		require.Equal(t, 1, got[kv], "%s once in:\n%s", kv, o.Result)
	}
	require.NotContains(t, string(o.Result), "TZ=UTC")
	log, err := os.ReadFile(o.LogPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "# relay: agent_env API_KEY NO_PROXY TZ\n", "the log names the variables, not their values")

	for _, bad := range []string{"RELAY_JOB_ID=evil", "PGPASSWORD=x", "NOVALUE"} {
		r.AddEnv = []string{bad}
		o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 2, Data: []byte(`{}`)})
		require.Equal(t, agent.ErrorTypeWorktreeError, o.ErrorType, bad)
		require.Equal(t, agent.StepPrepareAgent, o.Step, bad)
		require.Contains(t, o.Message, "agent not started: agent_env", bad)
	}
}
