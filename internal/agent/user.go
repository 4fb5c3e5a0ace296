package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// User is the account agents run as (agent_user) when relay runs as root.
//
// Why: root passes every permission check. A non-dumpable process
// (PR_SET_DUMPABLE 0) hides its /proc/<pid>/environ and memory from other
// processes of its own user, but not from root, and root reads relay's
// config file and ~/.pgpass too. So an agent relay starts as root could read
// relay's database password. relay therefore runs no agent as root: as root
// it runs each agent as User (uid, gid, no supplementary groups), in a
// working directory that user owns, and without User it refuses.
type User struct {
	// Name is the user name, or the uid when the user has no name.
	Name string
	UID  uint32
	GID  uint32
	// Home is the user's home directory: the agent's HOME.
	Home string
}

// LookupUser finds the user name (or numeric uid) names in the user
// database (/etc/passwd).
func LookupUser(name string) (*User, error) {
	if name == "" {
		return nil, errors.New("agent_user is empty")
	}
	var (
		u   *user.User
		err error
	)
	if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
		u, err = user.LookupId(name)
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return nil, fmt.Errorf("agent_user %q: no such user (%v)", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("agent_user %q: uid %q is not a number", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("agent_user %q: gid %q is not a number", name, u.Gid)
	}
	n := u.Username
	if n == "" {
		n = u.Uid
	}
	return &User{Name: n, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}, nil
}

// ErrRunsAsRoot is the error of an attempt to run an agent as root.
var ErrRunsAsRoot = errors.New("relay runs as root and agent_user is not set: relay does not run agents as root, " +
	"who could read its database password (in /proc/<relay pid>/environ, its config file, ~/.pgpass); " +
	"set agent_user (RELAY_AGENT_USER, --agent-user) to an unprivileged user, e.g. nobody or one of the agents' own")

// CheckRunAs says whether this process can run agents as u (nil: as
// itself): root must be given a user other than root, and any other user
// can only run agents as itself.
func CheckRunAs(u *User) error {
	euid := os.Geteuid()
	switch {
	case euid == 0 && u == nil:
		return ErrRunsAsRoot
	case u != nil && u.UID == 0:
		return fmt.Errorf("agent_user %q is root: relay runs no agent as root, who could read its database password; "+
			"set agent_user to an unprivileged user, e.g. nobody", u.Name)
	case u != nil && euid != 0 && int(u.UID) != euid:
		return fmt.Errorf("agent_user %q (uid %d): relay runs as uid %d, not root, and cannot run agents as another user; "+
			"unset agent_user (agents then run as relay's user) or run relay as root", u.Name, u.UID, euid)
	}
	return nil
}

// switches reports whether agents run as another user than this process.
func (u *User) switches() bool { return u != nil && int(u.UID) != os.Geteuid() }

// credential is the agent process's credential: u's uid and gid and no
// supplementary groups (root's are not inherited); nil to keep relay's.
func (u *User) credential() *syscall.Credential {
	if !u.switches() {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
}

// dirMode is the mode of the directories relay creates under the workdir:
// private to relay's user, or searchable (not listable) by others when
// agents run as another user, who must reach its attempt's directory.
func (u *User) dirMode() fs.FileMode {
	if u.switches() {
		return 0o711
	}
	return 0o700
}

// allowed reports whether u has permission bit (4 read, 2 write, 1
// execute or search) on fi, by its mode bits alone: u has no supplementary
// groups, and ACLs are not read.
func (u *User) allowed(fi fs.FileInfo, bit fs.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == u.UID:
		return perm&(bit<<6) != 0
	case st.Gid == u.GID:
		return perm&(bit<<3) != 0
	default:
		return perm&bit != 0
	}
}

// checkSearchable returns an error naming every directory above dir (not
// dir itself) that u cannot pass through. what names dir in the error.
func (u *User) checkSearchable(dir, what string) error {
	if !u.switches() {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("error resolving %s %q: %w", what, dir, err)
	}
	var closed []string
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("error checking %s %q: %w", what, dir, err)
		}
		if !u.allowed(fi, 1) {
			closed = append(closed, fmt.Sprintf("%s is mode %04o", p, fi.Mode().Perm()))
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	if len(closed) == 0 {
		return nil
	}
	slices.Reverse(closed)
	return fmt.Errorf("agent_user %s (uid %d) cannot reach %s %q: %s; make them searchable by others (chmod o+x) "+
		"or use a path whose every directory is", u.Name, u.UID, what, dir, strings.Join(closed, ", "))
}

// CheckProgram returns an error when agents running as u could not execute
// the program at path: a directory on the way they cannot pass through, or
// a file they may not execute. Nil u, or relay's own user, checks nothing:
// the program was checked when the job was submitted.
func CheckProgram(path string, u *User) error {
	if !u.switches() || !strings.ContainsRune(path, filepath.Separator) {
		return nil // a bare name is looked up in PATH when the agent starts
	}
	if err := u.checkSearchable(path, "agent program"); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("error checking agent program %q: %w", path, err)
	}
	if !u.allowed(fi, 1) {
		return fmt.Errorf("agent_user %s (uid %d) cannot execute agent program %q (mode %04o); chmod o+rx it",
			u.Name, u.UID, path, fi.Mode().Perm())
	}
	return nil
}
