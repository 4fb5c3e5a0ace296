package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// firstRun is a built relay and directories for running it, in a network
// namespace of its own, as root or as nobody.
type firstRun struct {
	bin, home, tmp string
}

// setupFirstRun builds relay and makes nobody a home. It needs root: to
// make network namespaces and to switch to nobody.
func setupFirstRun(t *testing.T) *firstRun {
	t.Helper()
	if testing.Short() {
		t.Skip("builds relay and starts PostgreSQL servers")
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root on Linux (network namespaces, switching to nobody); " +
			"internal/cli's TestDemo_NoDatabaseAndNothingListening_RunsOnAThrowawayPostgreSQL runs the same path in-process as any user")
	}
	for _, tool := range []string{"unshare", "ip", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux, iproute2)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "relay-firstrun-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	f := &firstRun{bin: relayBinary(t, dir), home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "tmp")}
	require.NoError(t, os.Mkdir(f.home, 0o700))
	require.NoError(t, os.Chown(f.home, 65534, 65534))
	require.NoError(t, os.Mkdir(f.tmp, 0o755))
	return f
}

// command runs relay with args in a new network namespace, where nothing
// listens at localhost:5432 (its loopback up, so that a throwaway server
// can listen there), with no RELAY_* variable set; asNobody runs it as
// nobody with a home and cache directory of its own.
func (f *firstRun) command(ctx context.Context, asNobody bool, args ...string) *exec.Cmd {
	argv := []string{"--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "sh"}
	if asNobody {
		argv = append(argv, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")
	}
	argv = append(argv, f.bin)
	cmd := exec.CommandContext(ctx, "unshare", append(argv, args...)...)
	cmd.Dir = f.tmp
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "TMPDIR=" + f.tmp}
	if asNobody {
		cmd.Env = append(cmd.Env, "HOME="+f.home, "XDG_CACHE_HOME="+filepath.Join(f.home, "cache"))
	} else {
		cmd.Env = append(cmd.Env, "HOME="+os.Getenv("HOME"))
	}
	return cmd
}

var startedLine = regexp.MustCompile(`relay demo: started a throwaway PostgreSQL \d+\.\d+ \([^)]*\) on 127\.0\.0\.1:\d+ as user (\S+), data in (\S+);`)

// noProcessUses fails t if a process's command line names dir (a
// postgres -D dir/data left running).
func noProcessUses(t *testing.T, dir string) {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			t.Errorf("%s still runs: %s", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}

// Issue 25, item 5, done when: "A fresh clone on a machine whose
// PostgreSQL is stopped runs make demo to the end." The built relay,
// where nothing answers at localhost:5432 and no database is configured,
// runs the demo to the end on a throwaway PostgreSQL and says so: as a
// user other than root (server and data of that user's, under its cache
// directory) and as root (the server as nobody, data in the temporary
// directory). Interrupted, it stops the server and removes its data.
func TestRelayDemo_RunsToTheEndWithNoPostgreSQLRunning(t *testing.T) {
	f := setupFirstRun(t)
	t.Run("interrupted", func(t *testing.T) { interruptStopsTheServer(t, f) })
	for _, tc := range []struct {
		name     string
		asNobody bool
		dataIn   string
	}{
		{"as nobody", true, filepath.Join(f.home, "cache", "relay", "pg", "run-")},
		{"as root", false, filepath.Join(f.tmp, "relay-pg-")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := f.command(ctx, tc.asNobody, "demo")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			start := time.Now()
			out, err := cmd.Output()
			t.Logf("relay demo %s took %s", tc.name, time.Since(start))
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, stderr.String())
			stdout := string(out)
			require.Contains(t, stdout, "relay demo: no database is configured (--database-url, RELAY_DATABASE_URL or "+
				"database_url) and nothing answers at localhost:5432; starting a throwaway PostgreSQL\n")
			m := startedLine.FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			require.Equal(t, "nobody", m[1])
			require.True(t, strings.HasPrefix(m[2], tc.dataIn), "data in %s, want %s*", m[2], tc.dataIn)
			require.Contains(t, stdout, "relay demo: published 4 files, 16 POIs in 4 resolve_file jobs (one per file)")
			require.Contains(t, stdout, "3 failed POIs")
			require.Contains(t, stdout, "relay demo: stopped the throwaway PostgreSQL and removed "+m[2]+".")
			require.NoDirExists(t, m[2])
			noProcessUses(t, m[2])
		})
	}
}

// interruptStopsTheServer checks that Ctrl-C during the demo stops the
// throwaway server and removes its data before relay exits.
func interruptStopsTheServer(t *testing.T, f *firstRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := f.command(ctx, true, "demo")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var dataDir string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := startedLine.FindStringSubmatch(lines.Text()); m != nil {
			dataDir = m[2]
			break
		}
	}
	if dataDir == "" {
		_ = cmd.Wait()
		t.Fatalf("relay demo never said it started a server; stderr:\n%s", stderr.String())
	}
	require.DirExists(t, dataDir)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT)) // unshare, sh and setpriv exec'd: this is relay
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	t.Logf("relay demo after SIGINT: %v\nstdout:\n%s\nstderr:\n%s", err, rest.String(), stderr.String())
	require.Error(t, err, "the demo was interrupted")
	require.NoDirExists(t, dataDir)
	noProcessUses(t, dataDir)
}
