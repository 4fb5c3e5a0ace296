package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relay-dev/relay/internal/agent"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "./agent.sh", want: []string{"./agent.sh"}},
		{in: "  python3  -m  tool\t--flag=1 \n", want: []string{"python3", "-m", "tool", "--flag=1"}},
		{in: `sh -c 'jq .id | tr a-z A-Z'`, want: []string{"sh", "-c", "jq .id | tr a-z A-Z"}},
		{in: `echo "a \"b\" \$HOME \\ \x"`, want: []string{"echo", `a "b" $HOME \ \x`}},
		{in: `a\ b c\"d`, want: []string{"a b", `c"d`}},
		{in: `x '' ""`, want: []string{"x", "", ""}},
		{in: `it's`, err: "unterminated ' quote"},
		{in: `echo "open`, err: `unterminated " quote`},
		{in: `echo a | b`, err: `unquoted '|'`},
		{in: `run $HOME`, err: `unquoted '$'`},
		{in: "run `id`", err: "unquoted '`'"},
		{in: `a; rm -rf /`, err: `unquoted ';'`},
		{in: `x # comment`, err: `unquoted '#'`},
		{in: `tag#1`, want: []string{"tag#1"}},
		{in: `trailing\`, err: "trailing backslash"},
		{in: "   ", err: "empty"},
	} {
		got, err := agent.Split(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "input %q", tc.in)
			continue
		}
		require.NoError(t, err, "input %q", tc.in)
		require.Equal(t, tc.want, got, "input %q", tc.in)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"a b", `'x y' "z\"w"`, `a\ b`, `sh -c 'x | y'`, "", `"`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv, err := agent.Split(s)
		if err == nil && len(argv) == 0 {
			t.Fatalf("Split(%q) returned no words and no error", s)
		}
	})
}

// script writes an agent shell script into dir and returns its path.
func script(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

func TestRunner_ClassifiesOutcomesFromFacts(t *testing.T) {
	t.Parallel()
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name    string
		body    string
		data    string
		timeout time.Duration
		want    agent.ErrorType // "" for success
		exit    *int
		msg     string
	}{
		{name: "success", body: `cat >/dev/null; echo '{"ok":1}'`, want: "", exit: code(0)},
		{name: "exit 3", body: `echo "boom at /tmp/x.go:12" >&2; exit 3`, want: agent.ErrorTypeCommandFailed, exit: code(3), msg: "agent exited with code 3: boom at /tmp/x.go:12"},
		{name: "validation exit", body: `echo "name missing" >&2; exit 65`, want: agent.ErrorTypeValidationFailed, exit: code(65), msg: "rejected the item"},
		{name: "timeout", body: `sleep 30`, timeout: 200 * time.Millisecond, want: agent.ErrorTypeTimeout, msg: "timed out after 200ms"},
		{name: "oom kill", body: `kill -KILL $$`, want: agent.ErrorTypeResourceExhausted, exit: code(137), msg: "SIGKILL"},
		{name: "segfault", body: `kill -SEGV $$`, want: agent.ErrorTypeCommandFailed, exit: code(139), msg: "SIGSEGV"},
		{name: "invalid item", body: `exit 0`, data: `{"unterminated"`, want: agent.ErrorTypeValidationFailed, msg: "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := agentDir(t)
			r := &agent.Runner{Argv: []string{script(t, dir, tc.body)}, BaseDir: filepath.Join(dir, "work"),
				Timeout: tc.timeout, KillGrace: 200 * time.Millisecond, User: agentUser(t)}
			data := tc.data
			if data == "" {
				data = `{"id":"x"}`
			}
			o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "x", Attempt: 1, Data: []byte(data)})
			require.Equal(t, tc.want, o.ErrorType, o.Message)
			require.Equal(t, tc.want == "", o.Succeeded)
			require.Equal(t, tc.exit, o.ExitCode)
			require.Contains(t, o.Message, tc.msg)
			if tc.want == "" {
				require.JSONEq(t, `{"ok":1}`, string(o.Result))
				require.NoDirExists(t, o.Workdir, "a successful attempt's directory is removed")
				require.FileExists(t, o.LogPath, "its log is kept")
			} else if tc.name != "invalid item" {
				require.DirExists(t, o.Workdir, "a failed attempt's directory is kept")
				require.True(t, o.WorkdirKept)
			}
		})
	}
}

func TestRunner_CommandNotFoundAndUnpreparableWorkdir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	searchable(t, dir)
	r := &agent.Runner{Argv: []string{filepath.Join(dir, "missing")}, BaseDir: dir, User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`1`)})
	require.Equal(t, agent.ErrorTypeCommandFailed, o.ErrorType, o.Message)
	require.Equal(t, 127, *o.ExitCode)

	file := filepath.Join(dir, "not-a-dir")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	r = &agent.Runner{Argv: []string{"true"}, BaseDir: file, User: agentUser(t)}
	o = r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`1`)})
	require.Equal(t, agent.ErrorTypeWorktreeError, o.ErrorType)
	require.Equal(t, agent.StepPrepareWorktree, o.Step)
	require.Nil(t, o.ExitCode)
}

