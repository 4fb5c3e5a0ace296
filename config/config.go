// Package config holds relay's typed configuration and loads it from flags,
// RELAY_* environment variables, an optional config file and defaults, in that
// order of precedence. Only this package and cmd/ know about viper; everything
// else receives a validated *Config.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/outbox"
)

// Defaults for every setting. They are the values a fresh install runs with.
const (
	DatabaseURLDefault              = "postgres://localhost:5432/relay?sslmode=disable"
	DatabasePoolerDefault           = PoolerNone
	LogLevelDefault                 = "info"
	LogFormatDefault                = "text"
	WorkerConcurrencyDefault        = 8
	POITimeoutDefault               = 5 * time.Second
	JobTimeoutDefault               = 5 * time.Minute
	RescueStuckJobsAfterDefault     = 10 * time.Minute
	DiscardedJobRetentionDefault    = 30 * 24 * time.Hour
	SweepIntervalDefault            = time.Minute
	WorkerHeartbeatIntervalDefault  = time.Second
	WorkerHeartbeatTimeoutDefault   = 8 * time.Second
	ShutdownTimeoutDefault          = 30 * time.Second
	FetchCooldownDefault            = 5 * time.Millisecond
	FetchPollIntervalDefault        = 250 * time.Millisecond
	PublishQueueIntervalDefault     = outbox.DrainIntervalDefault
	LinkDelayDefault                = 250 * time.Millisecond
	GCPercentDefault                = 400
	RiverSynchronousCommitDefault   = "off"
	StatementTimeoutDefault         = 60 * time.Second
	IdleInTransactionTimeoutDefault = 5 * time.Minute
	MapReduceMaxRetriesDefault      = 3
	MapReduceParallelDefault        = 4
	MapReduceTimeoutDefault         = 5 * time.Minute
	DLQMaxItemsDefault              = 1000
	HealthMaxNewFailedPOIsDefault   = 1000
	HealthMaxDeadLetteredDefault    = 100
	MetricsRefreshDefault           = 15 * time.Second
)

