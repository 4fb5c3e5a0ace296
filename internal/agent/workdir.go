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

// SharedBaseDir is the default workdir when agents run as another user
// (agent_user, relay running as root): root's home (/root, mode 0700) is
// not one they can reach, /var/cache is.
const SharedBaseDir = "/var/cache/relay/mapreduce"

// DefaultBaseDirFor is the default workdir for agents run as u:
// SharedBaseDir when u is another user than this process's, DefaultBaseDir
// otherwise.
func DefaultBaseDirFor(u *User) string {
	if u.switches() {
		return SharedBaseDir
	}
	return DefaultBaseDir()
}

// PrepareBaseDir creates dir (and its missing parents) or checks the
// existing one: a real directory, not a symlink, owned by this process's
// user and writable by no one else. Every directory relay creates under it
// is 0700 and every log 0600, so agents' logs and item data are private to
// the user relay runs as.
//
// When agents run as another user (u, agent_user), they must reach their
// attempt's directory: dir and the directories relay creates in it are
// 0711 (searchable, not listable, by others), and every directory above dir
// must be searchable by u, or PrepareBaseDir says which is not. u nil, or
// relay's own user, is the private case.
func PrepareBaseDir(dir string, u *User) error {
	if dir == "" {
		return errors.New("mapreduce workdir is empty")
	}
	mode := u.dirMode()
	if err := os.MkdirAll(filepath.Dir(dir), mode); err != nil {
		return fmt.Errorf("error creating mapreduce workdir %q: %w", dir, err)
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("error creating mapreduce workdir %q: %w", dir, err)
	}
	if err := checkPrivateDir(dir, true, u); err != nil {
		return err
	}
	return u.checkSearchable(dir, "mapreduce workdir")
}

// checkPrivateDir refuses a symlink, a non-directory, a directory owned by
// another user and one others can write to. The base directory may be
// readable by others (an operator's choice); relay's own directories under
// it are made u.dirMode() again if someone changed them. When agents run
// as another user, the base directory is made searchable by others if it
// is not.
func checkPrivateDir(dir string, base bool, u *User) error {
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
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Errorf("mapreduce workdir %q is writable by other users (mode %04o); run chmod 700 on it", dir, perm)
	}
	want := u.dirMode()
	switch {
	case !base && perm != want:
		// A directory of relay's own that someone opened up (or that
		// agents must now reach): give it its mode again.
		if err := os.Chmod(dir, want); err != nil {
			return fmt.Errorf("error setting the mode of %q: %w", dir, err)
		}
	case base && u.switches() && !u.allowed(fi, 1):
		if err := os.Chmod(dir, perm|0o001); err != nil {
			return fmt.Errorf("error making mapreduce workdir %q searchable by agent_user %s: %w", dir, u.Name, err)
		}
	}
	return nil
}

// mkdirPrivate creates dir with mode u.dirMode() or checks that the existing
// one is a real directory of this user's, not writable by others.
func mkdirPrivate(dir string, u *User) error {
	if err := os.Mkdir(dir, u.dirMode()); err == nil || !errors.Is(err, fs.ErrExist) {
		if err == nil {
			// The umask may have taken bits away.
			return os.Chmod(dir, u.dirMode())
		}
		return err
	}
	return checkPrivateDir(dir, false, u)
}

// prepare makes a fresh directory for the attempt (removing what a previous
// run of the same attempt left) and creates its log file, no symlink
// followed: the job's and item's directories u.dirMode(), the attempt's
// 0700 (owned by u when agents run as another user: it is theirs to
// write), the log 0600 and relay's (relay writes it, not the agent).
func prepare(baseDir, itemDir, dir, logPath string, u *User) (*os.File, error) {
	if err := PrepareBaseDir(baseDir, u); err != nil {
		return nil, err
	}
	if err := mkdirPrivate(filepath.Dir(itemDir), u); err != nil { // the job's directory
		return nil, err
	}
	if err := mkdirPrivate(itemDir, u); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil { // removes a symlink, never follows it
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if u.switches() {
		// dir is new and in a directory only relay can write to: nothing
		// can have been put in its place.
		if err := os.Lchown(dir, int(u.UID), int(u.GID)); err != nil {
			return nil, fmt.Errorf("error giving %q to agent_user %s: %w", dir, u.Name, err)
		}
	}
	if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(logPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
}