// The deadline kills the agent's whole process group, background children
// included.
func TestRunner_TimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	pidFile := filepath.Join(dir, "child.pid")
	r := &agent.Runner{Argv: []string{script(t, dir, `sleep 60 & echo $! > `+pidFile+`; wait`)},
		BaseDir: filepath.Join(dir, "work"), Timeout: 300 * time.Millisecond, KillGrace: 200 * time.Millisecond,
		User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.Equal(t, agent.ErrorTypeTimeout, o.ErrorType)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH }, 5*time.Second, 20*time.Millisecond,
		"the background child must be killed with the group")
}

// A hostile item reaches the agent only as bytes on stdin and in
// RELAY_ITEM_ID: nothing in it is run.
func TestRunner_HostileItemIsDataOnly(t *testing.T) {
	t.Parallel()
	dir := agentDir(t)
	work := filepath.Join(dir, "work")
	hostileID := "$(touch pwned-id)`touch pwned-id2`; rm -rf / #\n../../escape"
	data := []byte(`{"cmd":"\"; rm -rf / ; $(touch pwned) ` + "`touch pwned2`" + `\nline2 \u0001\u00ff \\x00"}`)
	r := &agent.Runner{Argv: []string{script(t, dir, `cat > "$RELAY_WORKDIR/stdin"; printf '%s' "$RELAY_ITEM_ID" > "$RELAY_WORKDIR/id"; exit 1`)},
		BaseDir: work, Env: []string{"PATH=" + os.Getenv("PATH")}, User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "job", ItemID: hostileID, Attempt: 2, Data: data})
	require.Equal(t, agent.ErrorTypeCommandFailed, o.ErrorType)

	got, err := os.ReadFile(filepath.Join(o.Workdir, "stdin"))
	require.NoError(t, err)
	require.Equal(t, data, got, "the agent saw exactly the item's bytes")
	gotID, err := os.ReadFile(filepath.Join(o.Workdir, "id"))
	require.NoError(t, err)
	require.Equal(t, hostileID, string(gotID))
	require.True(t, strings.HasPrefix(o.Workdir, work+string(os.PathSeparator)), "the item id cannot move the worktree: %s", o.Workdir)
	for _, d := range []string{dir, work, o.Workdir, "."} {
		for _, name := range []string{"pwned", "pwned2", "pwned-id", "pwned-id2"} {
			require.NoFileExists(t, filepath.Join(d, name))
		}
	}
}

func TestRunner_AgentGetsItsEnvironmentButNoRelaySecrets(t *testing.T) {
	dir := agentDir(t)
	t.Setenv("RELAY_DATABASE_URL", "postgres://relay:secret@db/relay")
	r := &agent.Runner{Argv: []string{script(t, dir, `env | grep '^RELAY_' | sort`)}, BaseDir: filepath.Join(dir, "work"),
		User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j1", ItemID: "i1", Attempt: 3, Data: []byte(`{}`)})
	require.True(t, o.Succeeded, o.Message)
	require.Equal(t, "RELAY_ATTEMPT=3\nRELAY_ITEM_ID=i1\nRELAY_JOB_ID=j1\nRELAY_WORKDIR="+o.Workdir+"\n", string(o.Result))
}

func TestFailureDetail_ConvertsOutcome(t *testing.T) {
	t.Parallel()
	_, ok := agent.FailureOf(&agent.Outcome{Succeeded: true}, 1, "a", 1)
	require.False(t, ok, "a success has no failure entry")

	exit := 3
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := &agent.Outcome{ErrorType: agent.ErrorTypeCommandFailed, Message: "agent exited with code 3", Step: agent.StepRunAgent,
		ExitCode: &exit, StderrTail: "trace", StartedAt: start, Duration: 1500 * time.Millisecond,
		Workdir: "/w/attempt-2", WorkdirKept: true, LogPath: "/w/attempt-2.log"}
	d, ok := agent.FailureOf(o, 2, "host/river-job-9", 9)
	require.True(t, ok)
	require.Equal(t, agent.FailureDetail{AttemptNumber: 2, Timestamp: start, ErrorType: agent.ErrorTypeCommandFailed,
		ErrorMessage: "agent exited with code 3", ExitCode: &exit, StackTrace: "trace", AgentID: "host/river-job-9",
		StepFailed: agent.StepRunAgent, DurationMS: 1500, LogLocation: "/w/attempt-2.log", WorktreePath: "/w/attempt-2",
		RiverJobID: 9}, d)
	*o.ExitCode = 4
	require.Equal(t, 3, *d.ExitCode, "the entry does not alias the outcome")
}

func TestSafeName_StaysInsideOneDirectory(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"..", ".", "../../etc", "a/b", "", "x\x00y", strings.Repeat("z", 500)} {
		n := agent.SafeName(id)
		require.NotContains(t, n, "/")
		require.NotEqual(t, "..", n)
		require.False(t, strings.HasPrefix(n, "."), n)
		require.LessOrEqual(t, len(n), 80)
	}
	require.NotEqual(t, agent.SafeName("a/b"), agent.SafeName("a_b"), "different ids never share a directory")
}
