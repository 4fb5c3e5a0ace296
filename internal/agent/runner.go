package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/relay-dev/relay/deadletter"
)

// Defaults for Runner.
const (
	KillGraceDefault      = 2 * time.Second
	MaxResultBytesDefault = 1 << 20
	stderrTailBytes       = 4096
)

// The steps an attempt can fail in (FailureDetail.StepFailed).
const (
	StepValidateItem    = "validate_item"
	StepPrepareWorktree = "prepare_worktree"
	StepRunAgent        = "run_agent"
)

// Runner runs one agent command. Its zero value is not usable: Argv and
// BaseDir are required.
type Runner struct {
	// Argv is the command, as Split returns it.
	Argv []string
	// Timeout is the deadline for one attempt; 0 means none.
	Timeout time.Duration
	// BaseDir holds the per-attempt directories and logs:
	// BaseDir/<job>/<item>/attempt-<n>/ and .../attempt-<n>.log.
	BaseDir string
	// KillGrace is how long the agent's process group has between SIGTERM
	// and SIGKILL at the deadline (default KillGraceDefault).
	KillGrace time.Duration
	// KeepSucceeded keeps the working directory of a successful attempt
	// (failed attempts' directories are always kept for debugging).
	KeepSucceeded bool
	// MaxResultBytes caps the stdout kept as the item's result (default
	// MaxResultBytesDefault); the log file has all of it.
	MaxResultBytes int
	// Env is the agent's base environment; nil means this process's
	// environment without any RELAY_* variable (so that the database URL
	// and its password never reach an agent).
	Env []string
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
	ErrorType deadletter.ErrorType
	Message   string
	Step      string
	// ExitCode is the agent's exit status (128+N for a signal), nil when it
	// never ran or relay's deadline killed it.
	ExitCode *int
	Signal   string
	// StderrTail is the last 4 KiB of stderr.
	StderrTail string
	// Result is stdout, up to MaxResultBytes.
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
		o.fail(deadletter.ErrorTypeValidationFailed, StepValidateItem, "item data is not valid JSON")
		return o
	}
	itemDir := filepath.Join(r.BaseDir, SafeName(t.JobID), SafeName(t.ItemID))
	o.Workdir = filepath.Join(itemDir, "attempt-"+strconv.Itoa(t.Attempt))
	o.LogPath = o.Workdir + ".log"
	logFile, err := prepare(o.Workdir, o.LogPath)
	if err != nil {
		o.fail(diskErrorType(err, deadletter.ErrorTypeWorktreeError), StepPrepareWorktree,
			fmt.Sprintf("error preparing working directory: %v", err))
		o.WorkdirKept = dirExists(o.Workdir)
		return o
	}
	defer logFile.Close()
	o.Step = StepRunAgent
	r.run(ctx, t, o, &logWriter{f: logFile})
	if o.Succeeded && !r.KeepSucceeded {
		_ = os.RemoveAll(o.Workdir)
	} else {
		o.WorkdirKept = true
	}
	return o
}

func (o *Outcome) fail(t deadletter.ErrorType, step, msg string) {
	o.Succeeded, o.ErrorType, o.Step, o.Message = false, t, step, msg
}

