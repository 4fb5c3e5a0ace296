package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/relay-dev/relay/internal/agent"
)

// nobody is the user the tests run agents as when they run as root.
const nobody = "nobody"

// agentUser is the user this test's agents run as: nil (relay's own) unless
// the tests run as root, whom relay never runs an agent as; then nobody.
func agentUser(t *testing.T) *agent.User {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := agent.LookupUser(nobody)
	require.NoError(t, err, "the tests run as root and run agents as nobody")
	return u
}

// searchable makes the directories above dir up to the temporary directory
// searchable by others (a test's temporary directories are in one that is
// 0700), so an agent running as another user can reach dir.
func searchable(t *testing.T, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for p := filepath.Dir(dir); strings.HasPrefix(p, tmp+string(os.PathSeparator)); p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(p, fi.Mode().Perm()|0o111))
	}
}

// agentDir is a t.TempDir() this test's agents can use: when they run as
// another user (the tests run as root) it is theirs to write and they can
// reach it; the scripts written into it are executable by them.
func agentDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if u := agentUser(t); u != nil {
		require.NoError(t, os.Chown(dir, int(u.UID), int(u.GID)))
		searchable(t, dir)
	}
	return dir
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("relay switches an agent's user only when it runs as root; this test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
}

// The finding: as root, relay started agents as root. Now it
// refuses, saying to set agent_user, and the agent never runs.
func TestRunner_RefusesToRunAgentsAsRoot(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	dir := agentDir(t)
	marker := filepath.Join(dir, "ran")
	root, err := agent.LookupUser("root")
	require.NoError(t, err)
	for _, u := range []*agent.User{nil, root} {
		r := &agent.Runner{Argv: []string{script(t, dir, "touch "+marker)}, BaseDir: filepath.Join(dir, "work"), User: u}
		o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
		require.False(t, o.Succeeded)
		require.Equal(t, agent.ErrorTypeWorktreeError, o.ErrorType)
		require.Equal(t, agent.StepPrepareAgent, o.Step)
		require.Contains(t, o.Message, "set agent_user")
		require.Nil(t, o.ExitCode)
		require.NoFileExists(t, marker, "the agent did not run")
	}
	require.ErrorIs(t, agent.CheckRunAs(nil), agent.ErrRunsAsRoot)
	require.ErrorContains(t, agent.CheckRunAs(root), `agent_user "root" is root`)
	require.NoError(t, agent.CheckRunAs(agentUser(t)))
}

// relay's own user (not root) runs agents as itself; it cannot switch.
func TestCheckRunAs_NonRootRunsAgentsAsItself(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("runs as root: TestRunner_RefusesToRunAgentsAsRoot covers root")
	}
	require.NoError(t, agent.CheckRunAs(nil))
	require.NoError(t, agent.CheckRunAs(&agent.User{Name: "me", UID: uint32(os.Geteuid())}))
	require.ErrorContains(t, agent.CheckRunAs(&agent.User{Name: "other", UID: uint32(os.Geteuid()) + 1}),
		"cannot run agents as another user")
}

// As root, an agent runs as agent_user: its uid and gid, no supplementary
// groups (root's are not inherited), that user's HOME, USER and LOGNAME, in
// a working directory it owns; relay keeps the log.
func TestRunner_AgentRunsAsAgentUserInADirectoryItOwns(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	u := agentUser(t)
	dir := agentDir(t)
	work := filepath.Join(dir, "work")
	r := &agent.Runner{Argv: []string{script(t, dir, `echo "$(id -u) $(id -g) [$(id -G)] $HOME $USER $LOGNAME"
touch "$RELAY_WORKDIR/mine" || exit 9
touch "`+work+`/not-mine" 2>/dev/null && exit 8
exit 3`)}, BaseDir: work, User: u}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.Equal(t, agent.ErrorTypeCommandFailed, o.ErrorType, o.Message)
	require.Equal(t, 3, *o.ExitCode, "the agent could write its directory, and nothing of relay's: %s", o.StderrTail)
	log, err := os.ReadFile(o.LogPath)
	require.NoError(t, err)
	want := strconv.Itoa(int(u.UID)) + " " + strconv.Itoa(int(u.GID)) + " [" + strconv.Itoa(int(u.GID)) + "] " +
		u.Home + " " + u.Name + " " + u.Name
	require.Contains(t, string(log), want)
	require.Contains(t, string(log), "# relay: runs as nobody (uid 65534")

	owner := func(p string) (uint32, os.FileMode) {
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		return fi.Sys().(*syscall.Stat_t).Uid, fi.Mode().Perm()
	}
	uid, mode := owner(o.Workdir)
	require.Equal(t, u.UID, uid, "the attempt's directory is the agent's")
	require.Equal(t, os.FileMode(0o700), mode)
	uid, mode = owner(filepath.Join(o.Workdir, "mine"))
	require.Equal(t, u.UID, uid)
	uid, mode = owner(o.LogPath)
	require.Equal(t, uint32(0), uid, "relay writes the log, so it keeps it")
	require.Equal(t, os.FileMode(0o600), mode)
	for _, p := range []string{work, filepath.Dir(filepath.Dir(o.Workdir)), filepath.Dir(o.Workdir)} {
		uid, mode = owner(p)
		require.Equal(t, uint32(0), uid, p)
		require.Equal(t, os.FileMode(0o711), mode&0o777, "%s: searchable, not listable or writable, by the agent", p)
	}
	// A later attempt removes the agent's directory, symlinks and all.
	require.NoError(t, os.Symlink("/etc", filepath.Join(o.Workdir, "etc")))
	o2 := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	require.Equal(t, 3, *o2.ExitCode)
	require.FileExists(t, "/etc/passwd")
}

