//go:build linux

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// harden makes relay not dumpable, before it reads any secret: a process
// running as the same user (an agent) can then no longer read
// /proc/<relay>/environ, /proc/<relay>/mem or attach a debugger to relay,
// and relay leaves no core dump. Root still can (CAP_SYS_PTRACE), which is
// why relay runs no agent as root: as root it runs them as agent_user
// (internal/agent.User). /proc/<relay>/cmdline stays readable by everyone,
// which is why a password in --database-url is warned about.
func harden() {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "relay: warning: error making the process non-dumpable: %v; agents running as "+
			"this user may read relay's environment in /proc\n", err)
	}
}
