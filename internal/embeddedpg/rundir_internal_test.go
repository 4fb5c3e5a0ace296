package embeddedpg

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A new run directory clears those of relays that were killed (unlocked,
// older than a minute) and leaves alone one in use, one being created and
// anything that is not a run directory.
func TestNewRunDir_RemovesOnlyTheDirectoriesOfKilledRelays(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	old := time.Now().Add(-2 * staleAfter)
	mk := func(name string, lock bool, mtime time.Time) string {
		dir := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, dataDirectory), 0o700))
		if lock {
			require.NoError(t, os.WriteFile(filepath.Join(dir, lockName), nil, 0o600))
		}
		require.NoError(t, os.Chtimes(dir, mtime, mtime))
		return dir
	}
	killed := mk(runPrefix+"killed", true, old)
	killedEarly := mk(runPrefix+"killed-before-locking", false, old)
	held := mk(runPrefix+"held", true, old)
	young := mk(runPrefix+"young", false, time.Now())
	other := mk("other", true, old)

	lock, err := os.OpenFile(filepath.Join(held, lockName), os.O_RDWR, 0)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	run, err := newRunDir(base, false)
	require.NoError(t, err)
	require.NoDirExists(t, killed)
	require.NoDirExists(t, killedEarly)
	require.DirExists(t, held)
	require.DirExists(t, young)
	require.DirExists(t, other)
	require.DirExists(t, run.path)

	// The new one is locked: another relay's cleanup leaves it.
	require.NoError(t, os.Chtimes(run.path, old, old))
	removeStale(base)
	require.DirExists(t, run.path)
	run.remove()
	require.NoDirExists(t, run.path)
}

func TestNewestDebianBinDir_PicksTheHighestVersionWithServerBinaries(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, v := range []string{"9.6", "13", "15", "16", "17"} {
		bin := filepath.Join(root, v, "bin")
		require.NoError(t, os.MkdirAll(bin, 0o755))
		names := []string{"initdb", "postgres"}
		switch v {
		case "16":
			names = []string{"psql"} // a client-only install
		case "17":
			names = []string{"initdb"}
		}
		for _, n := range names {
			require.NoError(t, os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\n"), 0o755))
		}
	}
	require.Equal(t, filepath.Join(root, "15", "bin"), newestDebianBinDir(root))
	require.Empty(t, newestDebianBinDir(filepath.Join(root, "none")))

	for _, tc := range []struct {
		a, b string
		less bool
	}{{"9.6", "13", true}, {"13", "15", true}, {"15", "9.6", false}, {"10", "9", false}, {"15", "15.1", true}} {
		require.Equal(t, tc.less, compareVersions(tc.a, tc.b) < 0, "%s < %s", tc.a, tc.b)
	}
}