// A workdir or program the agent's user cannot reach is an error that says
// which directory is in the way, before anything runs.
func TestPrepareBaseDir_SaysWhichDirectoryAgentUserCannotReach(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	u := agentUser(t)
	closed := t.TempDir() // in the test's own temporary directory: 0700, root's
	err := agent.PrepareBaseDir(filepath.Join(closed, "work"), u)
	require.ErrorContains(t, err, "agent_user nobody (uid 65534) cannot reach mapreduce workdir")
	require.ErrorContains(t, err, filepath.Dir(closed)+" is mode 0700")

	prog := filepath.Join(closed, "agent.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o700))
	require.ErrorContains(t, agent.CheckProgram(prog, u), "cannot reach agent program")
	searchable(t, prog)
	require.NoError(t, os.Chmod(closed, 0o711))
	require.ErrorContains(t, agent.CheckProgram(prog, u), "cannot execute agent program")
	require.NoError(t, os.Chmod(prog, 0o755))
	require.NoError(t, agent.CheckProgram(prog, u))
	require.NoError(t, agent.CheckProgram("true", u), "a bare name is found in PATH when the agent starts")

	// relay makes its own base directory searchable; not its parents.
	require.NoError(t, agent.PrepareBaseDir(filepath.Join(closed, "work"), u))
	fi, err := os.Stat(filepath.Join(closed, "work"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o711), fi.Mode().Perm())
}

// The second finding: an agent that dumps its parent's
// /proc/<pid>/environ read relay's database password, because relay ran it
// as root and being non-dumpable stops everyone but root. (And the agent
// gets none of relay's supplementary groups.) The test runs a
// stand-in for relay (this test binary, re-executed) with a secret in the
// environment it starts with, non-dumpable as relay makes itself; it runs a
// probe as root, which reads the secret (what the issue saw), then the same
// probe through the Runner as agent_user, which must not.
func TestRunner_AgentUserCannotReadRelaysEnvironment(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		relayStandIn(t)
		return
	}
	t.Parallel()
	requireRoot(t)
	dir := agentDir(t)
	probe := script(t, dir, `cat /proc/$PPID/environ 2>&1 | tr '\0' '\n'; cat /proc/$PPID/cmdline >/dev/null 2>&1 && echo cmdline-readable
echo "groups=[$(id -G)]"`)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunner_AgentUserCannotReadRelaysEnvironment$")
	// relay with a supplementary group (adm, 4), which its agents must not
	// inherit.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{4}}}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), helperEnv + "=1", "PROBE=" + probe, "WORK=" + filepath.Join(dir, "work"),
		"RELAY_DATABASE_URL=postgres://relay:" + secret + "@db/relay"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	root, asAgentUser, ok := strings.Cut(string(out), "\n==== as agent_user ====\n")
	require.True(t, ok, "%s", out)
	if !strings.Contains(root, secret) {
		// Root without CAP_SYS_PTRACE (some containers) cannot either.
		t.Logf("root could not read the stand-in's environment here: %s", root)
	}
	require.NotContains(t, asAgentUser, secret, "agent_user read relay's environment")
	require.Contains(t, asAgentUser, "Permission denied")
	require.Contains(t, asAgentUser, "cmdline-readable", "the probe ran as agent_user")
	require.Contains(t, root, "groups=[0 4]", "the stand-in has a supplementary group")
	u := agentUser(t)
	require.Contains(t, asAgentUser, "groups=["+strconv.Itoa(int(u.GID))+"]", "the agent has none of relay's groups")
}

const (
	helperEnv = "AGENT_TEST_RELAY_STAND_IN"
	secret    = "s3cr3t-in-relays-environment"
)

// relayStandIn is relay for TestRunner_AgentUserCannotReadRelaysEnvironment:
// non-dumpable, as cmd/relay's harden makes relay, with the secret in the
// environment it started with. It prints what the probe printed as root,
// then what it printed as agent_user.
func relayStandIn(t *testing.T) {
	require.NoError(t, unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0))
	out, _ := exec.Command(os.Getenv("PROBE")).CombinedOutput() // as root
	os.Stdout.Write(out)
	os.Stdout.WriteString("\n==== as agent_user ====\n")
	r := &agent.Runner{Argv: []string{os.Getenv("PROBE")}, BaseDir: os.Getenv("WORK"), User: agentUser(t)}
	o := r.Run(context.Background(), agent.Task{JobID: "j", ItemID: "1", Attempt: 1, Data: []byte(`{}`)})
	if !o.Succeeded {
		t.Fatalf("probe as agent_user: %s: %s", o.ErrorType, o.Message)
	}
	os.Stdout.Write(o.Result)
}
