package config_test

import (
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
