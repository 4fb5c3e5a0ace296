package agent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for Runner.
const (
	KillGraceDefault      = 2 * time.Second
	MaxResultBytesDefault = 1 << 20
	MaxLogBytesDefault    = 8 << 20
	stderrTailBytes       = 4096
	// outputDrainTimeout is how long relay keeps reading an agent's stdout
	// and stderr after the agent exited and its process group was killed:
	// only a process that left the group (setsid) can still hold them open.
	outputDrainTimeout = 2 * time.Second
)

// The steps an attempt can fail in (FailureDetail.StepFailed).
const (
	StepValidateItem    = "validate_item"
	StepPrepareAgent    = "prepare_agent"
	StepPrepareWorktree = "prepare_worktree"
	StepRunAgent        = "run_agent"
)

// Runner runs one agent command. Its zero value is not usable: Argv and
// BaseDir are required.
//
// What an agent sees: the item's JSON on stdin; a fresh working directory;
// RELAY_JOB_ID, RELAY_ITEM_ID, RELAY_ATTEMPT and RELAY_WORKDIR; of relay's
// own environment, only the variables in AllowedEnv (PATH, HOME, USER,
// LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ, TMPDIR, TERM); and the variables
// the operator adds (AddEnv: agent_env). The database URL, PG* variables and
// every other secret stay out.
//
// Whom an agent runs as: never root. When relay runs as root the agent runs
// as User (agent_user), and without one Run refuses (ErrRunsAsRoot); see
// User for why.
//
// What an agent leaves: nothing running. The agent leads its own process
// group, and the whole group is killed (SIGKILL) as soon as the agent exits,
// whether it succeeded or not, and at the deadline (SIGTERM, then SIGKILL
// after KillGrace). A process that leaves the group (setsid, or a daemon that
// double-forks into a new session) escapes that: relay cannot contain it
// without cgroups. If such a process keeps the agent's stdout or stderr open,
// relay stops reading them outputDrainTimeout after the agent exited and
// records a warning (Outcome.Warning); the attempt's outcome is the agent's.
type Runner struct {
	// Argv is the command, as Split returns it.
	Argv []string
	// Timeout is the deadline for one attempt; 0 means none.
	Timeout time.Duration
	// BaseDir holds the per-attempt directories and logs:
	// BaseDir/<job>/<item>/attempt-<n>/ and .../attempt-<n>.log. It is
	// created 0700 if missing; an existing one must be a real directory (not
	// a symlink) owned by relay's user and writable by no one else
	// (PrepareBaseDir). Directories under it are 0700, logs 0600.
	// DefaultBaseDir is a per-user default.
	BaseDir string
	// KillGrace is how long the agent's process group has between SIGTERM
	// and SIGKILL at the deadline (default KillGraceDefault).
	KillGrace time.Duration
	// KeepSucceeded keeps the working directory of a successful attempt
	// (failed attempts' directories are always kept for debugging).
	KeepSucceeded bool
	// MaxResultBytes caps the agent's stdout, which is the item's result
	// (default MaxResultBytesDefault, 1 MiB). An agent that writes more
	// fails the attempt with ResourceExhausted ("agent result exceeds 1 MiB
	// (max_result_bytes)"); no part of it is stored as the result.
	MaxResultBytes int
	// MaxLogBytes caps an attempt's log file (default MaxLogBytesDefault,
	// 8 MiB): the first and the last half are kept, with a line saying how
	// many bytes were dropped between them.
	MaxLogBytes int64
	// Env is the agent's base environment; nil means the variables of this
	// process's environment named in AllowedEnv. RELAY_* variables in Env are
	// dropped: relay sets its own.
	Env []string
	// AddEnv holds NAME=VALUE variables added to the agent's environment
	// (agent_env, resolved by ResolveEnv); each replaces a variable of the
	// same name in the base. A name CheckEnvName refuses (RELAY_*, PG*)
	// fails the attempt.
	AddEnv []string
	// User is the account the agent runs as: its uid and gid, no
	// supplementary groups, its HOME, USER and LOGNAME; the attempt's
	// directory is made its. nil (or relay's own user) runs the agent as
	// relay's user, which Run refuses when that is root (CheckRunAs).
	User *User
}

