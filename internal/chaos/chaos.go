// Package chaos is relay's fault-injection harness: it builds the relay
// binary, publishes a synthetic corpus into a throwaway database through
// `relay publish`, runs `relay worker` processes under a fault (SIGKILL,
// SIGTERM, three workers at once, a PostgreSQL restart, an unwritable
// failed_pois), and then checks in SQL that every published POI is
// accounted for exactly once and every relationship is the expected one.
// cmd/relay-chaos is its command line.
package chaos

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/pgbouncer"
)

// The scenarios, in the order they run.
const (
	ScenarioKill       = "kill"
	ScenarioScaleOut   = "scale-out"
	ScenarioPGRestart  = "postgres-restart"
	ScenarioSIGTERM    = "sigterm"
	ScenarioSafetyNet  = "safety-net"
	ScenarioReprocess  = "reprocess-kill"
	ScenarioMapReduce  = "mapreduce-kill"
	DatabaseURLDefault = "postgres://root@127.0.0.1:5432/postgres?sslmode=disable"
)

// AllScenarios lists every scenario in run order.
var AllScenarios = []string{ScenarioKill, ScenarioScaleOut, ScenarioPGRestart, ScenarioSIGTERM, ScenarioSafetyNet, ScenarioReprocess, ScenarioMapReduce}

// Defaults for Config.
const (
	FilesDefault       = 1000
	POIsPerFileDefault = 100
	MalformedDefault   = 0.01
	KillsDefault       = 20
	SIGTERMsDefault    = 4
	// The workers run with relay's defaults: a killed worker's batches come
	// back through the other workers' heartbeat check (worker.Liveness),
	// not through a shortened River rescue window.
	RescueAfterDefault     = config.RescueStuckJobsAfterDefault
	JobTimeoutDefault      = config.JobTimeoutDefault
	ShutdownTimeoutDefault = 5 * time.Second
	KillDelayMinDefault    = 150 * time.Millisecond
	KillDelayMaxDefault    = 1500 * time.Millisecond
	ScenarioTimeoutDefault = 20 * time.Minute
	PGRestartDefault       = "pg_ctlcluster --skip-systemctl-redirect 15 main restart"
)

// Config is one harness run.
type Config struct {
	Files       int
	POIsPerFile int
	// Malformed is the fraction of POIs the worker must dead-letter.
	Malformed float64
	Kills     int
	SIGTERMs  int
	Scenarios []string
	Seed      uint64
	// DatabaseURL points at the server; scenario databases are created
	// beside the database it names and dropped at the end unless Keep.
	DatabaseURL    string
	Keep           bool
	AllowPGRestart bool
	// PGRestart is the command that restarts the server.
	PGRestart string
	// PoolerURL, when set, is a transaction pooler (PgBouncer with
	// pool_mode = transaction) in front of DatabaseURL's server that
	// reaches each database under its own name: the relay processes
	// connect through it with database_pooler: transaction, and migrate
	// with database_direct_url. The harness's own checks connect directly.
	PoolerURL string
	// PgBouncer, when set, starts a stock PgBouncer (internal/pgbouncer)
	// in front of DatabaseURL's server for the run and sets PoolerURL to it.
	PgBouncer bool
	// RelayBinary, when set, is used instead of building ./cmd/relay.
	RelayBinary string
	// WorkDir holds the binary and every subprocess's log (a temp dir when
	// empty; kept when Keep).
	WorkDir string
	// Worker settings, passed as RELAY_* variables.
	RescueAfter     time.Duration
	JobTimeout      time.Duration
	ShutdownTimeout time.Duration
	// KillDelayMin and KillDelayMax bound the random delay before each
	// SIGKILL.
	KillDelayMin, KillDelayMax time.Duration
	// ScenarioTimeout bounds each scenario.
	ScenarioTimeout time.Duration
	// Progress receives a line per event (kills, restarts); may be nil.
	Progress io.Writer
}

