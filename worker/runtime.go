package worker

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// SetGCPercent applies cfg.GCPercent to the process's garbage collector,
// unless the GOGC environment variable is set (the operator's choice
// wins) or cfg.GCPercent is zero. Processes that work batches call it once
// at startup; it returns the percentage in effect.
func SetGCPercent(cfg *Config, logger *slog.Logger) int {
	env, fromEnv := os.LookupEnv("GOGC")
	if fromEnv || cfg.GCPercent == 0 {
		current := debug.SetGCPercent(100)
		debug.SetGCPercent(current)
		if fromEnv {
			logger.Debug("garbage collector target from GOGC", slog.String("GOGC", env), slog.Int("gc_percent", current))
		}
		return current
	}
	debug.SetGCPercent(cfg.GCPercent)
	logger.Debug("garbage collector target from gc_percent", slog.Int("gc_percent", cfg.GCPercent))
	return cfg.GCPercent
}