// Task is one attempt at one item.
type Task struct {
	JobID   string
	ItemID  string
	Attempt int
	Data    []byte
}

// Outcome is what an attempt did.
type Outcome struct {
	Succeeded bool
	// ErrorType is empty on success.
	ErrorType ErrorType
	Message   string
	Step      string
	// Warning is set when the attempt's outcome stands but something needs
	// an operator's eye, e.g. a process the agent started outside its
	// process group kept its output open. It is in the log too.
	Warning string
	// ExitCode is the agent's exit status (128+N for a signal), nil when it
	// never ran or relay's deadline killed it.
	ExitCode *int
	Signal   string
	// StderrTail is the last 4 KiB of stderr.
	StderrTail string
	// Result is stdout; nil when it exceeded MaxResultBytes
	// (ResultTruncated), which fails the attempt.
	Result          []byte
	ResultTruncated bool
	StartedAt       time.Time
	Duration        time.Duration
	Workdir         string
	WorkdirKept     bool
	LogPath         string
	// Interrupted: the caller's context was cancelled (the worker is
	// stopping); the attempt says nothing about the item.
	Interrupted bool
}

// Run runs one attempt. It never returns an error: every failure is an
// Outcome. ctx cancelled (not timed out) gives an Interrupted outcome.
func (r *Runner) Run(ctx context.Context, t Task) *Outcome {
	start := time.Now()
	o := &Outcome{StartedAt: start.UTC()}
	defer func() { o.Duration = time.Since(start) }()

	if !json.Valid(t.Data) {
		o.fail(ErrorTypeValidationFailed, StepValidateItem, "item data is not valid JSON")
		return o
	}
	if err := cmp.Or(CheckRunAs(r.User), r.checkAddEnv()); err != nil {
		o.fail(ErrorTypeWorktreeError, StepPrepareAgent, "agent not started: "+err.Error())
		return o
	}
	itemDir := filepath.Join(r.BaseDir, SafeName(t.JobID), SafeName(t.ItemID))
	o.Workdir = filepath.Join(itemDir, "attempt-"+strconv.Itoa(t.Attempt))
	o.LogPath = o.Workdir + ".log"
	logFile, err := prepare(r.BaseDir, itemDir, o.Workdir, o.LogPath, r.User)
	if err != nil {
		o.fail(diskErrorType(err, ErrorTypeWorktreeError), StepPrepareWorktree,
			fmt.Sprintf("error preparing working directory: %v", err))
		o.WorkdirKept = dirExists(o.Workdir)
		return o
	}
	defer logFile.Close()
	o.Step = StepRunAgent
	r.run(ctx, t, o, &logWriter{f: logFile, max: cmp.Or(r.MaxLogBytes, MaxLogBytesDefault)})
	if o.Succeeded && !r.KeepSucceeded {
		_ = os.RemoveAll(o.Workdir)
	} else {
		o.WorkdirKept = true
	}
	return o
}

func (o *Outcome) fail(t ErrorType, step, msg string) {
	o.Succeeded, o.ErrorType, o.Step, o.Message = false, t, step, msg
}

// agentPipes are the agent's stdin, stdout and stderr: relay's ends and the
// agent's. relay owns the copying, so that the agent's exit, not the closing
// of its output, ends the attempt.
type agentPipes struct {
	inR, inW, outR, outW, errR, errW *os.File
}

func newAgentPipes() (*agentPipes, error) {
	var p agentPipes
	var err error
	if p.inR, p.inW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, err
	}
	return &p, nil
}

// closeChildEnds closes relay's copies of the agent's ends once it started.
func (p *agentPipes) closeChildEnds() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		_ = f.Close()
	}
}

