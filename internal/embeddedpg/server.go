package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// UnprivilegedUser is the user the server runs as when relay runs as
// root.
const UnprivilegedUser = "nobody"

// serverSettings are the postgres options of a throwaway server: TCP on
// loopback only, no Unix socket (its directory could be unwritable, and
// its path too long), and no waiting for the disk, which data thrown
// away at the end does not need.
var serverSettings = []string{
	"listen_addresses=127.0.0.1",
	"unix_socket_directories=",
	"fsync=off",
	"synchronous_commit=off",
	"full_page_writes=off",
}

// startServer runs binDir's initdb and postgres in run. As root both run
// as UnprivilegedUser, who is given run.
func startServer(ctx context.Context, cfg Config, binDir string, run *runDir) (*Server, error) {
	osUser, cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(run.path, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("error giving %s to %s: %w", run.path, osUser, err)
		}
		if err := checkReachable(run.path, osUser, cred); err != nil {
			return nil, err
		}
	}
	password, err := randomPassword()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(run.path, dataDirectory)
	pwfile := filepath.Join(run.path, "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), "-D", dataDir, "-U", Superuser,
		"--pwfile="+pwfile, "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Env, initdb.SysProcAttr = childEnv(), &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	out, err := initdb.CombinedOutput()
	_ = os.Remove(pwfile)
	if err != nil {
		return nil, fmt.Errorf("error initialising the throwaway PostgreSQL with %s as %s: %w\n%s",
			initdb.Path, osUser, err, strings.TrimSpace(string(out)))
	}

	// Another process may take the free port before postgres binds it:
	// then try another.
	var srv *process
	var port int
	for attempt := 1; ; attempt++ {
		if port, err = freePort(); err != nil {
			return nil, err
		}
		srv, err = startPostgres(binDir, dataDir, port, cred)
		if err != nil {
			return nil, err
		}
		err = srv.waitReady(ctx, serverURL(port, password, "postgres"))
		if err == nil {
			break
		}
		_ = srv.stop()
		if attempt == 3 || !strings.Contains(srv.output(), "could not bind") {
			return nil, err
		}
	}
	if err := createDatabase(ctx, serverURL(port, password, "postgres"), cfg.Database); err != nil {
		_ = srv.stop()
		return nil, err
	}
	s := &Server{URL: serverURL(port, password, cfg.Database), Port: port, BinDir: binDir, OSUser: osUser, proc: srv}
	if s.Version, err = serverVersion(ctx, s.URL); err != nil {
		_ = srv.stop()
		return nil, err
	}
	return s, nil
}

// serverUser returns who the server runs as: this process's user, or, as
// root, UnprivilegedUser with credentials to switch to.
func serverUser() (string, *syscall.Credential, error) {
	if os.Geteuid() != 0 {
		name := strconv.Itoa(os.Geteuid())
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		return name, nil, nil
	}
	u, err := user.Lookup(UnprivilegedUser)
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL refuses to run as root, and there is no user %s to run it as (%v): "+
			"run relay as another user, or point it at a PostgreSQL of your own", UnprivilegedUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return "", nil, fmt.Errorf("user %s: %w", UnprivilegedUser, err)
	}
	return u.Username, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// checkReachable returns an error saying what to do when a directory
// above dir denies cred's user passage, as root's home does.
func checkReachable(dir, osUser string, cred *syscall.Credential) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		perm := fi.Mode().Perm()
		var x bool
		switch {
		case st.Uid == cred.Uid:
			x = perm&0o100 != 0
		case st.Gid == cred.Gid:
			x = perm&0o010 != 0
		default:
			x = perm&0o001 != 0
		}
		if !x {
			return fmt.Errorf("PostgreSQL refuses to run as root, so relay runs it as %s, who cannot reach %s "+
				"(%s is mode %04o): set TMPDIR to a directory %s can reach, such as /tmp", osUser, dir, d, perm, osUser)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// childEnv is the environment of initdb and postgres: none of relay's.
func childEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
}

// process is a running postgres.
type process struct {
	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// startPostgres starts postgres on dataDir, listening on 127.0.0.1:port.
// It is in a process group of its own, so that a Ctrl-C meant for relay
// does not shut it down under the demo (Stop does, after the demo), and
// on Linux it gets SIGQUIT (an immediate shutdown) if relay dies.
func startPostgres(binDir, dataDir string, port int, cred *syscall.Credential) (*process, error) {
	args := []string{"-D", dataDir, "-p", strconv.Itoa(port)}
	for _, s := range serverSettings {
		args = append(args, "-c", s)
	}
	p := &process{out: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(binDir, "postgres"), args...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = childEnv(), p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	setParentDeathSignal(p.cmd.SysProcAttr, syscall.SIGQUIT)
	started := make(chan error, 1)
	go func() {
		// The parent-death signal comes when the thread that started the
		// child ends, not the process (golang.org/issue/27505): this
		// goroutine keeps its thread until the child has exited.
		runtime.LockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("error starting %s: %w", p.cmd.Path, err)
	}
	return p, nil
}

// waitReady returns once the server accepts a connection to connURL, or
// with its output when it exits first or ctx ends.
func (p *process) waitReady(ctx context.Context, connURL string) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		connCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgconn.Connect(connCtx, connURL)
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("the throwaway PostgreSQL exited (%v) before accepting connections:\n%s",
				p.err, strings.TrimSpace(p.output()))
		case <-ctx.Done():
			return fmt.Errorf("the throwaway PostgreSQL did not accept connections (%w): %v\n%s",
				ctx.Err(), err, strings.TrimSpace(p.output()))
		case <-tick.C:
		}
	}
}

// stop shuts the server down: SIGINT is PostgreSQL's fast shutdown (it
// ends sessions, rolls back their transactions and exits); SIGKILL if it
// has not exited after stopTimeout.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return fmt.Errorf("the throwaway PostgreSQL did not stop within %s and was killed:\n%s",
			stopTimeout, strings.TrimSpace(p.output()))
	}
}

func (p *process) output() string { return p.out.String() }

// createDatabase creates database on the server adminURL reaches.
func createDatabase(ctx context.Context, adminURL, database string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("error connecting to the throwaway PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{database}.Sanitize()); err != nil {
		return fmt.Errorf("error creating database %q on the throwaway PostgreSQL: %w", database, err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