func (c *Config) withDefaults() Config {
	out := *c
	out.Files = cmp.Or(out.Files, FilesDefault)
	out.POIsPerFile = cmp.Or(out.POIsPerFile, POIsPerFileDefault)
	if out.Malformed == 0 {
		out.Malformed = MalformedDefault
	}
	out.Kills = cmp.Or(out.Kills, KillsDefault)
	out.SIGTERMs = cmp.Or(out.SIGTERMs, SIGTERMsDefault)
	if len(out.Scenarios) == 0 {
		out.Scenarios = AllScenarios
	}
	out.DatabaseURL = cmp.Or(out.DatabaseURL, DatabaseURLDefault)
	out.PGRestart = cmp.Or(out.PGRestart, PGRestartDefault)
	out.RescueAfter = cmp.Or(out.RescueAfter, RescueAfterDefault)
	out.JobTimeout = cmp.Or(out.JobTimeout, JobTimeoutDefault)
	out.ShutdownTimeout = cmp.Or(out.ShutdownTimeout, ShutdownTimeoutDefault)
	out.KillDelayMin = cmp.Or(out.KillDelayMin, KillDelayMinDefault)
	out.KillDelayMax = cmp.Or(out.KillDelayMax, KillDelayMaxDefault)
	out.ScenarioTimeout = cmp.Or(out.ScenarioTimeout, ScenarioTimeoutDefault)
	if out.Progress == nil {
		out.Progress = io.Discard
	}
	return out
}

