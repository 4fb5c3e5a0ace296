package agent_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/agent"
)

// The agent's environment is an allow-list: secrets in relay's environment
// (the database URL, PG* variables, cloud keys) never reach it.
func TestRunner_AgentEnvironmentIsAnAllowList(t *testing.T) {
	dir := agentDir(t)
	t.Setenv("RELAY_DATABASE_URL", "postgres://root:s3cr3t-env@db/relay")
	t.Setenv("RELAY_OTHER_URL", "https://u:s3cr3t-other@example.com")
	t.Setenv("PGPASSWORD", "s3cr3t-pg")
	t.Setenv("PGPASSFILE", "/home/x/.pgpass")
	t.Setenv("PGSERVICEFILE", "/home/x/.pg_service.conf")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t-aws")
	t.Setenv("LC_ALL", "C")
	t.Setenv("TZ", "UTC")
	envPath, err := exec.LookPath("env")
	require.NoError(t, err)
	r := &agent.Runner{Argv: []string{envPath}, BaseDir: filepath.Join(dir, "work"), User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "i", Attempt: 1, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	require.NotContains(t, string(o.Result), "s3cr3t")

	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(o.Result)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	allowed := map[string]bool{"RELAY_JOB_ID": true, "RELAY_ITEM_ID": true, "RELAY_ATTEMPT": true, "RELAY_WORKDIR": true}
	for _, a := range agent.AllowedEnv {
		allowed[a] = true
	}
	for k := range got {
		require.True(t, allowed[k] || strings.HasPrefix(k, "LC_"), "variable %s is not on the allow-list", k)
	}
	require.Equal(t, "C", got["LC_ALL"])
	require.Equal(t, "UTC", got["TZ"])
	require.Equal(t, os.Getenv("PATH"), got["PATH"])
	require.Equal(t, "i", got["RELAY_ITEM_ID"])
}

// pidFrom reads the pid an agent wrote into path.
func pidFrom(t *testing.T, path string) int {
	t.Helper()
	var b []byte
	require.Eventually(t, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	}, 5*time.Second, 10*time.Millisecond, "the agent writes its child's pid")
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// gone reports whether pid no longer runs (it may linger as a zombie until
// whoever adopted it reaps it).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := bytes.Cut(stat, []byte(") "))
	return len(rest) > 0 && (rest[0] == 'Z' || rest[0] == 'X')
}

// An agent that exits 0 while a background child still holds its stdout
// succeeds at once, and the child is killed with the process group.
func TestRunner_KillsWhatTheAgentLeftBehindOnSuccess(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	pidFile := filepath.Join(dir, "child.pid")
	r := &agent.Runner{Argv: []string{"sh", "-c", `sleep 300 & echo $! > ` + pidFile + `; echo '{"ok":1}'`},
		BaseDir: filepath.Join(dir, "work"), KillGrace: 5 * time.Second, User: agentUser(t)}
	start := time.Now()
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, "%s: %s", o.ErrorType, o.Message)
	require.Less(t, time.Since(start), 2*time.Second, "no waiting for the child's output")
	require.JSONEq(t, `{"ok":1}`, string(o.Result))
	require.Contains(t, o.Warning, "relay killed them")
	pid := pidFrom(t, pidFile)
	require.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 10*time.Millisecond,
		"the background child must be killed with the group")
	log, err := os.ReadFile(o.LogPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "# relay: warning: the agent exited leaving processes running")
}

// A failing agent's leftovers are killed too.
func TestRunner_KillsWhatTheAgentLeftBehindOnFailure(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	pidFile := filepath.Join(dir, "child.pid")
	r := &agent.Runner{Argv: []string{"sh", "-c", `sleep 300 >/dev/null 2>&1 & echo $! > ` + pidFile + `; exit 3`},
		BaseDir: filepath.Join(dir, "work"), User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.Equal(t, agent.ErrorTypeCommandFailed, o.ErrorType)
	pid := pidFrom(t, pidFile)
	require.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 10*time.Millisecond)
}

// setsid escapes the process group: relay cannot kill that process, but it
// stops waiting for its output and says so.
func TestRunner_SetsidEscapeeHoldingOutputIsAWarning(t *testing.T) {
	t.Parallel()
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid on this system")
	}
	dir := agentDir(t)
	pidFile := filepath.Join(dir, "escapee.pid")
	r := &agent.Runner{Argv: []string{"sh", "-c", setsid + ` sh -c 'echo $$ > ` + pidFile + `; exec sleep 300' &
while [ ! -s ` + pidFile + ` ]; do sleep 0.01; done; echo '{}'`}, BaseDir: filepath.Join(dir, "work"), User: agentUser(t)}
	start := time.Now()
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	pid := pidFrom(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.True(t, o.Succeeded, "%s: %s", o.ErrorType, o.Message)
	require.Less(t, time.Since(start), 10*time.Second)
	require.JSONEq(t, `{}`, string(o.Result))
	require.Contains(t, o.Warning, "outside its process group")
}

