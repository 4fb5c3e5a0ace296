// Package bench is relay-bench: it measures relay against what this
// PostgreSQL can physically write and against the one-job-per-POI design it
// replaced, on a throwaway database, and reports every figure as a table or
// one JSON object. The phases and the JSON fields are documented in
// BENCHMARKS.md.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/goanalyze"
)

// Phases, in the order they run.
const (
	PhaseCeiling    = "ceiling"
	PhaseRelay      = "relay"
	PhaseBaseline   = "baseline"
	PhaseFailures   = "failures"
	PhaseDeadLetter = "deadletter"
	PhaseStdlib     = "stdlib"
	PhaseMemory     = "memory"
	PhaseRiver      = "river"
	PhaseCLI        = "cli"
	PhaseFreshness  = "freshness"
	PhaseSQL        = "sql"
	PhaseSQLLatency = "sqllatency"
	PhaseRepos      = "repositories"
	PhaseGraph      = "graph"
)

// AllPhases lists every phase; phase n of --phases is AllPhases[n-1].
var AllPhases = []string{PhaseCeiling, PhaseRelay, PhaseBaseline, PhaseFailures, PhaseDeadLetter, PhaseStdlib, PhaseMemory,
	PhaseRiver, PhaseCLI, PhaseFreshness, PhaseSQL, PhaseSQLLatency, PhaseRepos, PhaseGraph}

// DefaultPhases are the phases a run without --phases does: all but the
// memory phase (it runs 1M POIs) and the repositories phase (it repeats the
// relay phase's concurrent run twice a round).
var DefaultPhases = slices.DeleteFunc(slices.Clone(AllPhases), func(p string) bool { return p == PhaseMemory || p == PhaseRepos })

// Defaults for Config.
const (
	DatabaseURLDefault   = "postgres://root@127.0.0.1:5432/postgres?sslmode=disable"
	FilesDefault         = 2000
	POIsPerFileDefault   = 50
	MalformedDefault     = 0.01
	WorkersDefault       = config.WorkerConcurrencyDefault
	FilesPerTxDefault    = 20
	BaselineFilesDefault = 100
	FailureRateDefault   = 0.20
	FailedRowsDefault    = 1_000_000
	ReprocessRowsDefault = 100_000
	MemoryFilesDefault   = 20_000
	// SQLLatencySamplesDefault publishes of about a second each (the
	// default gap's half and the latency) keep the sqllatency phase, both
	// ways of connecting, near five minutes.
	SQLLatencySamplesDefault = 200
	// SQLLatencyGapDefault is a multiple of the drainer's interval (200ms)
	// and of River's fetch poll interval (250ms), so that a pause uniform in
	// [0, gap) puts the publishes uniformly over both timers' phases.
	SQLLatencyGapDefault = time.Second
	// GraphPOIsDefault sizes the graph phase for a quick run (about a
	// minute); --graph-pois 1000000 is the size its targets are set for.
	GraphPOIsDefault = 100_000
	// GraphPOIsMin leaves room beside the corpus's tree of 1,111 POIs.
	GraphPOIsMin = 5000
)

// Config.RelayRuns values.
const (
	RelayRunsBoth       = "both"
	RelayRunsSequential = "sequential"
	RelayRunsConcurrent = "concurrent"
)

