// Package pgbouncer starts a stock PgBouncer in transaction pooling mode in
// front of a PostgreSQL server, for tests and harnesses that check relay
// works behind a transaction pooler (docs/operations.md, "Behind a
// connection pooler"). It runs Debian's pgbouncer binary (`make pgbouncer`
// installs it) as an unprivileged user on a free loopback port.
package pgbouncer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstallHint says how to get the binary.
const InstallHint = "install it with `make pgbouncer` (apt-get update && apt-get install -y pgbouncer) or put pgbouncer on PATH"

// Config is the pgbouncer.ini Start writes, for a server at host:port:
// transaction pooling, with nothing else changed from PgBouncer's defaults
// but ignore_startup_parameters = extra_float_digits. Every database of the
// server is reachable under its own name, and every user the server trusts
// is let in without a password (auth_type = trust, users listed in
// auth_file); the server URL's user may use the admin console (Reconnect).
const Config = `[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
ignore_startup_parameters = extra_float_digits
admin_users = %s
`

// Bouncer is a running PgBouncer.
type Bouncer struct {
	// Port is the loopback port it listens on.
	Port int

	dir    string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// Binary returns the pgbouncer executable's path, or an error saying how
// to install it.
func Binary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("pgbouncer is not installed: " + InstallHint)
}

// Start runs PgBouncer in front of the server serverURL points at, letting
// in the URL's user, and waits until it accepts connections. As root it
// runs as the postgres user (PgBouncer refuses to run as root). Stop it
// with Close.
func Start(ctx context.Context, serverURL string) (*Bouncer, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	u, err := neturl.Parse(serverURL)
	if err != nil || u.Host == "" {
		return nil, errors.New("pgbouncer: the server URL must be a postgres:// URL with a host")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	dir, err := os.MkdirTemp("", "relay-pgbouncer-")
	if err != nil {
		return nil, fmt.Errorf("error creating PgBouncer's directory: %w", err)
	}
	// Readable by the unprivileged user PgBouncer runs as.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	listenPort, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	authFile := filepath.Join(dir, "userlist.txt")
	ini := filepath.Join(dir, "pgbouncer.ini")
	users := fmt.Sprintf("%q \"\"\n", u.User.Username())
	if err := os.WriteFile(authFile, []byte(users), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(ini, fmt.Appendf(nil, Config, host, port, listenPort, authFile, u.User.Username()), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &Bouncer{Port: listenPort, dir: dir, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	b.cmd = exec.Command(bin, ini)
	b.cmd.Stdout, b.cmd.Stderr = b.stderr, b.stderr
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := b.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("error starting %s: %w", bin, err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.exited)
	}()
	if err := b.waitListening(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// unprivileged returns the credentials of the postgres user, which
// Debian's PostgreSQL and PgBouncer packages create.
func unprivileged() (*syscall.Credential, error) {
	usr, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgbouncer refuses to run as root and there is no postgres user to run it as: %w", err)
	}
	uid, _ := strconv.ParseUint(usr.Uid, 10, 32)
	gid, _ := strconv.ParseUint(usr.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// waitListening returns once PgBouncer accepts TCP connections, or with its
// output when it exits first.
func (b *Bouncer) waitListening(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-b.exited:
			return fmt.Errorf("pgbouncer exited (%v) before listening on %s: %s", b.err, b.Addr(), b.stderr.String())
		case <-ctx.Done():
			return fmt.Errorf("pgbouncer is not listening on %s: %w: %s", b.Addr(), ctx.Err(), b.stderr.String())
		case <-tick.C:
		}
	}
}

// Addr is the host:port PgBouncer listens on.
func (b *Bouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)) }

// URL returns serverURL (any database) pointed at PgBouncer instead.
func (b *Bouncer) URL(serverURL string) string {
	u, err := neturl.Parse(serverURL)
	if err != nil {
		return serverURL
	}
	u.Host = b.Addr()
	return u.String()
}

// Reconnect makes PgBouncer replace its server connections (RECONNECT on
// its admin console), as an operator does after changing a role's or a
// database's settings on the server: the new ones start with the new
// defaults. serverURL gives the user.
func (b *Bouncer) Reconnect(ctx context.Context, serverURL string) error {
	u, err := neturl.Parse(b.URL(serverURL))
	if err != nil {
		return err
	}
	u.Path = "/pgbouncer"
	q := u.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("error connecting to PgBouncer's admin console: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "RECONNECT"); err != nil {
		return fmt.Errorf("error running RECONNECT on PgBouncer's admin console: %w", err)
	}
	return nil
}

// Output is what PgBouncer has logged so far.
func (b *Bouncer) Output() string { return b.stderr.String() }

// Close stops PgBouncer (SIGINT: it closes its connections at once) and
// removes its files.
func (b *Bouncer) Close() {
	select {
	case <-b.exited:
	default:
		_ = b.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	}
	_ = os.RemoveAll(b.dir)
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("error finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