func (p *agentPipes) closeAll() {
	for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (r *Runner) run(ctx context.Context, t Task, o *Outcome, lw *logWriter) {
	fmt.Fprintf(lw, "# relay: job %q item %q attempt %d started %s\n# relay: argv %q\n",
		t.JobID, t.ItemID, t.Attempt, o.StartedAt.Format(time.RFC3339Nano), r.Argv)
	if r.User.switches() {
		fmt.Fprintf(lw, "# relay: runs as %s (uid %d, gid %d)\n", r.User.Name, r.User.UID, r.User.GID)
	}
	if len(r.AddEnv) > 0 {
		fmt.Fprintf(lw, "# relay: agent_env %s\n", strings.Join(EnvNames(r.AddEnv), " "))
	}
	defer lw.finish()
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if r.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, r.Timeout)
	}
	defer cancel()
	grace := r.KillGrace
	if grace <= 0 {
		grace = KillGraceDefault
	}
	maxResult := r.MaxResultBytes
	if maxResult <= 0 {
		maxResult = MaxResultBytesDefault
	}
	stdout := &capWriter{max: maxResult}
	stderr := &tailWriter{max: stderrTailBytes}

	// A relative command path ("./agent.sh") means relative to the
	// worker's directory, not to the fresh working directory it runs in.
	// (`relay mapreduce run` stores an absolute path; jobs from before it
	// did may hold a relative one.)
	name := r.Argv[0]
	if strings.ContainsRune(name, filepath.Separator) && !filepath.IsAbs(name) {
		if abs, err := filepath.Abs(name); err == nil {
			name = abs
		}
	}
	pipes, err := newAgentPipes()
	if err != nil {
		o.fail(diskErrorType(err, ErrorTypeUnknown), StepRunAgent, fmt.Sprintf("error creating the agent's pipes: %v", err))
		fmt.Fprintf(lw, "# relay: %s\n", o.Message)
		return
	}
	defer pipes.closeAll()
	cmd := exec.CommandContext(runCtx, name, r.Argv[1:]...)
	cmd.Dir = o.Workdir
	cmd.Env = append(r.agentEnv(), EnvJobID+"="+t.JobID, EnvItemID+"="+t.ItemID,
		EnvAttempt+"="+strconv.Itoa(t.Attempt), EnvWorkdir+"="+o.Workdir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.inR, pipes.outW, pipes.errW
	// The agent leads its own process group, so the deadline kills it and
	// everything it started: SIGTERM first, SIGKILL after the grace period.
	// It runs as User when that is another user than relay's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.User.credential()}
	var killTimer *time.Timer
	var mu sync.Mutex
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		mu.Lock()
		killTimer = time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		mu.Unlock()
		return syscall.Kill(-pgid, syscall.SIGTERM)
	}

	if err := cmd.Start(); err != nil {
		o.fail(startErrorType(err), StepRunAgent, fmt.Sprintf("error starting agent %q: %v", r.Argv[0], err))
		if code := startExitCode(err); code != 0 {
			o.ExitCode = &code
		}
		fmt.Fprintf(lw, "# relay: %s\n", o.Message)
		return
	}
	pipes.closeChildEnds()
	pgid := cmd.Process.Pid

	// stdin: the item, then EOF. An agent that never reads it cannot block
	// relay: closing the pipe below ends the write.
	go func() {
		_, _ = pipes.inW.Write(t.Data)
		_ = pipes.inW.Close()
	}()
	var copies sync.WaitGroup
	copies.Go(func() { _, _ = io.Copy(multiWriter{lw, stdout}, pipes.outR) })
	copies.Go(func() { _, _ = io.Copy(multiWriter{lw, stderr}, pipes.errR) })

	// Wait returns when the agent exits: its stdio are files, so Wait does
	// not wait for whoever else holds them.
	waitErr := cmd.Wait()
	mu.Lock()
	if killTimer != nil {
		killTimer.Stop()
	}
	mu.Unlock()
	// The agent is reaped, so any process still in its group is one it left
	// behind (and while one lives, the group id cannot be reused): kill them.
	leftovers := syscall.Kill(-pgid, 0) == nil
	if leftovers {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	_ = pipes.inW.Close()
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	heldOpen := false
	select {
	case <-drained:
	case <-time.After(outputDrainTimeout):
		// Only a process outside the group can hold the pipes now.
		heldOpen = true
		_ = pipes.outR.Close()
		_ = pipes.errR.Close()
		<-drained
	}
	lw.finish()
	o.StderrTail = stderr.String()
	o.Result, o.ResultTruncated = stdout.buf.Bytes(), stdout.truncated
	r.classify(ctx, runCtx, cmd, waitErr, lw, o)
	if o.Succeeded && o.ResultTruncated {
		o.Result = nil
		o.fail(ErrorTypeResourceExhausted, StepRunAgent, fmt.Sprintf(
			"agent result exceeds %s (max_result_bytes): it wrote %d bytes to stdout; its log keeps the start and the end",
			byteSize(maxResult), stdout.total))
	}
	var warnings []string
	if leftovers {
		warnings = append(warnings, "the agent exited leaving processes running in its process group; relay killed them")
	}
	if heldOpen {
		warnings = append(warnings, fmt.Sprintf("a process the agent started outside its process group (setsid?) "+
			"kept its stdout or stderr open %s after the agent exited; relay stopped reading them and cannot stop that process",
			outputDrainTimeout))
	}
	if len(warnings) > 0 {
		o.Warning = strings.Join(warnings, "; ")
		fmt.Fprintf(lw, "# relay: warning: %s\n", o.Warning)
	}
	fmt.Fprintf(lw, "# relay: finished after %s: %s\n", time.Since(o.StartedAt).Round(time.Millisecond), o.summary())
}

