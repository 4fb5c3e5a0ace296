package worker_test

import (
	"log/slog"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/worker"
)

// Not parallel: the collector's target is process-wide, and t.Setenv.
func TestSetGCPercent_ConfigUnlessGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	cfg := &worker.Config{GCPercent: 250}
	log := slog.New(slog.DiscardHandler)

	if env, ok := os.LookupEnv("GOGC"); ok {
		t.Cleanup(func() { _ = os.Setenv("GOGC", env) })
	}
	require.NoError(t, os.Unsetenv("GOGC"))
	require.Equal(t, 250, worker.SetGCPercent(cfg, log))
	require.Equal(t, 250, debug.SetGCPercent(250), "the runtime runs with gc_percent")

	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what the runtime read from GOGC at start
	require.Equal(t, 150, worker.SetGCPercent(cfg, log), "GOGC wins over gc_percent")
	require.Equal(t, 150, debug.SetGCPercent(150))
}

// Not parallel: the collector's target is process-wide, and t.Setenv.
func TestSetGCPercent_ZeroLeavesTheTargetAsItIs(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	if env, ok := os.LookupEnv("GOGC"); ok {
		t.Cleanup(func() { _ = os.Setenv("GOGC", env) })
	}
	require.NoError(t, os.Unsetenv("GOGC"))
	debug.SetGCPercent(300)
	require.Equal(t, 300, worker.SetGCPercent(&worker.Config{}, slog.New(slog.DiscardHandler)))
	require.Equal(t, 300, debug.SetGCPercent(300), "a zero GCPercent is not GOGC=0")
}
