package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

func TestWarnDatabaseURLFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args      []string
		warn      bool
		flag, env string // default: --database-url, RELAY_DATABASE_URL
	}{
		{args: []string{"mapreduce", "run", "--database-url", "postgres://root:s3cr3t@db/relay"}, warn: true},
		{args: []string{"--database-url=postgresql://u:s3cr3t@db:5432/relay?sslmode=disable", "worker"}, warn: true},
		{args: []string{"--database-url", "postgres://u@db/relay?password=s3cr3t"}, warn: true},
		{args: []string{"--database-url", "host=db user=u password=s3cr3t dbname=relay"}, warn: true},
		{args: []string{"--database-url", "postgres://u@db/relay"}},
		{args: []string{"--database-url", "host=db user=u dbname=relay"}},
		{args: []string{"worker"}},
		{args: []string{"--", "--database-url", "postgres://root:s3cr3t@db/relay"}},
		{args: []string{"--database-url"}},
		{args: []string{"migrate", "up", "--database-direct-url", "postgres://root:s3cr3t@db/relay"}, warn: true,
			flag: "--database-direct-url", env: "RELAY_DATABASE_DIRECT_URL"},
		{args: []string{"--database-direct-url=postgres://root@db/relay"}},
	} {
		var buf bytes.Buffer
		warnDatabaseURLFlag(&buf, tc.args)
		if !tc.warn {
			require.Empty(t, buf.String(), "%q", tc.args)
			continue
		}
		flag, env := cmp.Or(tc.flag, "--database-url"), cmp.Or(tc.env, "RELAY_DATABASE_URL")
		require.Contains(t, buf.String(), "relay: warning: "+flag+" ", "%q", tc.args)
		require.Contains(t, buf.String(), env)
		require.NotContains(t, buf.String(), "s3cr3t", "the warning redacts the password")
		require.Equal(t, 1, strings.Count(buf.String(), "\n"), "one warning")
	}
}

func TestTakeEnv_SnapshotsAndUnsetsRelayVariables(t *testing.T) {
	t.Setenv("RELAY_DATABASE_URL", "postgres://root:s3cr3t@db/relay")
	t.Setenv("RELAY_LOG_LEVEL", "debug")
	t.Setenv("PGHOST", "db")
	lookup := takeEnv()
	v, ok := lookup("RELAY_DATABASE_URL")
	require.True(t, ok)
	require.Equal(t, "postgres://root:s3cr3t@db/relay", v, "the configuration still reads it")
	_, ok = os.LookupEnv("RELAY_DATABASE_URL")
	require.False(t, ok, "the process environment no longer holds it")
	_, ok = os.LookupEnv("RELAY_LOG_LEVEL")
	require.False(t, ok)
	require.Equal(t, "db", os.Getenv("PGHOST"), "pgx still reads PG* variables")
}

// relayBinary builds ./cmd/relay into a directory everyone can read.
func relayBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "relay")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// The scenario, through the real binary: an agent dumps its
// environment and reads relay's /proc/<pid>/environ and cmdline. No secret
// of relay's reaches it, its result or its log. When the test runs as root,
// relay runs as nobody so that only the agent's user being relay's, not
// root's powers, is in play.
func TestRelay_AgentCannotReadDatabaseSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	db := testdb.New(t)
	dir, err := os.MkdirTemp("", "relay-secrets-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := relayBinary(t, dir)
	work := filepath.Join(dir, "work")
	home := filepath.Join(dir, "home")
	for _, d := range []string{work, home} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	agentPath := filepath.Join(dir, "probe.sh")
	require.NoError(t, os.WriteFile(agentPath, []byte(`#!/bin/sh
cat >/dev/null
environ=$(cat /proc/$PPID/environ 2>&1 | tr '\0' '\n'); environ_status=$?
cmdline=$(tr '\0' ' ' < /proc/$PPID/cmdline 2>&1)
env >&2
printf '%s\n' "$environ" "$cmdline" >&2
printf '{"env":"%s","environ":"%s","cmdline":"%s"}\n' "$(env | base64 -w0)" "$(printf '%s' "$environ" | base64 -w0)" "$(printf '%s' "$cmdline" | base64 -w0)"
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "items.ndjson"), []byte("{\"id\":\"a\"}\n{\"id\":\"b\"}\n"), 0o644))

	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "s3cr3t-env") // the test server trusts; the password is only bait
	secrets := []string{"s3cr3t-env", "s3cr3t-pg", "s3cr3t-aws"}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C",
		"RELAY_DATABASE_URL=" + u.String(), "RELAY_DATABASE_SCHEMA=" + db.Schema, "RELAY_MAPREDUCE_WORKDIR=" + work,
		"PGPASSWORD=s3cr3t-pg", "AWS_SECRET_ACCESS_KEY=s3cr3t-aws"}

	relay := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = dir, env
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return string(out), code
	}
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(work, 65534, 65534))
		require.NoError(t, os.Chown(home, 65534, 65534))
	}

	out, code := relay("mapreduce", "run", "--input", "items.ndjson", "--agent", "./probe.sh", "--job-id", "secrets", "--wait")
	require.Equal(t, 0, code, out)
	for _, s := range secrets {
		require.NotContains(t, out, s)
	}

	rows, err := db.Pool.Query(t.Context(), `SELECT item_id, result FROM mapreduce_items WHERE job_id = 'secrets'`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var result []byte
		require.NoError(t, rows.Scan(&id, &result))
		var probe struct{ Env, Environ, Cmdline string }
		require.NoError(t, json.Unmarshal(result, &probe), "%s", result)
		decoded := map[string]string{}
		for k, v := range map[string]string{"env": probe.Env, "environ": probe.Environ, "cmdline": probe.Cmdline} {
			b, err := base64.StdEncoding.DecodeString(v)
			require.NoError(t, err)
			decoded[k] = string(b)
			for _, s := range secrets {
				require.NotContains(t, string(b), s, "item %s: the agent's %s holds a secret", id, k)
			}
		}
		require.Contains(t, decoded["env"], "RELAY_ITEM_ID="+id, "the probe ran")
		require.NotContains(t, decoded["env"], "PGPASSWORD")
		require.NotContains(t, decoded["env"], "RELAY_DATABASE")
		require.Contains(t, decoded["environ"], "ermission denied", "relay's environ is not readable")
		require.Contains(t, decoded["cmdline"], "mapreduce run", "the probe read the command line")
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 2, n)

	// Nor is any secret in the attempts' logs.
	logs := 0
	require.NoError(t, filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, s := range secrets {
			require.NotContains(t, string(b), s, p)
		}
		if strings.HasSuffix(p, ".log") {
			logs++
			require.Contains(t, string(b), "RELAY_ITEM_ID=", "the log holds the probe's output")
		}
		return nil
	}))
	require.Equal(t, 2, logs)

	// A password in --database-url is warned about, redacted.
	out, code = relay("--database-url", u.String(), "mapreduce", "status", "secrets")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "relay: warning: --database-url")
	require.Contains(t, out, "xxxxx")
	require.NotContains(t, out, "s3cr3t-env")
}
