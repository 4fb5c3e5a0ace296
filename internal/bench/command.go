package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/worker"
)

// Main runs relay-bench with args (without the program name), writing the
// report to stdout and progress to stderr, and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("relay-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var phases, logLevel, cpuProfile, memProfile, cliWorkers, cliPublishers string
	var asJSON bool
	fs.StringVar(&cfg.DatabaseURL, "database-url", DatabaseURLDefault, "PostgreSQL server to benchmark; a throwaway database relay_bench_<random> is created on it")
	fs.IntVar(&cfg.Files, "files", FilesDefault, "files in the synthetic corpus")
	fs.IntVar(&cfg.POIsPerFile, "pois-per-file", POIsPerFileDefault, "POIs per file")
	fs.IntVar(&cfg.Repositories, "repositories", 1, "repositories the main corpus is split into (consecutive files, each calling only within itself; the same calls and relationships as one); the repositories phase compares this many (default 20) with one")
	fs.Float64Var(&cfg.Malformed, "malformed", MalformedDefault, "fraction of malformed POIs in the relay, baseline and memory runs")
	fs.StringVar(&phases, "phases", strings.Join(DefaultPhases, ","), fmt.Sprintf("comma-separated phases (names or numbers 1-%d): ", len(AllPhases))+strings.Join(AllPhases, ","))
	fs.StringVar(&cfg.GoSrc, "go-src", defaultGoSrc(), "Go source tree for the stdlib phase")
	fs.IntVar(&cfg.Workers, "workers", WorkersDefault, "worker concurrency (resolve_file jobs worked at once)")
	fs.IntVar(&cfg.FilesPerTx, "files-per-tx", FilesPerTxDefault, "files published per transaction")
	fs.IntVar(&cfg.BaselineFiles, "baseline-files", 0, fmt.Sprintf("files in the one-job-per-POI baseline run (default min(files, %d))", BaselineFilesDefault))
	fs.IntVar(&cfg.FailuresFiles, "failures-files", 0, "files in each failure-overhead run (default files/4)")
	fs.Float64Var(&cfg.FailureRate, "failure-rate", FailureRateDefault, "malformed fraction of the failing run")
	fs.IntVar(&cfg.FailedRows, "failed-rows", FailedRowsDefault, "failed_pois rows for the dead-letter phase")
	fs.IntVar(&cfg.ReprocessRows, "reprocess-rows", 0, fmt.Sprintf("rows reprocessed in the dead-letter phase (default min(failed-rows, %d))", ReprocessRowsDefault))
	fs.IntVar(&cfg.MemoryFiles, "memory-files", MemoryFilesDefault, "files in the large memory run (x pois-per-file POIs)")
	fs.StringVar(&cfg.RelayRuns, "relay-runs", RelayRunsBoth, "runs of the relay phase: both, sequential (publish, then work) or concurrent (publish while working)")
	fs.DurationVar(&cfg.FetchCooldown, "fetch-cooldown", 0, "the worker's fetch_cooldown (default: relay's default)")
	fs.Func("link-delay", "the worker's link_delay (default: relay's default)", func(s string) error {
		d, err := time.ParseDuration(s)
		cfg.LinkDelay = &d
		return err
	})
	fs.StringVar(&cfg.RiverSynchronousCommit, "river-synchronous-commit", "", "the worker's river_synchronous_commit (default: relay's default, off)")
	fs.StringVar(&cliWorkers, "cli-workers", "1", "relay worker processes in the cli phase; a comma-separated list (1,2,4) runs the phase once for each")
	fs.StringVar(&cliPublishers, "cli-publishers", "1", "concurrent relay publish processes in each cli run (the corpus split among them); a comma-separated list runs each")
	fs.IntVar(&cfg.Publishers, "publishers", 1, "goroutines publishing the relay phase's concurrent run at once (PublishManyTx, the files split among them)")
	fs.BoolVar(&cfg.SampleWaits, "sample-waits", false, "sample the active backends' wait events every 0.3 s in the cli runs and the concurrent run, and print the most frequent")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "rounds of the relay phase's concurrent run (the table shows each, the slowest and the median), and of the sql phase (a Go publisher run and a SQL API run each, alternating which goes first)")
	fs.IntVar(&cfg.SQLLatencySamples, "sql-latency-samples", SQLLatencySamplesDefault, "publishes the sqllatency phase times, directly and again through PgBouncer")
	fs.DurationVar(&cfg.SQLLatencyGap, "sql-latency-gap", SQLLatencyGapDefault, "bound of the random pause (uniform) before each of the sqllatency phase's publishes")
	fs.StringVar(&cfg.StdlibReferences, "stdlib-references", "lexical", "reference mode of the stdlib phase: lexical or typed (type-checks the tree first)")
	fs.IntVar(&cfg.GraphPOIs, "graph-pois", GraphPOIsDefault, "POIs in the graph phase's corpus (about 3 relationships each); 1000000 for the figures in BENCHMARKS.md")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the benchmark database instead of dropping it")
	fs.BoolVar(&cfg.Citus, "citus", false, "run on a Citus coordinator: --database-url names its database, and the run migrates and "+
		"distributes a schema of its own there (relay migrate distribute)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object with every figure instead of the table")
	fs.StringVar(&logLevel, "log-level", "", "relay's log level (debug, info, warn, error) to stderr; off by default")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.StringVar(&memProfile, "memprofile", "", "write an allocation profile of the run to this file (go tool pprof -sample_index=alloc_space)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "relay-bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg.Phases = strings.Split(phases, ",")
	for _, list := range []struct {
		flag, value string
		into        *[]int
	}{{"cli-workers", cliWorkers, &cfg.CLIWorkers}, {"cli-publishers", cliPublishers, &cfg.CLIPublishers}} {
		for _, f := range strings.Split(list.value, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "relay-bench: invalid --%s %q: want positive numbers separated by commas\n", list.flag, list.value)
				return 2
			}
			*list.into = append(*list.into, n)
		}
	}
	if cfg.Publishers < 1 {
		fmt.Fprintf(stderr, "relay-bench: invalid --publishers %d: want 1 or more\n", cfg.Publishers)
		return 2
	}
	if cfg.Rounds < 1 {
		fmt.Fprintf(stderr, "relay-bench: invalid --rounds %d: want 1 or more\n", cfg.Rounds)
		return 2
	}
	cfg.Progress = stderr
	if logLevel != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(logLevel)); err != nil {
			fmt.Fprintf(stderr, "relay-bench: invalid log-level %q\n", logLevel)
			return 2
		}
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l}))
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "relay-bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "relay-bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if memProfile != "" {
		defer func() {
			if err := writeHeapProfile(memProfile); err != nil {
				fmt.Fprintf(stderr, "relay-bench: %v\n", err)
			}
		}()
	}
	// The process works batches as relay's worker does, with the same
	// garbage collector target (gc_percent, or GOGC when set).
	gcLog := cfg.Logger
	if gcLog == nil {
		gcLog = slog.New(slog.DiscardHandler)
	}
	gcPercent := worker.SetGCPercent(worker.ConfigFrom(config.Default()), gcLog)
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "relay-bench: %v\n", err)
		return 1
	}
	res.Machine.GCPercent = gcPercent
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = res.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "relay-bench: %v\n", err)
		return 1
	}
	return 0
}

// defaultGoSrc is $(go env GOROOT)/src, or runtime.GOROOT()'s when the go
// command is not on PATH.
func defaultGoSrc() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if root := strings.TrimSpace(string(out)); root != "" {
			return filepath.Join(root, "src")
		}
	}
	return filepath.Join(runtime.GOROOT(), "src") //nolint:staticcheck // fallback only
}

// writeHeapProfile writes the allocation profile (every allocation since
// the start, sampled) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	return f.Close()
}
