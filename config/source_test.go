package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
)

// relay demo starts a throwaway PostgreSQL only when nobody chose a
// database: a flag, a variable or a config file key naming one, even one
// equal to the default, counts as a choice.
func TestDatabaseConfigured_OnlyWhenAFlagVariableOrFileKeyNamesADatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	withURL := write("url.yaml", "database_url: "+config.DatabaseURLDefault+"\n")
	withDirect := write("direct.toml", "database_direct_url = \"postgres://db/relay\"\n")
	without := write("other.yaml", "worker_concurrency: 3\ndatabase_schema: demo\n")

	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{name: "nothing", want: false},
		{name: "other settings only", args: []string{"--worker-concurrency", "3", "--database-schema", "x"},
			env: map[string]string{"RELAY_LOG_LEVEL": "debug", "PGHOST": "db"}, want: false},
		{name: "config file without a database", args: []string{"--config", without}, want: false},
		{name: "flag", args: []string{"--database-url", "postgres://db/relay"}, want: true},
		{name: "flag equal to the default", args: []string{"--database-url", config.DatabaseURLDefault}, want: true},
		{name: "direct flag", args: []string{"--database-direct-url", "postgres://db/relay"}, want: true},
		{name: "variable", env: map[string]string{"RELAY_DATABASE_URL": "postgres://db/relay"}, want: true},
		{name: "empty variable", env: map[string]string{"RELAY_DATABASE_URL": ""}, want: true},
		{name: "direct variable", env: map[string]string{"RELAY_DATABASE_DIRECT_URL": "postgres://db/relay"}, want: true},
		{name: "config file key", args: []string{"--config", withURL}, want: true},
		{name: "config file direct key", args: []string{"--config", withDirect}, want: true},
	} {
		got, err := config.DatabaseConfigured(flags(t, tc.args...), envOf(tc.env))
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}

	_, err := config.DatabaseConfigured(flags(t, "--config", filepath.Join(dir, "missing.yaml")), envOf(nil))
	require.ErrorContains(t, err, "missing.yaml")
	got, err := config.DatabaseConfigured(nil, envOf(nil))
	require.NoError(t, err)
	require.False(t, got)
}