// byteSize renders n as "1 MiB" when it is a whole number of MiB.
func byteSize(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// classify decides the outcome from facts, in this order: the caller
// stopping, the deadline, a signal, a full disk for the log, the exit code.
func (r *Runner) classify(ctx, runCtx context.Context, cmd *exec.Cmd, waitErr error, lw *logWriter, o *Outcome) {
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		o.Interrupted = true
		o.fail(ErrorTypeUnknown, StepRunAgent, "interrupted: the worker is stopping")
	case runCtx.Err() != nil: // our deadline, or the caller's
		o.fail(ErrorTypeTimeout, StepRunAgent,
			fmt.Sprintf("agent timed out after %s and was killed", r.Timeout))
	case cmd.ProcessState == nil:
		o.fail(ErrorTypeUnknown, StepRunAgent, fmt.Sprintf("error waiting for agent: %v", waitErr))
	case ws.Signaled():
		sig := ws.Signal()
		code := 128 + int(sig)
		o.ExitCode, o.Signal = &code, signalName(sig)
		if sig == syscall.SIGKILL || sig == syscall.SIGXCPU || sig == syscall.SIGXFSZ {
			o.fail(ErrorTypeResourceExhausted, StepRunAgent,
				fmt.Sprintf("agent was killed by %s (out of memory or a resource limit)", o.Signal))
		} else {
			o.fail(ErrorTypeCommandFailed, StepRunAgent, fmt.Sprintf("agent was killed by %s", o.Signal)+
				lastLine(o.StderrTail))
		}
	case lw.err != nil && diskErrorType(lw.err, "") != "":
		code := ws.ExitStatus()
		o.ExitCode = &code
		o.fail(ErrorTypeResourceExhausted, StepRunAgent, fmt.Sprintf("error writing agent log: %v", lw.err))
	case ws.ExitStatus() == 0 && waitErr == nil:
		o.Succeeded, o.ErrorType, o.Message = true, "", ""
		code := 0
		o.ExitCode = &code
	case ws.ExitStatus() == ExitCodeValidationFailed:
		code := ws.ExitStatus()
		o.ExitCode = &code
		o.fail(ErrorTypeValidationFailed, StepRunAgent,
			fmt.Sprintf("agent rejected the item (exit code %d)", code)+lastLine(o.StderrTail))
	case ws.ExitStatus() > 0:
		code := ws.ExitStatus()
		o.ExitCode = &code
		o.fail(ErrorTypeCommandFailed, StepRunAgent, fmt.Sprintf("agent exited with code %d", code)+
			lastLine(o.StderrTail))
	default:
		o.fail(ErrorTypeUnknown, StepRunAgent, fmt.Sprintf("error waiting for agent: %v", waitErr))
	}
}

func (o *Outcome) summary() string {
	if o.Succeeded {
		return "succeeded"
	}
	return fmt.Sprintf("%s: %s", o.ErrorType, o.Message)
}

