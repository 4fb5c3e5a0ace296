package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("relay", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	require.NoError(t, fs.Parse(args))
	return fs
}

func TestLoad_PrecedenceIsFlagThenEnvThenFileThenDefault(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "relay.yaml")
	require.NoError(t, os.WriteFile(file, []byte(
		"database_url: postgres://file@db/relay\nworker_concurrency: 7\npoi_timeout: 9s\nlog_format: json\n"), 0o600))

	cfg, err := config.Load(flags(t, "--config", file, "--worker-concurrency", "3"),
		envOf(map[string]string{"RELAY_WORKER_CONCURRENCY": "5", "RELAY_POI_TIMEOUT": "2s", "RELAY_DATABASE_URL": "postgres://env@db/relay"}))
	require.NoError(t, err)
	require.Equal(t, 3, cfg.WorkerConcurrency, "flag beats env and file")
	require.Equal(t, 2*time.Second, cfg.POITimeout, "env beats file")
	require.Equal(t, "postgres://env@db/relay", cfg.DatabaseURL)
	require.Equal(t, "json", cfg.LogFormat, "file beats default")
	require.Equal(t, config.JobTimeoutDefault, cfg.JobTimeout, "default when nothing is set")
}

func TestLoad_DefaultsWithNothingSet(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(flags(t), envOf(nil))
	require.NoError(t, err)
	require.Equal(t, config.Default(), cfg)
	require.Equal(t, "postgres://localhost:5432/relay?sslmode=disable", cfg.DatabaseURL)
}

func TestLoad_InvalidValuesNameTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"RELAY_WORKER_CONCURRENCY": "0"}, "invalid worker_concurrency: 0 must be between 1 and 10000"},
		{map[string]string{"RELAY_LOG_FORMAT": "xml"}, `invalid log_format: "xml" must be text or json`},
		{map[string]string{"RELAY_LOG_LEVEL": "loud"}, "invalid log_level"},
		{map[string]string{"RELAY_JOB_TIMEOUT": "2h"}, "invalid rescue_stuck_jobs_after"},
		{map[string]string{"RELAY_DATABASE_SCHEMA": "Robert'); DROP TABLE x;--"}, "invalid database_schema"},
		{map[string]string{"RELAY_POI_TIMEOUT": "-1s"}, "invalid poi_timeout"},
		{map[string]string{"RELAY_POI_TIMEOUT": "soon"}, "poi_timeout"},
	} {
		_, err := config.Load(flags(t), envOf(tc.env))
		require.Error(t, err, "%v", tc.env)
		require.Contains(t, err.Error(), tc.want)
	}
}

func TestLoad_MissingConfigFileIsAnError(t *testing.T) {
	t.Parallel()
	_, err := config.Load(flags(t, "--config", "/nonexistent/relay.yaml"), envOf(nil))
	require.ErrorContains(t, err, `"/nonexistent/relay.yaml"`)
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://relay:s3cr3t@db:5432/relay":                   "postgres://relay:xxxxx@db:5432/relay",
		"error connecting to postgres://u:p%40ss@h/db: refused":   "error connecting to postgres://u:xxxxx@h/db: refused",
		"host=db user=relay password=s3cr3t dbname=relay":         "host=db user=relay password=xxxxx dbname=relay",
		"host=db password='with space' dbname=relay":              "host=db password=xxxxx dbname=relay",
		"postgres://localhost:5432/relay?sslmode=disable":         "postgres://localhost:5432/relay?sslmode=disable",
		"postgres://user@localhost/relay":                         "postgres://user@localhost/relay",
		"two: postgres://a:one@x/db and postgresql://b:two@y/db2": "two: postgres://a:xxxxx@x/db and postgresql://b:xxxxx@y/db2",
	} {
		require.Equal(t, want, config.Redact(in))
	}
}

func TestSettings_EveryKeyHasHelpAndAFlag(t *testing.T) {
	t.Parallel()
	fs := flags(t)
	for _, s := range config.Settings() {
		require.NotEmpty(t, s.Usage, "key %s has no help text", s.Key)
		require.True(t, strings.HasPrefix(s.Env, "RELAY_"))
		require.NotNil(t, fs.Lookup(strings.TrimPrefix(s.Flag, "--")), "no flag for %s", s.Key)
	}
}

// A misspelt key in a config file was silently ignored, and the default
// used instead: every unknown key is an error naming it and the closest
// known key.
func TestLoad_UnknownConfigFileKeysAreErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"relay.yaml": {"databse_url: postgres://adv_pw:T4po#Secret@db/relay\nworker_concurrency: 3\n",
			[]string{`unknown key "databse_url" (did you mean "database_url"?)`}},
		"relay.toml": {"worker-concurrency = 3\nlog_levl = \"debug\"\n",
			[]string{`unknown key "worker-concurrency" (did you mean "worker_concurrency"?)`, `unknown key "log_levl" (did you mean "log_level"?)`}},
		"relay.json": {`{"database": {"url": "postgres://db/relay"}, "something_else": 1}`,
			[]string{`unknown key "database.url"`, `unknown key "something_else"`}},
	} {
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(tc.body), 0o600))
		_, err := config.Load(flags(t, "--config", file), envOf(nil))
		require.Error(t, err, name)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, name)
		}
		require.Contains(t, err.Error(), file)
		require.NotContains(t, err.Error(), "T4po", "the value is not printed")
	}

	file := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(file, []byte("DATABASE_URL: postgres://db/relay\nworker_concurrency: 3\n"), 0o600))
	cfg, err := config.Load(flags(t, "--config", file), envOf(nil))
	require.NoError(t, err, "keys are case-insensitive")
	require.Equal(t, 3, cfg.WorkerConcurrency)
}

// The environment is shared with other programs, so unknown RELAY_*
// variables only give warnings, and those relay sets for MapReduce agents
// are not unknown.
func TestUnknownEnv_WarnsAboutMisspeltVariables(t *testing.T) {
	t.Parallel()
	got := config.UnknownEnv([]string{
		"RELAY_DATABSE_URL=postgres://x", "RELAY_DATABASE_URL=postgres://y", "RELAY_JOB_ID=7", "PATH=/bin", "RELAY_WHATEVER=1",
	}, "RELAY_JOB_ID")
	require.Equal(t, []string{
		"unknown environment variable RELAY_DATABSE_URL is ignored (did you mean RELAY_DATABASE_URL?)",
		"unknown environment variable RELAY_WHATEVER is ignored",
	}, got)
}

// A bad --http-addr failed only when the worker listened, after connecting
// to the database, and exited 1: it is a validation error (a usage error).
func TestLoad_HTTPAddrMustBeHostPort(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"nonsense", ":99999", "127.0.0.1", "127.0.0.1:", "localhost:no-such-service", "a b:80", "http://127.0.0.1:9090"} {
		_, err := config.Load(flags(t, "--http-addr", bad), envOf(nil))
		require.ErrorContains(t, err, "invalid http_addr", bad)
		require.ErrorContains(t, err, fmt.Sprintf("%q", bad))
	}
	for _, good := range []string{"", "127.0.0.1:9090", ":0", "[::1]:9090", "localhost:9090", "0.0.0.0:65535"} {
		_, err := config.Load(flags(t, "--http-addr", good), envOf(nil))
		require.NoError(t, err, good)
	}
}