// Config is one benchmark run.
type Config struct {
	// DatabaseURL names the server; the benchmark creates (and drops) its
	// own database on it.
	DatabaseURL string
	// Files and POIsPerFile size the synthetic corpus; Malformed is the
	// fraction of its POIs that are malformed.
	Files       int
	POIsPerFile int
	Malformed   float64
	// Repositories splits the main corpus into this many repositories
	// (consecutive files, each calling only within itself); 0 or 1: one.
	Repositories int
	// Phases to run (names or 1-based numbers); empty is DefaultPhases.
	Phases []string
	// GoSrc is the Go source tree the stdlib phase analyses.
	GoSrc string
	// Workers is the worker concurrency (River MaxWorkers of the resolve
	// queue).
	Workers int
	// FilesPerTx is how many files the publisher puts in one transaction.
	FilesPerTx int
	// BaselineFiles sizes the one-job-per-POI run (it is ~10-50x slower, so
	// a full-size run would take most of the time budget); its rate is
	// compared with relay's.
	BaselineFiles int
	// FailuresFiles sizes the failure-overhead runs (default Files/4), and
	// FailureRate is the failing run's malformed fraction.
	FailuresFiles int
	FailureRate   float64
	// FailedRows is the failed_pois row count of the dead-letter phase, and
	// ReprocessRows how many of them are reprocessed.
	FailedRows    int
	ReprocessRows int
	// MemoryFiles sizes the large memory run (x POIsPerFile POIs).
	MemoryFiles int
	// RelayRuns is which runs the relay phase does: "both" (the default),
	// "sequential" (publish, then work) or "concurrent" (publish while the
	// workers run).
	RelayRuns string
	// FetchCooldown, when positive, overrides relay's fetch_cooldown.
	FetchCooldown time.Duration
	// LinkDelay, when set, overrides relay's link_delay.
	LinkDelay *time.Duration
	// RiverSynchronousCommit, when set, overrides relay's
	// river_synchronous_commit.
	RiverSynchronousCommit string
	// StdlibReferences is the stdlib phase's reference mode
	// (goanalyze.ReferencesLexical by default: the phase measures
	// throughput; typed mode type-checks the whole tree first).
	StdlibReferences string
	// CLIWorkers are the numbers of `relay worker` processes the cli phase
	// runs relay with, one run each, in order.
	CLIWorkers []int
	// CLIPublishers are the numbers of concurrent `relay publish`
	// processes (the corpus split among them) of each cli run: every
	// CLIWorkers value runs with every CLIPublishers value.
	CLIPublishers []int
	// Publishers is how many goroutines publish the concurrent run's
	// corpus at once (PublishManyTx, each its own share of the files).
	Publishers int
	// SampleWaits samples the active backends' wait events every 0.3 s in
	// the cli runs and the concurrent run.
	SampleWaits bool
	// Rounds is how many times the relay phase's concurrent run is done,
	// and how many rounds (a Go publisher run and an SQL API run each) the
	// sql phase does.
	Rounds int
	// SQLLatencySamples is how many publishes the sqllatency phase times
	// each way (directly, through PgBouncer), and SQLLatencyGap the bound of
	// the random pause before each.
	SQLLatencySamples int
	SQLLatencyGap     time.Duration
	// GraphPOIs sizes the graph phase's corpus.
	GraphPOIs int
	// Keep leaves the database in place.
	Keep bool
	// Citus runs the benchmark on a Citus coordinator: DatabaseURL names the
	// coordinator's database (one with the citus extension, its nodes
	// added), and the run gets a schema of its own there, migrated and
	// distributed by repository (relay migrate distribute), instead of a
	// database. Only the relay and cli phases distribute.
	Citus bool
	// Logger receives relay's logs (discarded by default).
	Logger *slog.Logger
	// Progress receives one line per step (stderr in the command).
	Progress io.Writer
}

