package embeddedpg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Run directories: each server has one, holding a lock file its relay
// process keeps locked (flock) while the server runs, and the data
// directory. A run directory in a base directory of relay's own whose lock
// is free belongs to a relay that was killed; the next Start removes it.
const (
	runPrefix     = "run-"      // in a base directory of relay's own
	tmpRunPrefix  = "relay-pg-" // in the shared temporary directory (root)
	lockName      = "lock"
	staleAfter    = time.Minute // a younger unlocked directory may be one being created
	dataDirectory = "data"
)

// DefaultDir is where run directories go when Config.Dir is empty:
// relay/pg in the user's cache directory ($XDG_CACHE_HOME, else ~/.cache),
// or relay-pg-<uid> in the temporary directory when there is no home. As
// root it is the temporary directory itself, a fresh relay-pg-* directory
// per server, because the user the server runs as (nobody) cannot reach
// into root's home.
func DefaultDir() string {
	if os.Geteuid() == 0 {
		return os.TempDir()
	}
	return DefaultCacheDir()
}

// DefaultCacheDir is where downloaded binaries are kept when
// Config.CacheDir is empty: relay/pg in the user's cache directory, or
// relay-pg-<uid> in the temporary directory when there is no home.
func DefaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil && filepath.IsAbs(dir) {
		return filepath.Join(dir, "relay", "pg")
	}
	return filepath.Join(os.TempDir(), "relay-pg-"+strconv.Itoa(os.Geteuid()))
}

// baseDir returns the directory to create the run directory in, creating
// it when it is relay's own.
func baseDir(dir string, asRoot bool) (string, error) {
	if dir == "" {
		if asRoot {
			return os.TempDir(), nil
		}
		dir = DefaultDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("error creating the throwaway PostgreSQL's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("error creating the throwaway PostgreSQL's directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s belongs to another user (uid %d): the throwaway PostgreSQL's directory must be this user's", dir, st.Uid)
	}
	return dir, nil
}

// runDir is one server's directory, locked while it is in use.
type runDir struct {
	path string
	lock *os.File
}

// newRunDir creates and locks a run directory in base. In the shared
// temporary directory (shared) it leaves other directories alone; in a
// base of relay's own it first removes those of killed relays.
func newRunDir(base string, shared bool) (*runDir, error) {
	prefix := tmpRunPrefix
	if !shared {
		prefix = runPrefix
		removeStale(base)
	}
	path, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return nil, fmt.Errorf("error creating the throwaway PostgreSQL's directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(path, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			_ = lock.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("error locking the throwaway PostgreSQL's directory: %w", err)
	}
	return &runDir{path: path, lock: lock}, nil
}

// remove deletes the directory, then lets go of its lock.
func (r *runDir) remove() {
	_ = os.RemoveAll(r.path)
	_ = r.lock.Close()
}

// removeStale removes the run directories in base that no relay holds
// locked and that are older than staleAfter. A server a killed relay left
// running there (a downloaded one, started by pg_ctl) shuts itself down
// within a minute of its data directory going: PostgreSQL checks its
// postmaster.pid once a minute.
func removeStale(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runPrefix) {
			continue
		}
		path := filepath.Join(base, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		lock, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			_ = os.RemoveAll(path)
			continue
		}
		if err != nil {
			continue
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(path)
		}
		_ = lock.Close()
	}
}
