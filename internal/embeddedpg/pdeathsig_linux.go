package embeddedpg

import "syscall"

// setParentDeathSignal makes the child get sig when relay dies.
func setParentDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) { attr.Pdeathsig = sig }