// An oversized result fails the attempt with a named error instead of
// being stored cut short.
func TestRunner_ResultOverMaxResultBytesFailsTheAttempt(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	r := &agent.Runner{Argv: []string{"sh", "-c", `head -c 1048586 /dev/zero | tr '\0' x`}, BaseDir: filepath.Join(dir, "work"),
		User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.False(t, o.Succeeded)
	require.Equal(t, agent.ErrorTypeResourceExhausted, o.ErrorType)
	require.Contains(t, o.Message, "agent result exceeds 1 MiB (max_result_bytes)")
	require.Contains(t, o.Message, "1048586 bytes")
	require.Nil(t, o.Result)
	require.True(t, o.ResultTruncated)
	require.True(t, o.WorkdirKept)

	r.MaxResultBytes = 1 << 21
	o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 2, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	require.Len(t, o.Result, 1048586)
}

// The log keeps its head and its tail, and says how much it dropped.
func TestRunner_LogIsCappedKeepingHeadAndTail(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	const capBytes = 64 << 10
	r := &agent.Runner{Argv: []string{"sh", "-c", `echo START >&2; head -c 3000000 /dev/zero | tr '\0' x >&2; echo; echo END >&2; echo '{}'`},
		BaseDir: filepath.Join(dir, "work"), MaxLogBytes: capBytes, User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	log, err := os.ReadFile(o.LogPath)
	require.NoError(t, err)
	require.Less(t, len(log), capBytes+1024, "the log is capped")
	s := string(log)
	require.Contains(t, s, "START")
	require.Contains(t, s, "END")
	require.Regexp(t, `# relay: \d+ bytes of the agent's output dropped here`, s)
	require.Contains(t, s, "# relay: finished after")
	require.Less(t, strings.Index(s, "START"), strings.Index(s, "dropped here"))
	require.Less(t, strings.Index(s, "dropped here"), strings.LastIndex(s, "END"))
}

// Attempts' directories and logs are private to relay's user (when agents
// run as another user, the directories above an attempt's are searchable
// by them, not listable, and the attempt's is theirs), and relay refuses a
// workdir that is a symlink, someone else's or writable by others.
func TestRunner_WorkdirIsPrivateAndSymlinksAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	searchable(t, dir)
	require.NoError(t, os.Chmod(dir, 0o711))
	base := filepath.Join(dir, "state", "mapreduce")
	u := agentUser(t)
	r := &agent.Runner{Argv: []string{"true"}, BaseDir: base, KeepSucceeded: true, User: u}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	relays := os.FileMode(0o700)
	if u != nil {
		relays = 0o711
	}
	for _, p := range []string{base, filepath.Dir(base), filepath.Dir(filepath.Dir(o.Workdir)), filepath.Dir(o.Workdir), o.Workdir} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		want := relays
		if p == o.Workdir {
			want = 0o700
		}
		require.Equal(t, want, fi.Mode().Perm(), p)
	}
	fi, err := os.Stat(o.LogPath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// A symlink where the workdir should be is not followed.
	target := filepath.Join(dir, "elsewhere")
	require.NoError(t, os.Mkdir(target, 0o700))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, link))
	r.BaseDir = link
	o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.Equal(t, agent.ErrorTypeWorktreeError, o.ErrorType)
	require.Contains(t, o.Message, "is a symlink")
	entries, err := os.ReadDir(target)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was written through the symlink")

	// Nor is a symlink planted for the log file.
	r.BaseDir = base
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o600))
	logPath := filepath.Join(base, agent.SafeName("j"), agent.SafeName("1"), "attempt-2.log")
	require.NoError(t, os.Symlink(victim, logPath))
	o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 2, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "keep", string(b))

	// A workdir others can write to is refused.
	open := filepath.Join(dir, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	r.BaseDir = open
	o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.Equal(t, agent.ErrorTypeWorktreeError, o.ErrorType)
	require.Contains(t, o.Message, "writable by other users")

	// So is one owned by another user (only root can make one to test).
	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs")
		require.NoError(t, os.Mkdir(theirs, 0o700))
		require.NoError(t, os.Chown(theirs, 65534, 65534))
		r.BaseDir = theirs
		o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
		require.Equal(t, agent.ErrorTypeWorktreeError, o.ErrorType)
		require.Contains(t, o.Message, "owned by uid 65534")
	}
}

func TestDefaultBaseDir_IsPerUser(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	require.Equal(t, filepath.Join(cache, "relay", "mapreduce"), agent.DefaultBaseDir())

	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	require.Equal(t, filepath.Join(os.TempDir(), "relay-mapreduce-"+strconv.Itoa(os.Geteuid())), agent.DefaultBaseDir())
}

func TestJoin_RoundTripsThroughSplit(t *testing.T) {
	t.Parallel()
	for _, argv := range [][]string{
		{"/usr/bin/python3", "-m", "tool"},
		{"/opt/my agent/run.sh", "it's", "", `a"b`, "$HOME", "x|y", "#tag", `back\slash`},
	} {
		got, err := agent.Split(agent.Join(argv))
		require.NoError(t, err)
		require.Equal(t, argv, got)
	}
	require.Equal(t, "/usr/bin/env A=1 ./x", agent.Join([]string{"/usr/bin/env", "A=1", "./x"}))
}

func FuzzJoin(f *testing.F) {
	f.Add("a b", "it's", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		argv := []string{a, b, c}
		for _, w := range argv {
			if !utf8.ValidString(w) {
				return
			}
		}
		got, err := agent.Split(agent.Join(argv))
		if err != nil {
			t.Fatalf("Split(Join(%q)): %v", argv, err)
		}
		if strings.Join(got, "\x00") != strings.Join(argv, "\x00") || len(got) != len(argv) {
			t.Fatalf("Split(Join(%q)) = %q", argv, got)
		}
	})
}
