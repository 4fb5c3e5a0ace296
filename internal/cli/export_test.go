package cli

import "testing"

// SetLocalAddr points the address `relay demo` probes for a local
// PostgreSQL (localhost:5432) at addr until t ends. Tests that call it
// must not run in parallel.
func SetLocalAddr(t *testing.T, addr string) {
	old := localAddr
	localAddr = addr
	t.Cleanup(func() { localAddr = old })
}

// LocalAddr is the address `relay demo` probes.
func LocalAddr() string { return localAddr }
