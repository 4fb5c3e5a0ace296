package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/relay-dev/relay/config"
)

// Main is relay-chaos's command line; it returns the exit code: 0 when
// every invariant held, 1 when one did not or the harness failed, 2 for
// bad flags.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("relay-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg       Config
		scenarios string
		short     bool
		asJSON    bool
		seed      int64
	)
	fs.IntVar(&cfg.Files, "files", FilesDefault, "files in the synthetic corpus")
	fs.IntVar(&cfg.POIsPerFile, "pois-per-file", POIsPerFileDefault, "POIs per file")
	fs.Float64Var(&cfg.Malformed, "malformed", MalformedDefault, "fraction of POIs that are malformed (dead-lettered by the worker)")
	fs.IntVar(&cfg.Kills, "kills", KillsDefault, "SIGKILLs in the kill scenario")
	fs.IntVar(&cfg.SIGTERMs, "sigterms", SIGTERMsDefault, "SIGTERM rounds in the sigterm scenario")
	fs.StringVar(&scenarios, "scenarios", "", "comma-separated scenarios (default: all; "+strings.Join(AllScenarios, ",")+")")
	fs.Int64Var(&seed, "seed", 0, "random seed for the corpus and the kill delays (0: from the clock; printed)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", DatabaseURLDefault, "server to create throwaway databases on")
	fs.StringVar(&cfg.PoolerURL, "pooler-url", "", "a transaction pooler in front of --database-url's server: relay connects through it (database_pooler: transaction)")
	fs.BoolVar(&cfg.PgBouncer, "pgbouncer", false, "start a stock PgBouncer (pool_mode = transaction) in front of the server and run relay through it")
	fs.BoolVar(&cfg.AllowPGRestart, "allow-pg-restart", false, "allow the postgres-restart scenario (restarts the whole server)")
	fs.StringVar(&cfg.PGRestart, "pg-restart-command", PGRestartDefault, "command that restarts PostgreSQL")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the databases and the work dir (logs)")
	fs.StringVar(&cfg.RelayBinary, "relay-binary", "", "relay binary to run (default: go build ./cmd/relay)")
	fs.DurationVar(&cfg.RescueAfter, "rescue-after", RescueAfterDefault, "workers' rescue_stuck_jobs_after")
	fs.DurationVar(&cfg.JobTimeout, "job-timeout", JobTimeoutDefault, "workers' job_timeout (below rescue-after)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", ShutdownTimeoutDefault, "workers' shutdown_timeout")
	fs.DurationVar(&cfg.KillDelayMin, "kill-delay-min", KillDelayMinDefault, "shortest random delay before a SIGKILL")
	fs.DurationVar(&cfg.KillDelayMax, "kill-delay-max", KillDelayMaxDefault, "longest random delay before a SIGKILL")
	fs.DurationVar(&cfg.ScenarioTimeout, "scenario-timeout", ScenarioTimeoutDefault, "deadline for each scenario")
	fs.BoolVar(&short, "short", false, "CI-sized run: 10,000 POIs, 5 kills, every scenario but postgres-restart")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if short {
		if !set["files"] {
			cfg.Files = 100
		}
		if !set["pois-per-file"] {
			cfg.POIsPerFile = 100
		}
		if !set["kills"] {
			cfg.Kills = 5
		}
		if !set["kill-delay-max"] {
			cfg.KillDelayMax = 300 * time.Millisecond
		}
		if !set["kill-delay-min"] {
			cfg.KillDelayMin = 50 * time.Millisecond
		}
		if !set["scenarios"] {
			scenarios = strings.Join([]string{ScenarioKill, ScenarioScaleOut, ScenarioSIGTERM, ScenarioSafetyNet, ScenarioReprocess, ScenarioMapReduce}, ",")
		}
	}
	if scenarios != "" {
		cfg.Scenarios = strings.Split(scenarios, ",")
	} else if !cfg.AllowPGRestart {
		cfg.Scenarios = []string{ScenarioKill, ScenarioScaleOut, ScenarioSIGTERM, ScenarioSafetyNet, ScenarioReprocess, ScenarioMapReduce}
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	cfg.Seed = uint64(seed)
	cfg.Progress = stderr

	rep, err := Run(ctx, &cfg)
	if err != nil {
		fmt.Fprintln(stderr, "relay-chaos:", config.Redact(err.Error()))
		if rep == nil {
			if strings.HasPrefix(err.Error(), "invalid ") || strings.Contains(err.Error(), "\ninvalid ") || strings.Contains(err.Error(), "--allow-pg-restart") {
				return 2
			}
			return 1
		}
	}
	if asJSON {
		_ = rep.WriteJSON(stdout)
	} else {
		_ = rep.WriteTable(stdout)
	}
	if err != nil || !rep.Passed() {
		return 1
	}
	return 0
}
