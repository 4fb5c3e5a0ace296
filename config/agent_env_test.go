package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
)

// agent_env is a list from every source: a repeated flag (values may hold
// commas and blanks), blank-separated entries in RELAY_AGENT_ENV, a list in
// the config file; the usual precedence picks one source's list.
func TestLoad_AgentEnvIsAListFromEverySource(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "relay.yaml")
	require.NoError(t, os.WriteFile(file, []byte("agent_env: [GOPATH, \"NO_PROXY=a,b\"]\nagent_user: nobody\n"), 0o600))

	cfg, err := config.Load(flags(t, "--config", file), envOf(nil))
	require.NoError(t, err)
	require.Equal(t, []string{"GOPATH", "NO_PROXY=a,b"}, cfg.AgentEnv)
	require.Equal(t, "nobody", cfg.AgentUser)

	cfg, err = config.Load(flags(t, "--config", file), envOf(map[string]string{"RELAY_AGENT_ENV": " API_KEY \tMODE=x,y  "}))
	require.NoError(t, err)
	require.Equal(t, []string{"API_KEY", "MODE=x,y"}, cfg.AgentEnv, "the environment beats the file")

	cfg, err = config.Load(flags(t, "--config", file, "--agent-env", "API_KEY", "--agent-env", "NOTE=a b, c", "--agent-env=EMPTY="),
		envOf(map[string]string{"RELAY_AGENT_ENV": "OTHER"}))
	require.NoError(t, err)
	require.Equal(t, []string{"API_KEY", "NOTE=a b, c", "EMPTY="}, cfg.AgentEnv, "a repeated flag beats both, each value as given")

	cfg, err = config.Load(flags(t), envOf(nil))
	require.NoError(t, err)
	require.Empty(t, cfg.AgentEnv)
	require.Empty(t, cfg.AgentUser)
}

// RELAY_* and PG* names are refused, saying why, and a value is never
// shown.
func TestLoad_AgentEnvRefusesRelaysAndTheDatabasesVariables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--agent-env", "RELAY_DATABASE_URL"}, want: "invalid agent_env: RELAY_DATABASE_URL: RELAY_* variables are relay's own"},
		{env: map[string]string{"RELAY_AGENT_ENV": "OK PGPASSWORD=hunter2"}, want: "invalid agent_env: PGPASSWORD: PG* variables are the database's"},
		{args: []string{"--agent-env", "9LIVES=hunter2"}, want: `invalid agent_env: "9LIVES" is not a variable name`},
		{args: []string{"--agent-user", "no body"}, want: `invalid agent_user: "no body" must be a user name or a numeric uid`},
	} {
		_, err := config.Load(flags(t, tc.args...), envOf(tc.env))
		require.ErrorContains(t, err, tc.want, "%v %v", tc.args, tc.env)
		require.NotContains(t, err.Error(), "hunter2")
	}
}
