package worker

import (
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/outbox"
)

// Config is what a worker runs with: the settings of relay's River client,
// its queues and the jobs it works, and nothing else. The comment on each
// field names the relay setting it comes from and what its zero value
// means; internal/workerconfig fills a Config from relay's configuration,
// so relay's processes run with relay's defaults, not these.
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
	// PublishQueueInterval is how often an idle Drainer (NewDrainer) looks
	// for analyses the SQL publish API queued (publish_queue_interval).
	// Zero: outbox.DrainIntervalDefault.
	PublishQueueInterval time.Duration
	// LinkDelay is how long after its publish a file's references are
	// linked at the earliest (link_delay). Zero: at once.
	LinkDelay time.Duration
	// Publish tunes the publisher a Drainer publishes queued analyses with
	// (max_job_bytes, max_poi_bytes, max_attempts). Zero values: outbox's
	// defaults.
	Publish outbox.Config

	// MapReduceParallel is how many MapReduce agents the client runs at
	// once (mapreduce_parallel). It must be at least 1 when the MapReduce
	// queue is worked.
	MapReduceParallel int
	// MapReduceWorkdir is where MapReduce attempts' working directories and
	// agent logs are created (mapreduce_workdir), unless Options.MapReduce
	// is given. Empty: a private per-user directory
	// (agent.DefaultBaseDirFor).
	MapReduceWorkdir string
	// AgentUser is the user MapReduce agents run as when relay runs as
	// root (agent_user), unless Options.MapReduce is given. Empty: relay's
	// user.
	AgentUser string

	// GCPercent is the garbage collector's target that SetGCPercent
	// applies (gc_percent); -1 turns the collector off. Zero: the
	// runtime's target is left as it is.
	GCPercent int
}

// validate returns an error naming the first field that a client working
// queues cannot run with.
func (c *Config) validate(queues map[string]river.QueueConfig) error {
	_, resolve := queues[outbox.QueueResolve]
	_, mr := queues[mapreduce.Queue]
	_, maintenance := queues[QueueMaintenance]
	switch {
	case resolve && c.Concurrency < 1:
		return fmt.Errorf("invalid worker.Config.Concurrency: %d must be at least 1 to work queue %q", c.Concurrency, outbox.QueueResolve)
	case mr && c.MapReduceParallel < 1:
		return fmt.Errorf("invalid worker.Config.MapReduceParallel: %d must be at least 1 to work queue %q", c.MapReduceParallel, mapreduce.Queue)
	case maintenance && c.SweepInterval <= 0:
		return fmt.Errorf("invalid worker.Config.SweepInterval: %s must be positive to work queue %q", c.SweepInterval, QueueMaintenance)
	}
	return nil
}
