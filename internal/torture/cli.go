package torture

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/relay-dev/relay/config"
)

// DatabaseURLDefault is the server relay-torture creates its databases on.
const DatabaseURLDefault = "postgres://root@127.0.0.1:5432/relay_test?sslmode=disable"

// Main is relay-torture's command line; it returns the exit code: 0 when
// no history diverged, 1 when one did or the harness failed, 2 for bad
// flags.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("relay-torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg       Config
		seed      uint64
		histories int
		asJSON    bool
		quiet     bool
		paths     string
	)
	fs.Uint64Var(&seed, "seed", 0, "the first history's seed; the others are seed+1, seed+2, ... (0: from the clock; printed)")
	fs.IntVar(&histories, "histories", 100, "histories to run")
	fs.IntVar(&cfg.Parallel, "parallel", 2, "histories run at once (each on two databases of its own)")
	fs.IntVar(&cfg.Gen.Ops, "ops", 8, "steps per history (a window of held transactions counts as one)")
	fs.BoolVar(&cfg.Gen.Kills, "kills", true, "let windows run a `relay worker` process and SIGKILL it mid-batch")
	fs.BoolVar(&cfg.CheckFailed, "check-failed", true, "also compare the actionable failed_pois rows (status new)")
	fs.BoolVar(&cfg.Shrink, "shrink", true, "shrink each divergence to the smallest history that still diverges")
	fs.IntVar(&cfg.ShrinkRuns, "shrink-runs", 150, "most reruns spent shrinking one divergence")
	fs.StringVar(&cfg.ServerURL, "database-url", DatabaseURLDefault, "PostgreSQL server to create the databases on (TEST_DATABASE_URL's form)")
	fs.BoolVar(&asJSON, "json", false, "print the summary and the divergences as JSON")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	fs.StringVar(&paths, "paths", "", "comma-separated publish paths to use (default all: "+strings.Join(pathNames[:], ",")+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if histories < 1 || cfg.Gen.Ops < 1 || cfg.Parallel < 1 {
		fmt.Fprintln(stderr, "relay-torture: --histories, --ops and --parallel must be at least 1")
		return 2
	}
	if paths != "" {
		for _, name := range strings.Split(paths, ",") {
			i := slices.Index(pathNames[:], strings.TrimSpace(name))
			if i < 0 {
				fmt.Fprintf(stderr, "relay-torture: unknown path %q in --paths (one of %s)\n", name, strings.Join(pathNames[:], ","))
				return 2
			}
			cfg.Gen.Paths = append(cfg.Gen.Paths, Path(i))
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "relay-torture: error finding its own executable:", err)
		return 1
	}
	cfg.RelayBin = bin
	cfg.Seeds = Seeds(seed, histories)
	fmt.Fprintf(stderr, "relay-torture: seeds %d..%d, %d at once, %d steps each\n", seed, seed+uint64(histories)-1, cfg.Parallel, cfg.Gen.Ops)
	if !quiet {
		last := time.Now()
		cfg.Progress = func(done int, c Counts, divergences int) {
			if time.Since(last) >= 5*time.Second || done == histories {
				last = time.Now()
				fmt.Fprintf(stderr, "  %d/%d histories, %d ops, %d interleavings forced, %d divergences\n",
					done, histories, c.Ops, c.Interleavings, divergences)
			}
		}
	}
	if !asJSON {
		// Each divergence as it is found; the summary repeats them.
		cfg.Diverged = func(f *Failure) { fmt.Fprintln(stderr, f.Report()) }
	}
	res, err := Run(ctx, cfg)
	if err != nil && res == nil {
		fmt.Fprintln(stderr, "relay-torture:", config.Redact(err.Error()))
		return 1
	}
	if asJSON {
		writeJSON(stdout, res)
	} else {
		writeText(stdout, res)
	}
	if err != nil || len(res.Failures) > 0 {
		return 1
	}
	return 0
}

// Summary is the one line a run ends with.
func (r *Result) Summary() string {
	return fmt.Sprintf("histories %d, ops %d, holds %d, interleavings forced %d, lock waits %d, worker runs %d, kills %d, expected rejections %d, deadlocks %d, divergences %d, %s",
		r.Counts.Histories, r.Counts.Ops, r.Counts.Holds, r.Counts.Interleavings, r.Counts.LockWaits, r.Counts.WorkerRuns,
		r.Counts.Kills, r.Counts.Rejections, r.Counts.Deadlocks, len(r.Failures), r.Elapsed.Round(time.Second))
}

// Report is a divergence for a person: the seed, the shrunk history as
// steps, and the diff (or the error that stopped the history).
func (f *Failure) Report() string {
	h := f.History
	if f.Shrunk != nil {
		h = f.Shrunk
	}
	s := fmt.Sprintf("seed %d diverges (replay: relay-torture --seed %d --histories 1); ", f.Seed, f.Seed)
	if f.Shrunk != nil {
		s += fmt.Sprintf("shrunk from %d to %d steps:\n", len(f.History.Steps), len(f.Shrunk.Steps))
	} else {
		s += fmt.Sprintf("%d steps:\n", len(h.Steps))
	}
	s += h.Describe()
	if f.Err != nil {
		s += "error: " + config.Redact(f.Err.Error()) + "\n"
	}
	if f.Diff != nil && !f.Diff.Empty() {
		s += f.Diff.String()
	}
	return s
}

func writeText(w io.Writer, r *Result) {
	for _, f := range r.Failures {
		fmt.Fprintln(w, f.Report())
	}
	fmt.Fprintln(w, r.Summary())
}

func writeJSON(w io.Writer, r *Result) {
	type failure struct {
		Seed   uint64   `json:"seed"`
		Steps  []string `json:"steps"`
		Error  string   `json:"error,omitempty"`
		Diff   *Diff    `json:"diff,omitempty"`
		Report string   `json:"report"`
	}
	out := struct {
		Counts      Counts    `json:"counts"`
		Divergences int       `json:"divergences"`
		ElapsedSec  float64   `json:"elapsed_seconds"`
		Failures    []failure `json:"failures"`
	}{Counts: r.Counts, Divergences: len(r.Failures), ElapsedSec: r.Elapsed.Seconds(), Failures: []failure{}}
	for _, f := range r.Failures {
		h := f.History
		if f.Shrunk != nil {
			h = f.Shrunk
		}
		ff := failure{Seed: f.Seed, Diff: f.Diff, Report: f.Report()}
		for _, s := range h.Steps {
			ff.Steps = append(ff.Steps, s.Describe("")...)
		}
		if f.Err != nil {
			ff.Error = config.Redact(f.Err.Error())
		}
		out.Failures = append(out.Failures, ff)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