// diskErrorType returns ResourceExhausted for a full disk or quota, else
// fallback.
func diskErrorType(err error, fallback ErrorType) ErrorType {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return ErrorTypeResourceExhausted
	}
	return fallback
}

func startErrorType(err error) ErrorType {
	if startExitCode(err) != 0 {
		return ErrorTypeCommandFailed
	}
	return diskErrorType(err, ErrorTypeUnknown)
}

// startExitCode mirrors the shell: 127 for a command not found, 126 for one
// that cannot be executed, 0 otherwise.
func startExitCode(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return 127
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return 126
	}
	return 0
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// lastLine returns ": " and the last non-empty line of s (at most 300
// bytes), or "".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n\r\t "), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return ""
	}
	if len(l) > 300 {
		l = strings.ToValidUTF8(l[:300], "") + "…"
	}
	return ": " + l
}

func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT",
		syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP", syscall.SIGPIPE: "SIGPIPE", syscall.SIGBUS: "SIGBUS",
		syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGQUIT: "SIGQUIT", syscall.SIGFPE: "SIGFPE",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}

// SafeName turns an id into one path element: letters, digits, '.', '_' and
// '-' are kept (up to 64 bytes), anything else becomes '_', and a short hash
// of the whole id is appended so that different ids never share a directory
// and no id can climb out of BaseDir.
func SafeName(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 64 {
			break
		}
		if r < 0x80 && (r == '.' || r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	name := strings.TrimLeft(b.String(), ".")
	return name + "-" + hex.EncodeToString(sum[:4])
}

// logWriter writes to the attempt's log and remembers the first error
// instead of returning it, so a full disk never stops the agent's output
// from being read (the outcome reports it). Past max bytes it keeps the
// first half in the file and the last half in memory; finish writes a line
// saying how much was dropped, then that tail.
type logWriter struct {
	mu       sync.Mutex
	f        *os.File
	err      error
	max      int64 // 0: no cap
	written  int64 // bytes written to the file before finish
	tail     []byte
	overflow int64 // bytes past the head, kept in tail or dropped
	finished bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if !w.finished && w.max > 0 {
		head := w.max / 2
		if room := head - w.written; int64(len(p)) > room {
			room = max(room, 0)
			w.write(p[:room])
			w.keepTail(p[room:])
			return n, nil
		}
	}
	w.write(p)
	return n, nil
}

func (w *logWriter) write(p []byte) {
	if w.err == nil && len(p) > 0 {
		m, err := w.f.Write(p)
		w.written += int64(m)
		if err != nil {
			w.err = err
		}
	}
}

// keepTail keeps the last max-max/2 bytes of what goes past the head.
func (w *logWriter) keepTail(p []byte) {
	keep := int(w.max - w.max/2)
	w.overflow += int64(len(p))
	w.tail = append(w.tail, p...)
	if len(w.tail) > 2*keep {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
	}
}

// finish writes the kept tail after a line counting the dropped bytes;
// later writes (relay's own closing lines) are not capped.
func (w *logWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.finished = true
	if w.overflow == 0 {
		return
	}
	keep := int(w.max - w.max/2)
	tail := w.tail
	if len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	dropped := w.overflow - int64(len(tail))
	if dropped > 0 {
		w.write(fmt.Appendf(nil, "\n# relay: %d bytes of the agent's output dropped here: the log keeps the first and the last %d bytes (max_log_bytes %d)\n",
			dropped, keep, w.max))
	}
	w.write(tail)
	w.tail = nil
}

// capWriter keeps the first max bytes and counts them all.
type capWriter struct {
	buf       bytes.Buffer
	max       int
	total     int64
	truncated bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if room := w.max - w.buf.Len(); room < len(p) {
		w.truncated = true
		if room > 0 {
			w.buf.Write(p[:room])
		}
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}

// tailWriter keeps the last max bytes.
type tailWriter struct {
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	b := w.buf
	if len(b) > w.max {
		b = b[len(b)-w.max:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// multiWriter writes to every writer and never fails (its writers do not).
type multiWriter []interface{ Write([]byte) (int, error) }

func (m multiWriter) Write(p []byte) (int, error) {
	for _, w := range m {
		_, _ = w.Write(p)
	}
	return len(p), nil
}
