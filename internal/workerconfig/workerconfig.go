// Package workerconfig is the one mapping from relay's configuration
// (config.Config) to the worker's (worker.Config). It sits above both:
// worker takes only the settings it uses and does not import config, and
// config, below worker in docs/design.md's layout, cannot name worker's
// types. Every caller that builds a worker from relay's configuration (the
// CLI, relay-bench, the tests) goes through From.
package workerconfig

import (
	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// From returns the worker settings cfg holds. The result is the caller's
// own: changing it changes nothing in cfg.
func From(cfg *config.Config) *worker.Config {
	return &worker.Config{
		Schema:                cfg.DatabaseSchema,
		TransactionPooler:     cfg.TransactionPooler(),
		Concurrency:           cfg.WorkerConcurrency,
		POITimeout:            cfg.POITimeout,
		JobTimeout:            cfg.JobTimeout,
		ReprocessMaxAttempts:  cfg.ReprocessMaxAttempts,
		MaxAttempts:           cfg.MaxAttempts,
		RescueStuckJobsAfter:  cfg.RescueStuckJobsAfter,
		DiscardedJobRetention: cfg.DiscardedJobRetention,
		SweepInterval:         cfg.SweepInterval,
		ShutdownTimeout:       cfg.ShutdownTimeout,
		FetchCooldown:         cfg.FetchCooldown,
		FetchPollInterval:     cfg.FetchPollInterval,
		PublishQueueInterval:  cfg.PublishQueueInterval,
		LinkDelay:             cfg.LinkDelay,
		Publish:               outbox.Config{MaxJobBytes: cfg.MaxJobBytes, MaxPOIBytes: cfg.MaxPOIBytes, MaxAttempts: cfg.MaxAttempts},
		MapReduceParallel:     cfg.MapReduceParallel,
		MapReduceWorkdir:      cfg.MapReduceWorkdir,
		AgentUser:             cfg.AgentUser,
		GCPercent:             cfg.GCPercent,
	}
}