// Config is relay's whole configuration. Each field's mapstructure tag is its
// config file key; the environment variable is RELAY_ plus the key in upper
// case, and the flag is the key with dashes (see Keys).
type Config struct {
	// DatabaseURL is the PostgreSQL connection string. It may hold a password;
	// print it only through RedactURL.
	DatabaseURL string `mapstructure:"database_url"`
	// DatabaseDirectURL reaches PostgreSQL itself, not a connection pooler:
	// the commands that need a session of their own (relay migrate, demo's
	// database creation) use it. Empty means DatabaseURL, which must then
	// not go through a transaction pooler for those commands. It may hold a
	// password; print it only through RedactURL.
	DatabaseDirectURL string `mapstructure:"database_direct_url"`
	// DatabasePooler says what DatabaseURL reaches: PoolerNone (PostgreSQL
	// itself, or a session pooler) or PoolerTransaction (a transaction
	// pooler such as PgBouncer with pool_mode = transaction). With
	// PoolerTransaction relay uses no prepared statements (pgx's exec
	// mode), River polls instead of LISTENing, and relay sends no session
	// settings at connect: statement_timeout,
	// idle_in_transaction_timeout and database_schema must be the
	// defaults of relay's role and database on the server, which relay
	// checks at startup (docs/operations.md, "Behind a connection pooler").
	DatabasePooler string `mapstructure:"database_pooler"`
	// DatabaseSchema, when set, is the schema relay's and River's tables live
	// in (it becomes the connection's search_path). Empty means the default
	// search_path.
	DatabaseSchema string `mapstructure:"database_schema"`
	// StatementTimeout bounds every statement relay runs.
	StatementTimeout time.Duration `mapstructure:"statement_timeout"`
	// IdleInTransactionTimeout ends sessions that hold a transaction open
	// without doing anything, so a stuck client cannot hold locks forever.
	IdleInTransactionTimeout time.Duration `mapstructure:"idle_in_transaction_timeout"`

	// LogLevel is debug, info, warn or error.
	LogLevel string `mapstructure:"log_level"`
	// LogFormat is text or json.
	LogFormat string `mapstructure:"log_format"`

	// WorkerConcurrency is how many resolve_file batches one worker process
	// works at once. A batch spends much of its time waiting for PostgreSQL
	// (round trips, locks, the commit's WAL flush), so it pays to run
	// several per core (BENCHMARKS.md's decision log).
	WorkerConcurrency int `mapstructure:"worker_concurrency"`
	// POITimeout is the deadline for resolving one POI; a POI that exceeds it
	// is dead-lettered with error class timeout.
	POITimeout time.Duration `mapstructure:"poi_timeout"`
	// JobTimeout is the deadline for one resolve_file batch.
	JobTimeout time.Duration `mapstructure:"job_timeout"`
	// MaxAttempts is how many times River tries a batch whose transaction
	// fails before discarding it (and relay capturing it into
	// dead_lettered_items).
	MaxAttempts int `mapstructure:"max_attempts"`
	// RescueStuckJobsAfter is how long a job may stay running before River's
	// rescuer makes it available again (a worker that was killed). It must be
	// longer than JobTimeout. River's own default is one hour.
	RescueStuckJobsAfter time.Duration `mapstructure:"rescue_stuck_jobs_after"`
	// DiscardedJobRetention is how long River keeps discarded jobs. relay
	// captures them into dead_lettered_items every SweepInterval, so this
	// only needs to be comfortably longer than that.
	DiscardedJobRetention time.Duration `mapstructure:"discarded_job_retention"`
	// SweepInterval is how often a worker captures discarded resolve_file
	// jobs into dead_lettered_items.
	SweepInterval time.Duration `mapstructure:"sweep_interval"`
	// WorkerHeartbeatInterval is how often a worker renews its row in
	// relay_workers and looks for workers that are gone.
	WorkerHeartbeatInterval time.Duration `mapstructure:"worker_heartbeat_interval"`
	// WorkerHeartbeatTimeout is how old a worker's heartbeat may be before
	// other workers treat it as gone (killed, out of memory, node lost) and
	// return its running jobs to the queue. A worker that cannot renew its
	// heartbeat for this long, less one interval, stops working. It must be
	// at least three intervals and shorter than rescue_stuck_jobs_after.
	WorkerHeartbeatTimeout time.Duration `mapstructure:"worker_heartbeat_timeout"`
	// ShutdownTimeout is how long a worker told to stop (SIGINT/SIGTERM)
	// lets in-flight batches finish before cancelling them; a cancelled
	// batch rolls back and is retried later, so nothing is lost.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// FetchCooldown is the least time between two fetches of jobs by one
	// worker. River's default (100ms) caps a worker at a few dozen jobs a
	// second whatever their size; relay's batches are short, so it fetches
	// more eagerly.
	FetchCooldown time.Duration `mapstructure:"fetch_cooldown"`
	// FetchPollInterval is how often a worker fetches jobs at least. A job
	// inserted through a direct connection wakes the worker at once
	// (LISTEN); behind a transaction pooler, which has no LISTEN, this is
	// how long a new job can wait (River's default is 1s).
	FetchPollInterval time.Duration `mapstructure:"fetch_poll_interval"`
	// PublishQueueInterval is how often an idle worker looks for analyses
	// queued by the SQL publish API (relay_publish): how long a committed
	// SQL publish can wait before a worker publishes it.
	PublishQueueInterval time.Duration `mapstructure:"publish_queue_interval"`
	// LinkDelay is how long after its publish a file's references are
	// linked at the earliest. A reference linked before the files it calls
	// are published is resolved again when they are; waiting this long
	// lets a bulk load's callees arrive first. Relationships become final
	// this much later at least; zero links at once.
	LinkDelay time.Duration `mapstructure:"link_delay"`
	// GCPercent is the Go garbage collector's target (GOGC) in processes
	// that work batches (relay worker, demo, analyze). A worker's live heap
	// is a few MiB, so collecting when it has grown 4x rather than 1x costs
	// a few tens of MiB and buys throughput (BENCHMARKS.md's decision log).
	// The GOGC environment variable, when set, wins; -1 turns the collector
	// off (then set GOMEMLIMIT).
	GCPercent int `mapstructure:"gc_percent"`
	// RiverSynchronousCommit is the synchronous_commit of the connections
	// River's own statements run on in a worker (fetching jobs, completing
	// them after they ran, maintenance): "off" lets them commit without
	// waiting for the WAL flush. Nothing relay writes runs on them (a
	// batch's writes and its job's completion commit together, with the
	// server's setting), and what River writes there is either redone or
	// made durable by the batch that follows it: a lost fetch is fetched
	// again, and a batch's commit flushes the WAL up to it, the fetch
	// included. "on" (or any other synchronous_commit value) makes them
	// wait.
	RiverSynchronousCommit string `mapstructure:"river_synchronous_commit"`

	// MaxJobBytes is the size, in bytes of POI JSON, above which a file's
	// POIs are split across several resolve_file jobs.
	MaxJobBytes int `mapstructure:"max_job_bytes"`
	// MaxPOIBytes is the largest single POI accepted at publish.
	MaxPOIBytes int `mapstructure:"max_poi_bytes"`

	// ReprocessMaxAttempts caps how often one failed_pois row goes through
	// `relay reprocess`; a row that keeps failing leaves the automatic path.
	ReprocessMaxAttempts int `mapstructure:"reprocess_max_attempts"`

	// MapReduceMaxRetries is the default retries per MapReduce work item: an
	// item is dead-lettered after MapReduceMaxRetries+1 failed attempts.
	MapReduceMaxRetries int `mapstructure:"mapreduce_max_retries"`
	// MapReduceParallel bounds the agents one worker process runs at once.
	MapReduceParallel int `mapstructure:"mapreduce_parallel"`
	// MapReduceTimeout is the default deadline for one agent run.
	MapReduceTimeout time.Duration `mapstructure:"mapreduce_timeout"`
	// MapReduceWorkdir is where per-attempt working directories and agent
	// logs are created (empty: a private per-user directory,
	// agent.DefaultBaseDir: relay/mapreduce in the user's cache directory).
	MapReduceWorkdir string `mapstructure:"mapreduce_workdir"`
	// AgentEnv adds variables to MapReduce agents' environment, which is
	// otherwise an allow-list (agent.AllowedEnv): NAME passes NAME's value in
	// relay's environment as relay started, NAME=VALUE sets it. RELAY_* and
	// PG* names are refused: they are relay's own and the database's
	// credentials. RELAY_AGENT_ENV holds entries separated by blanks; the
	// flag is repeatable.
	AgentEnv []string `mapstructure:"agent_env"`
	// AgentUser is the user MapReduce agents run as when relay runs as root
	// (its uid and gid, no supplementary groups); relay runs no agent as
	// root, and refuses to start one until it is set. Empty: agents run as
	// relay's user, which must not be root.
	AgentUser string `mapstructure:"agent_user"`
	// DLQMaxItems caps dead_lettered_items rows per MapReduce job; when full
	// the oldest 10% are evicted (and the eviction recorded).
	DLQMaxItems int `mapstructure:"dlq_max_items"`

	// HTTPAddr is where `relay worker` serves /healthz, /readyz and
	// /metrics; empty turns the server off. Use a loopback address such as
	// 127.0.0.1:9090 unless a scraper must reach it from elsewhere.
	HTTPAddr string `mapstructure:"http_addr"`
	// HealthMaxNewFailedPOIs: above this many failed_pois rows in status
	// new, /readyz reports "degraded".
	HealthMaxNewFailedPOIs int `mapstructure:"health_max_new_failed_pois"`
	// HealthMaxDeadLetteredItems: above this many dead_lettered_items not
	// yet reprocessed, /readyz reports "degraded".
	HealthMaxDeadLetteredItems int `mapstructure:"health_max_dead_lettered_items"`
	// MetricsRefresh is how often the dead-letter and queue gauges are read
	// from the database (at most once per interval, however often scraped).
	MetricsRefresh time.Duration `mapstructure:"metrics_refresh"`

	// UIAddr is where `relay ui` serves the web console. An address other
	// than loopback requires UIPassword or UIToken.
	UIAddr string `mapstructure:"ui_addr"`
	// UIReadOnly hides the console's actions and rejects them with 403.
	UIReadOnly bool `mapstructure:"ui_read_only"`
	// UIUser and UIPassword are the console's HTTP basic auth credentials
	// (both or neither).
	UIUser     string `mapstructure:"ui_user"`
	UIPassword string `mapstructure:"ui_password"`
	// UIToken is a bearer token the console accepts (Authorization: Bearer).
	UIToken string `mapstructure:"ui_token"`
	// WorkerConsole mounts the web console under /ui/ in the worker's HTTP
	// server (http_addr), with the same ui_* authentication and read-only
	// settings.
	WorkerConsole bool `mapstructure:"worker_console"`
}

