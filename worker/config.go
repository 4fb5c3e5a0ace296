package worker

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// Config is what a Worker runs with. Its first fields are settings of
// relay's configuration: the comment on each names the setting it comes
// from and what its zero value means, and ConfigFrom fills them, so that
// relay's processes run with relay's defaults, not these. The fields after
// GCPercent belong to the process that builds the Worker.
type Config struct {
	// Schema is the schema River's tables live in (database_schema).
	// Empty: the connection's search_path.
	Schema string
	// TransactionPooler says the pool reaches PostgreSQL through a
	// transaction pooler (database_pooler: transaction). LISTEN needs a
	// session of its own, which such a pooler does not give: River then
	// fetches every FetchPollInterval instead of on notification.
	TransactionPooler bool

	// Concurrency is how many resolve_file batches the client works at
	// once (worker_concurrency). It must be at least 1 when the resolve
	// queue is worked.
	Concurrency int
	// POITimeout is the deadline for resolving one POI (poi_timeout); a POI
	// that exceeds it is dead-lettered with error class timeout. Zero: 5s.
	POITimeout time.Duration
	// JobTimeout is the deadline for one job, a resolve_file batch
	// (job_timeout). Zero: River's default, one minute.
	JobTimeout time.Duration
	// ReprocessMaxAttempts is how many failed reprocesses a failed_pois row
	// may have before it needs manual review (reprocess_max_attempts).
	// Zero: deadletter's default, 5.
	ReprocessMaxAttempts int

	// MaxAttempts is River's attempt limit for the jobs this client inserts
	// without one of their own (max_attempts; a publisher gives its jobs
	// their own, outbox.Config.MaxAttempts). Zero: River's default, 25.
	MaxAttempts int
	// RescueStuckJobsAfter is how long a job may stay running before
	// River's rescuer makes it available again (rescue_stuck_jobs_after);
	// it must be longer than JobTimeout. Zero: River's default, an hour.
	RescueStuckJobsAfter time.Duration
	// DiscardedJobRetention is how long River keeps discarded jobs
	// (discarded_job_retention); the sweep must capture them into
	// dead_lettered_items before then, so it must be longer than
	// SweepInterval. Zero: River's default, seven days.
	DiscardedJobRetention time.Duration
	// SweepInterval is how often the periodic sweep captures discarded
	// jobs into dead_lettered_items (sweep_interval). It must be positive
	// when the maintenance queue is worked.
	SweepInterval time.Duration
	// ShutdownTimeout is how long a client told to stop lets in-flight
	// jobs finish before cancelling them (shutdown_timeout); a cancelled
	// batch rolls back and is retried later. Zero: no limit.
	ShutdownTimeout time.Duration
	// FetchCooldown is the least time between two fetches of jobs
	// (fetch_cooldown). Zero: River's default, 100ms.
	FetchCooldown time.Duration
	// FetchPollInterval is how often the client fetches jobs at least
	// (fetch_poll_interval). Zero: River's default, 1s.
	FetchPollInterval time.Duration
	// PublishQueueInterval is how often an idle drain looks for analyses
	// the SQL publish API queued (publish_queue_interval). Zero:
	// outbox.DrainIntervalDefault.
	PublishQueueInterval time.Duration
	// LinkDelay is how long after its publish a file's references are
	// linked at the earliest (link_delay). Zero: at once.
	LinkDelay time.Duration
	// Publish tunes the publisher the drain publishes queued analyses with
	// (max_job_bytes, max_poi_bytes, max_attempts). Zero values: outbox's
	// defaults.
	Publish outbox.Config

	// GCPercent is the garbage collector's target that SetGCPercent
	// applies (gc_percent); -1 turns the collector off. Zero: the
	// runtime's target is left as it is.
	GCPercent int

	// Queues lists the queues to work: outbox.QueueResolve (with
	// link.QueueLink, the linker its jobs feed, and the SQL publish API's
	// drain), QueueMaintenance (with the periodic dead-letter sweep), and
	// the Extensions' queues. Empty: all of them.
	Queues []string
	// Extensions are other packages' work the client carries (relay
	// worker's MapReduce agents).
	Extensions []Extension
	// Extract overrides the resolver (tests).
	Extract resolvefile.ExtractFunc
	// Observer is told about each batch and link round (metrics); may be
	// nil.
	Observer Observer
	// RiverPool, when set, runs River's own statements (fetching jobs,
	// completing them after they ran, maintenance), typically with
	// synchronous_commit off (database.RiverOptionsFromConfig). Batches
	// and everything else relay writes use the pool given to New.
	RiverPool *pgxpool.Pool
	// ID names the River client (river.Config.ID). Empty: River's default,
	// the host and the microsecond the client was made.
	ID string
	// DrainLoops is how many drains run at once while the SQL publish
	// API's backlog lasts (outbox.DrainConfig.Loops). Zero: outbox's
	// default.
	DrainLoops int
}

// ConfigFrom returns the worker settings relay's configuration cfg holds;
// the fields that belong to the process are left zero. The result is the
// caller's own: changing it changes nothing in cfg.
func ConfigFrom(cfg *config.Config) *Config {
	return &Config{
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
		GCPercent:             cfg.GCPercent,
	}
}

// worked returns the queues of all that c works, refusing a queue c names
// that all lacks and a worked queue c cannot run: the error names the
// first such Config field.
func (c *Config) worked(all map[string]river.QueueConfig) (map[string]river.QueueConfig, error) {
	queues := all
	if len(c.Queues) > 0 {
		queues = map[string]river.QueueConfig{}
		for _, q := range c.Queues {
			qc, ok := all[q]
			if !ok {
				return nil, fmt.Errorf("unknown queue %q", q)
			}
			queues[q] = qc
			if q == outbox.QueueResolve {
				// Whoever works resolve_file jobs works the linker they feed.
				queues[link.QueueLink] = all[link.QueueLink]
			}
		}
	}
	for name, qc := range queues {
		switch {
		case name == outbox.QueueResolve && c.Concurrency < 1:
			return nil, fmt.Errorf("invalid worker.Config.Concurrency: %d must be at least 1 to work queue %q", c.Concurrency, name)
		case name == QueueMaintenance && c.SweepInterval <= 0:
			return nil, fmt.Errorf("invalid worker.Config.SweepInterval: %s must be positive to work queue %q", c.SweepInterval, name)
		case qc.MaxWorkers < 1:
			return nil, fmt.Errorf("invalid worker.Config.Extensions: queue %q needs at least 1 worker, has %d", name, qc.MaxWorkers)
		}
	}
	return queues, nil
}