func (c *Config) validate() error {
	var errs []error
	if c.Files < 1 || c.POIsPerFile < 1 {
		errs = append(errs, fmt.Errorf("invalid files/pois-per-file: %d × %d must both be positive", c.Files, c.POIsPerFile))
	}
	if c.Malformed < 0 || c.Malformed > 0.5 {
		errs = append(errs, fmt.Errorf("invalid malformed fraction: %g must be between 0 and 0.5", c.Malformed))
	}
	if c.RescueAfter <= c.JobTimeout {
		errs = append(errs, fmt.Errorf("invalid rescue-after: %s must be longer than job-timeout %s", c.RescueAfter, c.JobTimeout))
	}
	if c.KillDelayMax < c.KillDelayMin {
		errs = append(errs, fmt.Errorf("invalid kill delays: max %s is below min %s", c.KillDelayMax, c.KillDelayMin))
	}
	for _, s := range c.Scenarios {
		if !slicesContains(AllScenarios, s) {
			errs = append(errs, fmt.Errorf("invalid scenario %q: want one of %s", s, strings.Join(AllScenarios, ", ")))
		}
		if s == ScenarioPGRestart && !c.AllowPGRestart {
			errs = append(errs, fmt.Errorf("scenario %s restarts the PostgreSQL server; pass --allow-pg-restart", s))
		}
	}
	return errors.Join(errs...)
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Report is what a run did and found.
type Report struct {
	Seed        uint64        `json:"seed"`
	Files       int           `json:"files"`
	POIs        int           `json:"pois"`
	Malformed   int           `json:"malformed_pois"`
	Edges       int           `json:"expected_relationships"`
	WorkDir     string        `json:"work_dir"`
	Results     []*Result     `json:"scenarios"`
	TotalTime   time.Duration `json:"total_ns"`
	ReferenceDB string        `json:"reference_database,omitempty"`
}

// Passed reports whether every scenario held every invariant.
func (r *Report) Passed() bool {
	for _, res := range r.Results {
		if !res.Passed {
			return false
		}
	}
	return len(r.Results) > 0
}

// Result is one scenario's figures.
type Result struct {
	Scenario string `json:"scenario"`
	Database string `json:"database"`
	Passed   bool   `json:"passed"`
	// Processes counts relay worker processes started; Concurrent is the
	// most that ran at once.
	Processes  int `json:"worker_processes"`
	Concurrent int `json:"concurrent_workers"`
	Kills      int `json:"kills"`
	SIGTERMs   int `json:"sigterms"`
	PGRestarts int `json:"pg_restarts"`
	// Stranded counts batches left running by a killed worker, all of
	// which must come back to the queue (the live workers' heartbeat check,
	// or River's rescuer as the last resort).
	Stranded int `json:"stranded_batches"`
	// Rescue* are, per kill, how long until every batch it stranded was
	// back in the queue (the last of them), over the kills: kill-to-retry
	// latency.
	RescueMin    time.Duration `json:"rescue_min_ns"`
	RescueMedian time.Duration `json:"rescue_median_ns"`
	RescueP99    time.Duration `json:"rescue_p99_ns"`
	RescueMax    time.Duration `json:"rescue_max_ns"`
	// Expedited counts retryable batches made due now with River's
	// JobRetry instead of waiting for their backoff.
	Expedited int `json:"expedited_retries"`
	// SafetyNetFailures counts batches that failed because failed_pois
	// could not be written (safety-net), from the workers' error logs.
	SafetyNetFailures int `json:"safety_net_batch_failures"`
	// SIGTERMExitMax is the slowest exit after SIGTERM.
	SIGTERMExitMax time.Duration `json:"sigterm_exit_max_ns"`
	// ReferenceMatch is set by scale-out: the relationships equal those of
	// a single-worker run of the same corpus.
	ReferenceMatch *bool         `json:"matches_single_worker_reference,omitempty"`
	Publish        time.Duration `json:"publish_ns"`
	Work           time.Duration `json:"work_ns"`
	Check          Invariants    `json:"invariants"`
	Lost           int           `json:"lost"`
	Duplicated     int           `json:"duplicated"`
	Violations     []string      `json:"violations"`
	Notes          []string      `json:"notes,omitempty"`
}

// harness is the state of one run.
type harness struct {
	cfg      Config
	corpus   *Corpus
	ndjson   []byte
	binary   string
	workDir  string
	rng      *mrand.Rand
	logger   *slog.Logger
	refRels  []string
	refDB    string
	dbPrefix string
}

// Run builds relay, generates the corpus and runs every scenario of cfg.
// It returns an error only when the harness itself cannot run; invariant
// violations are in the report (Report.Passed).
func Run(ctx context.Context, cfg *Config) (*Report, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	h := &harness{cfg: c, rng: mrand.New(mrand.NewPCG(c.Seed, c.Seed+1)),
		logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h.workDir = c.WorkDir
	if h.workDir == "" {
		dir, err := os.MkdirTemp("", "relay-chaos-")
		if err != nil {
			return nil, fmt.Errorf("error creating work dir: %w", err)
		}
		h.workDir = dir
		if !c.Keep {
			defer os.RemoveAll(dir)
		}
	}
	h.dbPrefix = "relay_chaos_" + randomHex(4)
	if c.PgBouncer {
		b, err := pgbouncer.Start(ctx, c.DatabaseURL)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		h.cfg.PoolerURL = b.URL(c.DatabaseURL)
		h.progress("relay-chaos: relay connects through PgBouncer (pool_mode = transaction) on %s", b.Addr())
	}
	if h.cfg.PoolerURL != "" {
		if u, err := url.Parse(h.cfg.PoolerURL); err != nil || u.Host == "" {
			return nil, errors.New("the pooler URL must be a postgres:// URL with a host")
		}
	}

	h.binary = c.RelayBinary
	if h.binary == "" {
		bin, err := buildRelay(ctx, h.workDir)
		if err != nil {
			return nil, err
		}
		h.binary = bin
	}
	corpus, err := Generate(c.Files, c.POIsPerFile, c.Malformed, c.Seed)
	if err != nil {
		return nil, err
	}
	h.corpus, h.ndjson = corpus, corpus.NDJSON()
	rep := &Report{Seed: c.Seed, Files: c.Files, POIs: corpus.POIs, Malformed: len(corpus.Malformed),
		Edges: len(corpus.Edges), WorkDir: h.workDir}
	h.progress("relay-chaos: seed %d, %d files × %d POIs = %d POIs (%d malformed, %d expected relationships), work dir %s",
		c.Seed, c.Files, c.POIsPerFile, corpus.POIs, len(corpus.Malformed), len(corpus.Edges), h.workDir)

	for _, name := range c.Scenarios {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res, err := h.runScenario(ctx, name)
		if err != nil {
			return rep, fmt.Errorf("error running scenario %s: %w", name, err)
		}
		rep.Results = append(rep.Results, res)
	}
	rep.ReferenceDB = h.refDB
	rep.TotalTime = time.Since(began)
	return rep, nil
}

func (h *harness) progress(format string, args ...any) {
	fmt.Fprintf(h.cfg.Progress, format+"\n", args...)
}

// buildRelay builds ./cmd/relay of the module the harness runs in.
func buildRelay(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("error locating the relay module (go env GOMOD): %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("error locating the relay module: run relay-chaos inside the relay repository, or pass a relay binary")
	}
	bin := filepath.Join(dir, "relay")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/relay")
	cmd.Dir = filepath.Dir(gomod)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("error building relay: %w: %s", err, msg)
	}
	return bin, nil
}

// scenarioDB is one scenario's throwaway database.
type scenarioDB struct {
	name string
	url  string
	pool *pgxpool.Pool
}

// newDatabase creates, migrates and publishes the corpus into a fresh
// database; it returns how long publishing took.
func (h *harness) newDatabase(ctx context.Context, label string) (*scenarioDB, time.Duration, error) {
	u, err := url.Parse(h.cfg.DatabaseURL)
	if err != nil {
		return nil, 0, fmt.Errorf("error parsing database URL: %w", err)
	}
	name := h.dbPrefix + "_" + strings.ReplaceAll(label, "-", "_")
	u.Path = "/" + name
	db := &scenarioDB{name: name, url: u.String()}
	if err := database.EnsureExists(ctx, db.url); err != nil {
		return nil, 0, err
	}
	if h.cfg.PoolerURL != "" {
		// What an operator does once per database behind a transaction
		// pooler: relay's session settings become the role's defaults.
		def := config.Default()
		def.DatabaseURL = db.url
		if err := database.SetSessionDefaults(ctx, db.url, database.OptionsFromConfig(def, "chaos")); err != nil {
			return nil, 0, err
		}
	}
	env := h.env(db, nil)
	fail := func(err error) (*scenarioDB, time.Duration, error) {
		h.drop(db)
		return nil, 0, err
	}
	if err := h.runRelay(ctx, label+"-migrate", env, nil, "migrate", "up"); err != nil {
		return fail(err)
	}
	began := time.Now()
	if err := h.runRelay(ctx, label+"-publish", env, h.ndjson, "publish", "-"); err != nil {
		return fail(err)
	}
	took := time.Since(began)
	db.pool, err = database.Open(ctx, db.url, database.Options{Role: "chaos", MaxConns: 4, StatementTimeout: 5 * time.Minute})
	if err != nil {
		return fail(err)
	}
	return db, took, nil
}

// drop removes the database unless the run keeps it.
func (h *harness) drop(db *scenarioDB) {
	if db.pool != nil {
		db.pool.Close()
	}
	if h.cfg.Keep {
		h.progress("  kept database %s", db.name)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := database.Drop(ctx, h.cfg.DatabaseURL, db.name); err != nil {
		h.progress("  could not drop database %s: %v", db.name, err)
	}
}

// env is the environment of a relay process working db.
func (h *harness) env(db *scenarioDB, extra map[string]string) []string {
	settings := map[string]string{
		"RELAY_DATABASE_URL":            db.url,
		"RELAY_RESCUE_STUCK_JOBS_AFTER": h.cfg.RescueAfter.String(),
		"RELAY_JOB_TIMEOUT":             h.cfg.JobTimeout.String(),
		// rescue_stuck_jobs_after must also exceed the MapReduce agent
		// deadline; no MapReduce job runs here.
		"RELAY_MAPREDUCE_TIMEOUT": h.cfg.JobTimeout.String(),
		"RELAY_SHUTDOWN_TIMEOUT":  h.cfg.ShutdownTimeout.String(),
		"RELAY_LOG_LEVEL":         "info",
	}
	if h.cfg.PoolerURL != "" {
		u, _ := url.Parse(h.cfg.PoolerURL) // validated by Run
		u.Path = "/" + db.name
		settings["RELAY_DATABASE_URL"] = u.String()
		settings["RELAY_DATABASE_DIRECT_URL"] = db.url
		settings["RELAY_DATABASE_POOLER"] = config.PoolerTransaction
	}
	for k, v := range extra {
		settings[k] = v
	}
	return relayEnv(settings)
}

// runRelay runs one relay command to completion and requires exit 0.
func (h *harness) runRelay(ctx context.Context, name string, env []string, stdin []byte, args ...string) error {
	p, err := start(h.workDir, name, h.binary, env, stdin, args...)
	if err != nil {
		return err
	}
	return p.wait(ctx)
}

// pending counts the jobs not completed yet (resolve_file batches and the
// link jobs that make their relationships final), and the batches running.
func pending(ctx context.Context, pool *pgxpool.Pool) (notCompleted, running int, err error) {
	err = pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state <> 'completed'), count(*) FILTER (WHERE state = 'running' AND kind = 'resolve_file')
		FROM river_job WHERE kind IN ('resolve_file', 'link')`).Scan(&notCompleted, &running)
	if err != nil {
		return 0, 0, fmt.Errorf("error reading the queue: %w", err)
	}
	return notCompleted, running, nil
}

// pollInterval is how often the harness looks at the queue while it waits
// for a condition (the wait itself is bounded by a deadline).
const pollInterval = 100 * time.Millisecond

// inFlightPoll is how often the harness looks for a batch in flight, to
// strike while one runs (batches take tens of milliseconds).
const inFlightPoll = 5 * time.Millisecond

// waitFor polls cond every interval until it is true, ctx ends or timeout
// passes. Query errors are tolerated until the deadline (the server may be
// restarting); an error cond wraps in hopeless (a worker that exited, say)
// ends the wait at once.
func waitFor(ctx context.Context, interval, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		var h hopelessError
		if errors.As(err, &h) {
			return fmt.Errorf("gave up waiting for %s: %w", what, h.error)
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// hopelessError is a condition's error that no wait can cure.
type hopelessError struct{ error }

// hopeless marks err as ending a waitFor at once.
func hopeless(err error) error { return hopelessError{err} }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