// UIAddrDefault is where `relay ui` listens by default: loopback only.
const UIAddrDefault = "127.0.0.1:8080"

// The values of database_pooler.
const (
	// PoolerNone: database_url reaches PostgreSQL, or a pooler that gives
	// each client a session of its own (PgBouncer's pool_mode = session).
	PoolerNone = "none"
	// PoolerTransaction: database_url reaches a pooler that hands out a
	// server connection per transaction (PgBouncer's pool_mode =
	// transaction, RDS Proxy, Supavisor, pgcat).
	PoolerTransaction = "transaction"
)

// TransactionPooler reports whether database_url goes through a
// transaction pooler.
func (c *Config) TransactionPooler() bool { return c.DatabasePooler == PoolerTransaction }

// SessionURL is the URL of a connection that keeps its session (advisory
// locks, several transactions on one backend): database_direct_url, or
// database_url when that is unset.
func (c *Config) SessionURL() string {
	if c.DatabaseDirectURL != "" {
		return c.DatabaseDirectURL
	}
	return c.DatabaseURL
}

// Default returns a Config holding every default.
func Default() *Config {
	return &Config{
		DatabaseURL:                DatabaseURLDefault,
		DatabasePooler:             DatabasePoolerDefault,
		StatementTimeout:           StatementTimeoutDefault,
		IdleInTransactionTimeout:   IdleInTransactionTimeoutDefault,
		LogLevel:                   LogLevelDefault,
		LogFormat:                  LogFormatDefault,
		WorkerConcurrency:          WorkerConcurrencyDefault,
		POITimeout:                 POITimeoutDefault,
		JobTimeout:                 JobTimeoutDefault,
		MaxAttempts:                outbox.MaxAttemptsDefault,
		RescueStuckJobsAfter:       RescueStuckJobsAfterDefault,
		DiscardedJobRetention:      DiscardedJobRetentionDefault,
		SweepInterval:              SweepIntervalDefault,
		WorkerHeartbeatInterval:    WorkerHeartbeatIntervalDefault,
		WorkerHeartbeatTimeout:     WorkerHeartbeatTimeoutDefault,
		ShutdownTimeout:            ShutdownTimeoutDefault,
		FetchCooldown:              FetchCooldownDefault,
		FetchPollInterval:          FetchPollIntervalDefault,
		PublishQueueInterval:       PublishQueueIntervalDefault,
		LinkDelay:                  LinkDelayDefault,
		GCPercent:                  GCPercentDefault,
		RiverSynchronousCommit:     RiverSynchronousCommitDefault,
		MaxJobBytes:                outbox.MaxJobBytesDefault,
		MaxPOIBytes:                outbox.MaxPOIBytesDefault,
		ReprocessMaxAttempts:       failed.ReprocessMaxAttemptsDefault,
		MapReduceMaxRetries:        MapReduceMaxRetriesDefault,
		MapReduceParallel:          MapReduceParallelDefault,
		MapReduceTimeout:           MapReduceTimeoutDefault,
		DLQMaxItems:                DLQMaxItemsDefault,
		HealthMaxNewFailedPOIs:     HealthMaxNewFailedPOIsDefault,
		HealthMaxDeadLetteredItems: HealthMaxDeadLetteredDefault,
		MetricsRefresh:             MetricsRefreshDefault,
		UIAddr:                     UIAddrDefault,
	}
}

var schemaNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Validate returns an error naming the first setting that is out of range.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("invalid %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(c.DatabaseURL) == "" {
		bad("database_url", "must not be empty")
	}
	if c.DatabasePooler != PoolerNone && c.DatabasePooler != PoolerTransaction {
		bad("database_pooler", "%q must be %s or %s", c.DatabasePooler, PoolerNone, PoolerTransaction)
	}
	if c.DatabaseSchema != "" && !schemaNameRE.MatchString(c.DatabaseSchema) {
		bad("database_schema", "%q must be a lower-case identifier (letters, digits, underscore)", c.DatabaseSchema)
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		bad("log_level", "%v", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("log_format", "%q must be text or json", c.LogFormat)
	}
	if c.WorkerConcurrency < 1 || c.WorkerConcurrency > 10_000 {
		bad("worker_concurrency", "%d must be between 1 and 10000", c.WorkerConcurrency)
	}
	for key, d := range map[string]time.Duration{
		"poi_timeout": c.POITimeout, "job_timeout": c.JobTimeout, "rescue_stuck_jobs_after": c.RescueStuckJobsAfter,
		"discarded_job_retention": c.DiscardedJobRetention, "sweep_interval": c.SweepInterval, "shutdown_timeout": c.ShutdownTimeout, "fetch_cooldown": c.FetchCooldown,
		"fetch_poll_interval": c.FetchPollInterval, "publish_queue_interval": c.PublishQueueInterval,
		"statement_timeout": c.StatementTimeout, "idle_in_transaction_timeout": c.IdleInTransactionTimeout,
		"mapreduce_timeout": c.MapReduceTimeout, "metrics_refresh": c.MetricsRefresh,
		"worker_heartbeat_interval": c.WorkerHeartbeatInterval, "worker_heartbeat_timeout": c.WorkerHeartbeatTimeout,
	} {
		if d <= 0 {
			bad(key, "%s must be positive", d)
		}
	}
	if c.LinkDelay < 0 || c.LinkDelay > time.Minute {
		bad("link_delay", "%s must be between 0 and 1m", c.LinkDelay)
	}
	if c.FetchPollInterval < c.FetchCooldown {
		bad("fetch_poll_interval", "%s must be at least fetch_cooldown (%s)", c.FetchPollInterval, c.FetchCooldown)
	}
	if c.RescueStuckJobsAfter <= c.JobTimeout {
		bad("rescue_stuck_jobs_after", "%s must be longer than job_timeout (%s), or River would rescue jobs that are still being worked", c.RescueStuckJobsAfter, c.JobTimeout)
	}
	if c.RescueStuckJobsAfter <= c.MapReduceTimeout {
		bad("rescue_stuck_jobs_after", "%s must be longer than mapreduce_timeout (%s), or River would rescue agents that are still running", c.RescueStuckJobsAfter, c.MapReduceTimeout)
	}
	if c.WorkerHeartbeatTimeout < 3*c.WorkerHeartbeatInterval {
		bad("worker_heartbeat_timeout", "%s must be at least three worker_heartbeat_interval (%s)", c.WorkerHeartbeatTimeout, c.WorkerHeartbeatInterval)
	}
	if c.WorkerHeartbeatTimeout >= c.RescueStuckJobsAfter {
		bad("worker_heartbeat_timeout", "%s must be shorter than rescue_stuck_jobs_after (%s)", c.WorkerHeartbeatTimeout, c.RescueStuckJobsAfter)
	}
	if c.DiscardedJobRetention <= c.SweepInterval {
		bad("discarded_job_retention", "%s must be longer than sweep_interval (%s)", c.DiscardedJobRetention, c.SweepInterval)
	}
	if c.GCPercent < -1 || (c.GCPercent >= 0 && c.GCPercent < 10) {
		bad("gc_percent", "%d must be -1 (off) or at least 10", c.GCPercent)
	}
	switch c.RiverSynchronousCommit {
	case "on", "off", "local", "remote_write", "remote_apply":
	default:
		bad("river_synchronous_commit", "%q must be one of on, off, local, remote_write, remote_apply", c.RiverSynchronousCommit)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 1000 {
		bad("max_attempts", "%d must be between 1 and 1000", c.MaxAttempts)
	}
	if c.MaxJobBytes < 1024 {
		bad("max_job_bytes", "%d must be at least 1024", c.MaxJobBytes)
	}
	if c.MaxPOIBytes < 1024 || c.MaxPOIBytes > 256<<20 {
		bad("max_poi_bytes", "%d must be between 1024 and %d", c.MaxPOIBytes, 256<<20)
	}
	if c.ReprocessMaxAttempts < 1 {
		bad("reprocess_max_attempts", "%d must be at least 1", c.ReprocessMaxAttempts)
	}
	if c.MapReduceMaxRetries < 0 || c.MapReduceMaxRetries > 100 {
		bad("mapreduce_max_retries", "%d must be between 0 and 100", c.MapReduceMaxRetries)
	}
	if c.MapReduceParallel < 1 || c.MapReduceParallel > 1000 {
		bad("mapreduce_parallel", "%d must be between 1 and 1000", c.MapReduceParallel)
	}
	if c.HealthMaxNewFailedPOIs < 0 {
		bad("health_max_new_failed_pois", "%d must not be negative", c.HealthMaxNewFailedPOIs)
	}
	if c.HealthMaxDeadLetteredItems < 0 {
		bad("health_max_dead_lettered_items", "%d must not be negative", c.HealthMaxDeadLetteredItems)
	}
	if c.HTTPAddr != "" {
		if err := checkListenAddr(c.HTTPAddr); err != nil {
			bad("http_addr", "%q %v", c.HTTPAddr, err)
		}
	}
	if err := checkListenAddr(c.UIAddr); err != nil {
		bad("ui_addr", "%q %v", c.UIAddr, err)
	}
	if (c.UIUser == "") != (c.UIPassword == "") {
		bad("ui_user", "ui_user and ui_password go together: set both for basic auth, or neither")
	}
	if c.WorkerConsole && c.HTTPAddr == "" {
		bad("worker_console", "needs http_addr: the console is mounted in the worker's HTTP server")
	}
	if c.DLQMaxItems < 10 {
		bad("dlq_max_items", "%d must be at least 10", c.DLQMaxItems)
	}
	for _, spec := range c.AgentEnv {
		if _, _, _, err := agent.ParseEnvSpec(spec); err != nil {
			bad("agent_env", "%v", err)
		}
	}
	if strings.ContainsFunc(c.AgentUser, func(r rune) bool { return r <= ' ' || r == ':' || r == '/' }) {
		bad("agent_user", "%q must be a user name or a numeric uid", c.AgentUser)
	}
	return errors.Join(errs...)
}

// checkListenAddr checks that addr is host:port with a valid port (a number
// from 0 to 65535 or a service name), so that a typo is a usage error before
// anything starts rather than a failure to listen after the worker has
// connected.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("must be host:port, e.g. 127.0.0.1:9090 (port 0 picks a free one)")
	}
	if strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == '/' || r == '@' }) {
		return fmt.Errorf("has an invalid host %q", host)
	}
	if port == "" {
		return errors.New("lacks a port, e.g. 127.0.0.1:9090")
	}
	if n, err := strconv.ParseUint(port, 10, 64); err == nil {
		if n > 65535 {
			return fmt.Errorf("port %s is out of range (0-65535)", port)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is neither a number from 0 to 65535 nor a known service", port)
	}
	return nil
}

// ParseLogLevel maps debug, info, warn and error to slog levels.
func ParseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q is not one of debug, info, warn, error", s)
	}
	return l, nil
}