func (r *Runner) run(ctx context.Context, t Task, o *Outcome, lw *logWriter) {
	fmt.Fprintf(lw, "# relay: job %q item %q attempt %d started %s\n# relay: argv %q\n",
		t.JobID, t.ItemID, t.Attempt, o.StartedAt.Format(time.RFC3339Nano), r.Argv)
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
	name := r.Argv[0]
	if strings.ContainsRune(name, filepath.Separator) && !filepath.IsAbs(name) {
		if abs, err := filepath.Abs(name); err == nil {
			name = abs
		}
	}
	cmd := exec.CommandContext(runCtx, name, r.Argv[1:]...)
	cmd.Dir = o.Workdir
	cmd.Env = append(r.baseEnv(), "RELAY_JOB_ID="+t.JobID, "RELAY_ITEM_ID="+t.ItemID,
		"RELAY_ATTEMPT="+strconv.Itoa(t.Attempt), "RELAY_WORKDIR="+o.Workdir)
	cmd.Stdin = bytes.NewReader(t.Data)
	cmd.Stdout = multiWriter{lw, stdout}
	cmd.Stderr = multiWriter{lw, stderr}
	// The agent leads its own process group, so the deadline kills it and
	// everything it started: SIGTERM first, SIGKILL after the grace period.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var killTimer *time.Timer
	var mu sync.Mutex
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		mu.Lock()
		killTimer = time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		mu.Unlock()
		return syscall.Kill(-pgid, syscall.SIGTERM)
	}
	// Wait returns at most this long after the kill even if an escaped
	// grandchild still holds stdout open.
	cmd.WaitDelay = grace + time.Second

	if err := cmd.Start(); err != nil {
		o.fail(startErrorType(err), StepRunAgent, fmt.Sprintf("error starting agent %q: %v", r.Argv[0], err))
		if code := startExitCode(err); code != 0 {
			o.ExitCode = &code
		}
		fmt.Fprintf(lw, "# relay: %s\n", o.Message)
		return
	}
	waitErr := cmd.Wait()
	mu.Lock()
	if killTimer != nil {
		killTimer.Stop()
	}
	mu.Unlock()
	o.StderrTail = stderr.String()
	o.Result, o.ResultTruncated = stdout.buf.Bytes(), stdout.truncated
	r.classify(ctx, runCtx, cmd, waitErr, lw, o)
	fmt.Fprintf(lw, "# relay: finished after %s: %s\n", time.Since(o.StartedAt).Round(time.Millisecond), o.summary())
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
		o.fail(deadletter.ErrorTypeUnknown, StepRunAgent, "interrupted: the worker is stopping")
	case runCtx.Err() != nil: // our deadline, or the caller's
		o.fail(deadletter.ErrorTypeTimeout, StepRunAgent,
			fmt.Sprintf("agent timed out after %s and was killed", r.Timeout))
	case cmd.ProcessState == nil:
		o.fail(deadletter.ErrorTypeUnknown, StepRunAgent, fmt.Sprintf("error waiting for agent: %v", waitErr))
	case ws.Signaled():
		sig := ws.Signal()
		code := 128 + int(sig)
		o.ExitCode, o.Signal = &code, signalName(sig)
		if sig == syscall.SIGKILL || sig == syscall.SIGXCPU || sig == syscall.SIGXFSZ {
			o.fail(deadletter.ErrorTypeResourceExhausted, StepRunAgent,
				fmt.Sprintf("agent was killed by %s (out of memory or a resource limit)", o.Signal))
		} else {
			o.fail(deadletter.ErrorTypeCommandFailed, StepRunAgent, fmt.Sprintf("agent was killed by %s", o.Signal)+
				lastLine(o.StderrTail))
		}
	case lw.err != nil && diskErrorType(lw.err, "") != "":
		code := ws.ExitStatus()
		o.ExitCode = &code
		o.fail(deadletter.ErrorTypeResourceExhausted, StepRunAgent, fmt.Sprintf("error writing agent log: %v", lw.err))
	case ws.ExitStatus() == 0 && waitErr == nil:
		o.Succeeded, o.ErrorType, o.Message = true, "", ""
		code := 0
		o.ExitCode = &code
	case ws.ExitStatus() == deadletter.ExitCodeValidationFailed:
		code := ws.ExitStatus()
		o.ExitCode = &code
		o.fail(deadletter.ErrorTypeValidationFailed, StepRunAgent,
			fmt.Sprintf("agent rejected the item (exit code %d)", code)+lastLine(o.StderrTail))
	case ws.ExitStatus() > 0:
		code := ws.ExitStatus()
		o.ExitCode = &code
		o.fail(deadletter.ErrorTypeCommandFailed, StepRunAgent, fmt.Sprintf("agent exited with code %d", code)+
			lastLine(o.StderrTail))
	default:
		// Exit 0 but Wait failed (e.g. WaitDelay expired on held pipes).
		o.fail(deadletter.ErrorTypeUnknown, StepRunAgent, fmt.Sprintf("error waiting for agent: %v", waitErr))
	}
}

func (o *Outcome) summary() string {
	if o.Succeeded {
		return "succeeded"
	}
	return fmt.Sprintf("%s: %s", o.ErrorType, o.Message)
}

func (r *Runner) baseEnv() []string {
	if r.Env != nil {
		return append([]string(nil), r.Env...)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RELAY_") {
			env = append(env, kv)
		}
	}
	return env
}

// prepare makes a fresh directory for the attempt (removing what a previous
// run of the same attempt left) and opens its log file.
func prepare(dir, logPath string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
}

// diskErrorType returns ResourceExhausted for a full disk or quota, else
// fallback.
func diskErrorType(err error, fallback deadletter.ErrorType) deadletter.ErrorType {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return deadletter.ErrorTypeResourceExhausted
	}
	return fallback
}

func startErrorType(err error) deadletter.ErrorType {
	if startExitCode(err) != 0 {
		return deadletter.ErrorTypeCommandFailed
	}
	return diskErrorType(err, deadletter.ErrorTypeUnknown)
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
// from being read (the outcome reports it).
type logWriter struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if _, err := w.f.Write(p); err != nil {
			w.err = err
		}
	}
	return len(p), nil
}

// capWriter keeps the first max bytes.
type capWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (w *capWriter) Write(p []byte) (int, error) {
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
