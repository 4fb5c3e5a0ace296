//go:build !linux

package embeddedpg

import "syscall"

// setParentDeathSignal does nothing outside Linux, which has no
// parent-death signal: a server a killed relay leaves running shuts
// itself down within a minute of the next Start removing its directory.
func setParentDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
