package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// DefaultBaseDir is the per-user directory for attempts' working
// directories and logs when none is configured: relay/mapreduce in the
// user's cache directory ($XDG_CACHE_HOME, else ~/.cache), or
// relay-mapreduce-<uid> in the temporary directory when there is no home.
func DefaultBaseDir() string {
	if dir, err := os.UserCacheDir(); err == nil && filepath.IsAbs(dir) {
		return filepath.Join(dir, "relay", "mapreduce")
	}
	return filepath.Join(os.TempDir(), "relay-mapreduce-"+strconv.Itoa(os.Geteuid()))
}

// PrepareBaseDir creates dir (mode 0700, and its missing parents 0700) or
// checks the existing one: a real directory, not a symlink, owned by this
// process's user and writable by no one else. Every directory relay creates
// under it is 0700 and every log 0600, so agents' logs and item data are
// private to the user relay runs as.
func PrepareBaseDir(dir string) error {
	if dir == "" {
		return errors.New("mapreduce workdir is empty")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("error creating mapreduce workdir %q: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("error creating mapreduce workdir %q: %w", dir, err)
	}
	return checkPrivateDir(dir, true)
}

// checkPrivateDir refuses a symlink, a non-directory, a directory owned by
// another user and one others can write to. The base directory may be
// readable by others (an operator's choice); relay's own directories under
// it are made 0700 again if someone opened them up.
func checkPrivateDir(dir string, base bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("error checking mapreduce workdir: %w", err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("mapreduce workdir %q is a symlink; relay refuses to follow it (point mapreduce_workdir at the real directory)", dir)
	case !fi.IsDir():
		return fmt.Errorf("mapreduce workdir %q is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("mapreduce workdir %q is owned by uid %d, not by relay's user (uid %d); refusing to use it",
			dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("mapreduce workdir %q is writable by other users (mode %04o); run chmod 700 on it", dir, fi.Mode().Perm())
	}
	if !base && fi.Mode().Perm()&0o077 != 0 {
		// A directory of relay's own that someone opened up: close it again.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("error making %q private: %w", dir, err)
		}
	}
	return nil
}

// mkdirPrivate creates dir 0700 or checks that the existing one is a real,
// private directory of this user.
func mkdirPrivate(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	return checkPrivateDir(dir, false)
}

// prepare makes a fresh directory for the attempt (removing what a previous
// run of the same attempt left) and creates its log file: every directory
// 0700, the log 0600, no symlink followed.
func prepare(baseDir, itemDir, dir, logPath string) (*os.File, error) {
	if err := PrepareBaseDir(baseDir); err != nil {
		return nil, err
	}
	if err := mkdirPrivate(filepath.Dir(itemDir)); err != nil { // the job's directory
		return nil, err
	}
	if err := mkdirPrivate(itemDir); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil { // removes a symlink, never follows it
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(logPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
}
