package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one relay subprocess (a worker, usually).
type process struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	exitErr error
	started time.Time
	exited  time.Time
	logPath string
}

// relayEnv is the environment relay subprocesses run with: the harness's
// own, minus any RELAY_* setting, plus the scenario's settings.
func relayEnv(settings map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RELAY_") {
			env = append(env, kv)
		}
	}
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	return env
}

// start runs binary with args, its stdout and stderr appended to a log file
// in dir. stdin may be nil.
func start(dir, name, binary string, env []string, stdin []byte, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("error creating log file: %w", err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("error starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), started: time.Now(), logPath: logPath}
	go func() {
		p.exitErr = cmd.Wait()
		p.exited = time.Now()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitCode is the process's exit code once it has exited (-1 for a signal).
func (p *process) exitCode() int {
	return p.cmd.ProcessState.ExitCode()
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// terminate sends SIGTERM and waits up to timeout for the process to exit.
// A process still running at the deadline is killed and reported.
func (p *process) terminate(timeout time.Duration) (time.Duration, error) {
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("error signalling %s: %w", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.kill()
		return time.Since(sent), fmt.Errorf("%s did not exit within %s of SIGTERM (killed; log %s)", p.name, timeout, p.logPath)
	}
	took := p.exited.Sub(sent)
	if code := p.exitCode(); code != 0 {
		return took, fmt.Errorf("%s exited %d after SIGTERM (log %s)", p.name, code, p.logPath)
	}
	return took, nil
}

// wait waits for the process to exit on its own, up to the context's end.
func (p *process) wait(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.kill()
		return fmt.Errorf("%s still running: %w (killed; log %s)", p.name, ctx.Err(), p.logPath)
	}
	if code := p.exitCode(); code != 0 {
		return fmt.Errorf("%s exited %d (log %s): %s", p.name, code, p.logPath, tail(p.logPath, 600))
	}
	return nil
}

// tail returns up to the last n bytes of a log file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// countLines counts the log lines of path that contain substr.
func countLines(path, substr string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}