func (c *Config) defaults() {
	c.DatabaseURL = cmp.Or(c.DatabaseURL, DatabaseURLDefault)
	c.Files = cmp.Or(c.Files, FilesDefault)
	c.POIsPerFile = cmp.Or(c.POIsPerFile, POIsPerFileDefault)
	c.Workers = cmp.Or(c.Workers, WorkersDefault)
	c.FilesPerTx = cmp.Or(c.FilesPerTx, FilesPerTxDefault)
	c.BaselineFiles = cmp.Or(c.BaselineFiles, min(BaselineFilesDefault, c.Files))
	c.FailuresFiles = cmp.Or(c.FailuresFiles, max(1, c.Files/4))
	c.FailureRate = cmp.Or(c.FailureRate, FailureRateDefault)
	c.FailedRows = cmp.Or(c.FailedRows, FailedRowsDefault)
	c.ReprocessRows = cmp.Or(c.ReprocessRows, min(ReprocessRowsDefault, c.FailedRows))
	c.MemoryFiles = cmp.Or(c.MemoryFiles, MemoryFilesDefault)
	c.RelayRuns = cmp.Or(c.RelayRuns, RelayRunsBoth)
	if len(c.CLIWorkers) == 0 {
		c.CLIWorkers = []int{1}
	}
	if len(c.CLIPublishers) == 0 {
		c.CLIPublishers = []int{1}
	}
	c.Publishers = cmp.Or(c.Publishers, 1)
	c.Rounds = cmp.Or(c.Rounds, 1)
	c.SQLLatencySamples = cmp.Or(c.SQLLatencySamples, SQLLatencySamplesDefault)
	c.SQLLatencyGap = cmp.Or(c.SQLLatencyGap, SQLLatencyGapDefault)
	c.StdlibReferences = cmp.Or(c.StdlibReferences, goanalyze.ReferencesLexical)
	c.GraphPOIs = cmp.Or(c.GraphPOIs, GraphPOIsDefault)
	if len(c.Phases) == 0 {
		c.Phases = DefaultPhases
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// validate returns an error naming the first bad setting.
func (c *Config) validate() error {
	switch {
	case c.Files < 1:
		return fmt.Errorf("invalid files: %d must be at least 1", c.Files)
	case c.POIsPerFile < 1 || c.POIsPerFile > 999:
		return fmt.Errorf("invalid pois-per-file: %d must be between 1 and 999", c.POIsPerFile)
	case c.Malformed < 0 || c.Malformed >= 1:
		return fmt.Errorf("invalid malformed: %g must be in [0, 1)", c.Malformed)
	case c.FailureRate <= 0 || c.FailureRate >= 1:
		return fmt.Errorf("invalid failure-rate: %g must be in (0, 1)", c.FailureRate)
	case c.Workers < 1:
		return fmt.Errorf("invalid workers: %d must be at least 1", c.Workers)
	case c.FilesPerTx < 1:
		return fmt.Errorf("invalid files-per-tx: %d must be at least 1", c.FilesPerTx)
	case c.Repositories < 0 || c.Repositories > c.Files:
		return fmt.Errorf("invalid repositories: %d must be between 1 and files (%d)", c.Repositories, c.Files)
	case c.SQLLatencySamples < 1:
		return fmt.Errorf("invalid sql-latency-samples: %d must be at least 1", c.SQLLatencySamples)
	case c.GraphPOIs < GraphPOIsMin:
		return fmt.Errorf("invalid graph-pois: %d must be at least %d", c.GraphPOIs, GraphPOIsMin)
	case c.SQLLatencyGap < 0:
		return fmt.Errorf("invalid sql-latency-gap: %s must not be negative", c.SQLLatencyGap)
	case c.RelayRuns != RelayRunsBoth && c.RelayRuns != RelayRunsSequential && c.RelayRuns != RelayRunsConcurrent:
		return fmt.Errorf("invalid relay-runs: %q must be %s, %s or %s", c.RelayRuns, RelayRunsBoth, RelayRunsSequential, RelayRunsConcurrent)
	}
	for i, p := range c.Phases {
		name, err := phaseName(p)
		if err != nil {
			return err
		}
		c.Phases[i] = name
	}
	return nil
}

// phaseName accepts a phase's name or its 1-based number.
func phaseName(p string) (string, error) {
	p = strings.TrimSpace(p)
	if n, err := strconv.Atoi(p); err == nil {
		if n < 1 || n > len(AllPhases) {
			return "", fmt.Errorf("invalid phases: %d is not a phase number (1-%d)", n, len(AllPhases))
		}
		return AllPhases[n-1], nil
	}
	if !slices.Contains(AllPhases, p) {
		return "", fmt.Errorf("invalid phases: %q is not one of %s", p, strings.Join(AllPhases, ", "))
	}
	return p, nil
}

// Run runs the configured phases on a throwaway database and returns the
// figures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b, err := open(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer b.close()
	res := &Result{Started: time.Now().UTC(), Config: resultConfig(&cfg)}
	if res.Machine, err = b.machine(ctx); err != nil {
		return nil, err
	}
	has := func(p string) bool { return slices.Contains(cfg.Phases, p) }
	steps := []struct {
		name string
		run  func(context.Context, *Result) error
	}{
		{PhaseCeiling, b.ceiling},
		{PhaseRelay, b.relay},
		{PhaseBaseline, b.baseline},
		{PhaseFailures, b.failures},
		{PhaseDeadLetter, b.deadLetter},
		{PhaseStdlib, b.stdlib},
		{PhaseMemory, b.memory},
		{PhaseRiver, b.riverNoOp},
		{PhaseCLI, b.cli},
		{PhaseFreshness, b.freshness},
		{PhaseSQL, b.sqlPublish},
		{PhaseSQLLatency, b.sqlLatency},
		{PhaseRepos, b.repositories},
		{PhaseGraph, b.graphPhase},
	}
	for _, s := range steps {
		if !has(s.name) {
			continue
		}
		b.progress("phase %s", s.name)
		if err := s.run(ctx, res); err != nil {
			return res, fmt.Errorf("error in phase %s: %w", s.name, err)
		}
	}
	res.PeakRSSBytes = peakRSS()
	res.Seconds = time.Since(res.Started).Seconds()
	res.evaluate()
	return res, nil
}
