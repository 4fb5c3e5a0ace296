package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relay-dev/relay/config"
)

// Result is every figure of a run; with --json it is printed as one object.
type Result struct {
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"`
	Machine Machine      `json:"machine"`
	Config  ResultConfig `json:"config"`
	Ceiling *Ceiling     `json:"ceiling,omitempty"`
	Relay   *RunResult   `json:"relay,omitempty"`
	// RelayConcurrent is the same corpus published while the workers run.
	RelayConcurrent *RunResult  `json:"relay_concurrent,omitempty"`
	Baseline        *RunResult  `json:"baseline,omitempty"`
	Failures        *Failures   `json:"failures,omitempty"`
	DeadLetter      *DeadLetter `json:"deadletter,omitempty"`
	Stdlib          *Stdlib     `json:"stdlib,omitempty"`
	Memory          *Memory     `json:"memory,omitempty"`
	// RiverNoOp is River's own rate on no-op jobs; CLI is relay run as
	// processes (relay worker, relay publish).
	RiverNoOp *RiverNoOp `json:"river_noop,omitempty"`
	CLI       *CLIRun    `json:"cli,omitempty"`
	Freshness *Freshness `json:"freshness,omitempty"`
	// CLIRuns are the cli phase's runs, one per --cli-workers value; CLI is
	// the first.
	CLIRuns []*CLIRun `json:"cli_runs,omitempty"`
	// RelayConcurrentRounds are the concurrent run's rounds when --rounds
	// is above 1; RelayConcurrent is then the round of median e2e POIs/s.
	RelayConcurrentRounds []*RunResult `json:"relay_concurrent_rounds,omitempty"`
	// CLIVsRiverNoOp is the CLI run's e2e POIs/s over River's no-op
	// jobs/s.
	CLIVsRiverNoOp float64 `json:"cli_vs_river_noop,omitempty"`
	// RelayVsBaseline is relay's end-to-end POIs/s over the baseline's.
	RelayVsBaseline float64 `json:"relay_vs_baseline,omitempty"`
	// RelayVsCeiling is relay's rows written per second over the ceiling's:
	// the concurrent run's (as relay runs in production), or the
	// sequential run's when there is no concurrent one.
	// RelayVsCeilingSequential is the sequential run's.
	RelayVsCeiling           float64 `json:"relay_vs_ceiling,omitempty"`
	RelayVsCeilingSequential float64 `json:"relay_vs_ceiling_sequential,omitempty"`
	// SQLPublish is the sql phase: the SQL publish API's throughput beside
	// the Go publisher's, in the same rounds; SQLLatency the sqllatency
	// phase: its first attempt's latency after the caller's commit.
	SQLPublish *SQLPublish `json:"sql_publish,omitempty"`
	SQLLatency *SQLLatency `json:"sql_latency,omitempty"`
	// Repositories is the repositories phase: the corpus in one repository
	// against the corpus split into several, in the same rounds.
	Repositories *Repositories `json:"repositories,omitempty"`
	// Graph is the graph phase: reading callers, callees and the console's
	// POI page.
	Graph *Graph `json:"graph,omitempty"`
	// Targets are the targets with this run's value.
	Targets []Target `json:"targets"`
	// PeakRSSBytes is the process's peak RSS (VmHWM) over the whole run.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// ResultConfig echoes the settings of the run.
type ResultConfig struct {
	Files         int     `json:"files"`
	POIsPerFile   int     `json:"pois_per_file"`
	Repositories  int     `json:"repositories"`
	Malformed     float64 `json:"malformed"`
	Workers       int     `json:"workers"`
	FilesPerTx    int     `json:"files_per_tx"`
	BaselineFiles int     `json:"baseline_files"`
	FailuresFiles int     `json:"failures_files"`
	FailureRate   float64 `json:"failure_rate"`
	FailedRows    int     `json:"failed_rows"`
	MemoryFiles   int     `json:"memory_files"`
	FetchCooldown string  `json:"fetch_cooldown,omitempty"`
	LinkDelay     string  `json:"link_delay"`
	CLIWorkers    []int   `json:"cli_workers"`
	Rounds        int     `json:"rounds"`
	// RiverSynchronousCommit is the worker's river_synchronous_commit.
	RiverSynchronousCommit string   `json:"river_synchronous_commit"`
	RelayRuns              string   `json:"relay_runs"`
	Phases                 []string `json:"phases"`
	GoSrc                  string   `json:"go_src,omitempty"`
	GraphPOIs              int      `json:"graph_pois"`
}

func resultConfig(c *Config) ResultConfig {
	rc := ResultConfig{Files: c.Files, POIsPerFile: c.POIsPerFile, Malformed: c.Malformed, Workers: c.Workers,
		FilesPerTx: c.FilesPerTx, Repositories: max(c.Repositories, 1), BaselineFiles: c.BaselineFiles, FailuresFiles: c.FailuresFiles, FailureRate: c.FailureRate,
		FailedRows: c.FailedRows, MemoryFiles: c.MemoryFiles, Phases: c.Phases, GoSrc: c.GoSrc, RelayRuns: c.RelayRuns,
		CLIWorkers: c.CLIWorkers, Rounds: c.Rounds, GraphPOIs: c.GraphPOIs}
	if c.FetchCooldown > 0 {
		rc.FetchCooldown = c.FetchCooldown.String()
	}
	rc.LinkDelay = config.LinkDelayDefault.String()
	if c.LinkDelay != nil {
		rc.LinkDelay = c.LinkDelay.String()
	}
	rc.RiverSynchronousCommit = config.RiverSynchronousCommitDefault
	if c.RiverSynchronousCommit != "" {
		rc.RiverSynchronousCommit = c.RiverSynchronousCommit
	}
	return rc
}

// Target is one of the targets.
type Target struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Goal   string  `json:"goal"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail,omitempty"`
}

// evaluate computes the ratios and checks the targets for the phases run.
func (r *Result) evaluate() {
	add := func(name string, v float64, goal string, met bool) {
		r.Targets = append(r.Targets, Target{Name: name, Value: v, Goal: goal, Met: met})
	}
	if f := r.Freshness; f != nil {
		add("rename re-publish freshness p99 (s)", f.RenameP99, "< 1", f.RenameP99 < 1)
	}
	if len(r.RelayConcurrentRounds) > 1 {
		slowest, median := roundsSpread(r.RelayConcurrentRounds)
		add("concurrent rounds slowest / median", slowest/median, ">= 0.8", slowest >= 0.8*median)
	}
	for _, x := range []struct {
		name string
		run  *RunResult
	}{{"relay", r.Relay}, {"relay concurrent", r.RelayConcurrent}} {
		if x.run == nil {
			continue
		}
		add(x.name+" jobs per file", x.run.JobsPerFile, "== 1", x.run.Jobs == int64(x.run.Files))
		add(x.name+" failed_pois rows", float64(x.run.FailedPOIs), fmt.Sprintf("== %d malformed", x.run.Malformed),
			x.run.FailedPOIs == int64(x.run.Malformed))
	}
	if r.Relay != nil && r.Baseline != nil {
		r.RelayVsBaseline = ratio(r.Relay.E2EPOIsPerSec, r.Baseline.E2EPOIsPerSec)
		add("relay vs one-job-per-POI (e2e POIs/s)", r.RelayVsBaseline, ">= 10x", r.RelayVsBaseline >= 10)
	}
	if r.Ceiling != nil {
		if r.Relay != nil {
			r.RelayVsCeilingSequential = ratio(r.Relay.RowsPerSec, r.Ceiling.RowsPerSec)
			r.RelayVsCeiling = r.RelayVsCeilingSequential
		}
		if r.RelayConcurrent != nil {
			r.RelayVsCeiling = ratio(r.RelayConcurrent.RowsPerSec, r.Ceiling.RowsPerSec)
			if r.Relay != nil {
				add("relay rows/s vs COPY ceiling (publish, then work)", r.RelayVsCeilingSequential, ">= 0.50", r.RelayVsCeilingSequential >= 0.5)
			}
		}
		if r.Relay != nil || r.RelayConcurrent != nil {
			add("relay rows/s vs COPY ceiling", r.RelayVsCeiling, ">= 0.60", r.RelayVsCeiling >= 0.6)
		}
	}
	if f := r.Failures; f != nil {
		add("failure overhead (ms per failed POI)", f.ExtraMillisPerFailedPOI, "< 1 ms", f.ExtraMillisPerFailedPOI < 1)
		add("failing run failed_pois rows", float64(f.Failing.FailedPOIs), fmt.Sprintf("== %d malformed", f.Failing.Malformed),
			f.Failing.FailedPOIs == int64(f.Failing.Malformed))
	}
	if d := r.DeadLetter; d != nil {
		add("failed list, first page (ms)", d.ListMS, "< 100 ms", d.ListMS < 100)
		add("failed inspect (ms)", d.InspectMS, "< 100 ms", d.InspectMS < 100)
		add("failed stats (ms)", d.StatsMS, "< 100 ms", d.StatsMS < 100)
		add("failed analyze (ms)", d.AnalyzeMS, "< 2000 ms", d.AnalyzeMS < 2000)
		add("failed list, one repository (ms)", d.RepositoryListMS, "< 100 ms", d.RepositoryListMS < 100)
		add("failed analyze, one repository (ms)", d.RepositoryAnalyzeMS, "< 2000 ms", d.RepositoryAnalyzeMS < 2000)
		add("reprocess (rows/s)", d.ReprocessRowsPerSec, ">= 20000", d.ReprocessRowsPerSec >= 20000)
		if len(d.Console) > 0 {
			add("web console, slowest page (ms)", d.ConsoleMaxMS, "< 200 ms", d.ConsoleMaxMS < 200)
		}
	}
	if p := r.Repositories; p != nil {
		add(fmt.Sprintf("%d repositories vs one, e2e POIs/s (medians of %d rounds)", p.N, len(p.Rounds)), p.ManyVsOne, ">= 0.9", p.ManyVsOne >= 0.9)
		// The split corpus resolves what the one-repository corpus does,
		// in every round.
		rels, failed := true, true
		for _, x := range p.Rounds {
			rels = rels && x.Many.Relationships == x.One.Relationships
			failed = failed && x.Many.FailedPOIs == int64(x.Many.Malformed) && x.One.FailedPOIs == int64(x.One.Malformed)
		}
		add("repositories runs relationships", float64(p.Many.Relationships), fmt.Sprintf("== %d (one repository)", p.One.Relationships), rels)
		add("repositories runs failed_pois rows", float64(p.Many.FailedPOIs), fmt.Sprintf("== %d malformed", p.Many.Malformed), failed)
	}
	if s := r.SQLPublish; s != nil {
		add(fmt.Sprintf("SQL API vs Go publisher, e2e POIs/s (medians of %d rounds)", len(s.Rounds)), s.SQLVsGo, ">= 0.8", s.SQLVsGo >= 0.8)
		// The SQL API's runs write what the Go publisher's write, in every
		// round.
		jobs, failed, rels := true, true, true
		for _, x := range s.Rounds {
			jobs = jobs && x.SQL.Jobs == int64(x.SQL.Files)
			failed = failed && x.SQL.FailedPOIs == int64(x.SQL.Malformed)
			rels = rels && x.SQL.Relationships == x.Go.Relationships
		}
		add("sql runs jobs per file", s.SQL.JobsPerFile, "== 1", jobs)
		add("sql runs failed_pois rows", float64(s.SQL.FailedPOIs), fmt.Sprintf("== %d malformed", s.SQL.Malformed), failed)
		add("sql runs relationships", float64(s.SQL.Relationships), fmt.Sprintf("== %d (go runs)", s.Go.Relationships), rels)
	}
	if l := r.SQLLatency; l != nil {
		add("SQL API first attempt p99, direct (s)", l.Direct.P99, "< 1", l.Direct.P99 < 1)
		add("SQL API first attempt p99, PgBouncer (s)", l.PgBouncer.P99, "< 1", l.PgBouncer.P99 < 1)
	}
	if g := r.Graph; g != nil {
		at := fmt.Sprintf(" at %d POIs (ms)", g.POIs)
		add("callers of a POI p50"+at, g.Callers.P50, "< 2", g.Callers.P50 < 2)
		add("callers of a POI p99"+at, g.Callers.P99, "< 10", g.Callers.P99 < 10)
		add("callees of a POI p50"+at, g.Callees.P50, "< 2", g.Callees.P50 < 2)
		add("callees of a POI p99"+at, g.Callees.P99, "< 10", g.Callees.P99 < 10)
		add(fmt.Sprintf("transitive callers, depth 3, %d results, p50", g.DepthThreeResults)+at, g.DepthThree.P50, "< 50", g.DepthThree.P50 < 50)
		add("console POI page over HTTP p99"+at, g.Page.P99, "< 50", g.Page.P99 < 50)
	}
	if m := r.Memory; m != nil {
		add("RSS large / RSS small", m.RSSRatio, "<= 1.5", m.RSSRatio <= 1.5)
	}
	if r.CLI != nil && r.RiverNoOp != nil {
		r.CLIVsRiverNoOp = ratio(r.CLI.E2EPOIsPerSec, r.RiverNoOp.JobsPerSec)
		add("CLI e2e POIs/s vs River no-op jobs/s", r.CLIVsRiverNoOp, ">= 1.5x", r.CLIVsRiverNoOp >= 1.5)
	}
}

// WriteTable prints r for people.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	m := r.Machine
	fmt.Fprintf(w, "relay-bench: %d CPUs, %.1f GiB, %s (GOGC %d), PostgreSQL %s (shared_buffers %s, synchronous_commit %s), %d workers, %d files/tx\n\n",
		m.CPUs, float64(m.MemoryBytes)/(1<<30), m.GoVersion, m.GCPercent, m.PostgresVersion, m.SharedBuffers, m.SynchronousCommit,
		r.Config.Workers, r.Config.FilesPerTx)
	if c := r.Ceiling; c != nil {
		p("ceiling (COPY)\trows\t%d\tseconds\t%.2f\trows/s\t%.0f\t", c.POIRows+c.RelationshipRows, c.Seconds, c.RowsPerSec)
	}
	p("run\tfiles\tPOIs\tjobs/file\trels\tfailed\tre-resolved\tpublish POIs/s\twork POIs/s\te2e POIs/s\trows/s\tseconds\tpeak RSS MiB\t")
	row := func(name string, x *RunResult) {
		if x == nil {
			return
		}
		p("%s\t%d\t%d\t%.2f\t%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.0f\t", name, x.Files, x.POIs, x.JobsPerFile, x.Relationships,
			x.FailedPOIs, x.Reresolved, x.PublishPOIsPerSec, x.WorkPOIsPerSec, x.E2EPOIsPerSec, x.RowsPerSec, x.TotalSeconds, float64(x.PeakRSSBytes)/(1<<20))
	}
	row("relay", r.Relay)
	row("relay concurrent", r.RelayConcurrent)
	row("baseline (job per POI)", r.Baseline)
	if f := r.Failures; f != nil {
		row("failures 0%", f.Clean)
		row(fmt.Sprintf("failures %.0f%%", 100*r.Config.FailureRate), f.Failing)
	}
	if s := r.Stdlib; s != nil {
		row("stdlib (relay analyze)", &s.RunResult)
	}
	if p := r.Repositories; p != nil {
		row("repositories phase: one", p.One)
		row(fmt.Sprintf("repositories phase: %d", p.N), p.Many)
	}
	if mm := r.Memory; mm != nil {
		row("memory small", mm.Small)
		row("memory large", mm.Large)
	}
	if s := r.SQLPublish; s != nil {
		row("sql phase: Go publisher", s.Go)
		row("sql phase: relay_publish_many", s.SQL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d := r.DeadLetter; d != nil {
		fmt.Fprintf(w, "\ndead letters (%d rows, %s): list %.1f ms, inspect %.2f ms, stats %.1f ms, analyze %.1f ms; reprocess %d rows in %d jobs at %.0f rows/s\n",
			d.Rows, d.Source, d.ListMS, d.InspectMS, d.StatsMS, d.AnalyzeMS, d.ReprocessRows, d.ReprocessJobs, d.ReprocessRowsPerSec)
		fmt.Fprintf(w, "  one repository of %d: list %.1f ms, analyze %.1f ms\n", deadLetterRepositories, d.RepositoryListMS, d.RepositoryAnalyzeMS)
		for _, pt := range d.Console {
			fmt.Fprintf(w, "  web console %-40s %8.2f ms\n", pt.Page, pt.MS)
		}
	}
	if s := r.Stdlib; s != nil {
		fmt.Fprintf(w, "\nstdlib: %s: %d files skipped (parse errors), %d rejected\n", s.Dir, s.SkippedFiles, s.RejectedFiles)
	}
	if n := r.RiverNoOp; n != nil {
		fmt.Fprintf(w, "\nRiver no-op: %d jobs, %d workers, %.2f s: %.0f jobs/s\n", n.Jobs, n.Workers, n.Seconds, n.JobsPerSec)
	}
	for _, c := range r.CLIRuns {
		fmt.Fprintf(w, "CLI: %d relay worker processes + %d relay publish: %d POIs of %d files in %.2f s (publish %.2f s): %.0f e2e POIs/s; %d relationships, %d failed_pois, %d references re-resolved\n",
			c.WorkerProcesses, c.Publishers, c.POIs, c.Files, c.TotalSeconds, c.PublishSeconds, c.E2EPOIsPerSec, c.Relationships, c.FailedPOIs, c.Reresolved)
		printSerial(w, c.Serial)
	}
	if f := r.Freshness; f != nil {
		fmt.Fprintf(w, "\nfreshness (publish to final relationships): bulk load p50 %.3f s, p99 %.3f s over %d batches; "+
			"re-publish renaming a function %d files call: p50 %.3f s, p99 %.3f s over %d, %d references re-resolved\n",
			f.BulkP50, f.BulkP99, f.BulkBatches, f.Callers, f.RenameP50, f.RenameP99, f.Renames, f.RenameReresolved)
	}
	if c := r.RelayConcurrent; c != nil && c.Serial != nil {
		fmt.Fprintf(w, "\nconcurrent run (%d publishing goroutines):\n", c.Publishers)
		printSerial(w, c.Serial)
	}
	if len(r.RelayConcurrentRounds) > 1 {
		fmt.Fprintln(w, "\nconcurrent run, by round:")
		for i, x := range r.RelayConcurrentRounds {
			fmt.Fprintf(w, "  round %d: %.0f e2e POIs/s, %.0f rows/s, %d of %d references re-resolved\n",
				i+1, x.E2EPOIsPerSec, x.RowsPerSec, x.Reresolved, x.Relationships)
		}
		slowest, median := roundsSpread(r.RelayConcurrentRounds)
		fmt.Fprintf(w, "  slowest %.0f, median %.0f e2e POIs/s: slowest/median %.2f\n", slowest, median, slowest/median)
	}
	if s := r.SQLPublish; s != nil {
		fmt.Fprintf(w, "\nSQL publish API (relay_publish_many, %d files a transaction, one connection) vs Go publisher (PublishManyTx), both while a worker runs:\n",
			r.Config.FilesPerTx)
		for i, x := range s.Rounds {
			fmt.Fprintf(w, "  round %d (%s first): go %.0f, sql %.0f e2e POIs/s: sql/go %.2f\n", i+1, x.First, x.Go.E2EPOIsPerSec, x.SQL.E2EPOIsPerSec, x.SQLVsGo)
		}
		fmt.Fprintf(w, "  median: go %.0f, sql %.0f e2e POIs/s: sql/go %.2f\n", s.Go.E2EPOIsPerSec, s.SQL.E2EPOIsPerSec, s.SQLVsGo)
		if r.RelayConcurrent != nil {
			fmt.Fprintf(w, "  (relay phase, concurrent run: %.0f e2e POIs/s; sql/that %.2f)\n", r.RelayConcurrent.E2EPOIsPerSec,
				ratio(s.SQL.E2EPOIsPerSec, r.RelayConcurrent.E2EPOIsPerSec))
		}
	}
	if p := r.Repositories; p != nil {
		fmt.Fprintf(w, "\nThe corpus in one repository vs in %d (the concurrent run):\n", p.N)
		for i, x := range p.Rounds {
			fmt.Fprintf(w, "  round %d (%s first): one %.0f, %d repositories %.0f e2e POIs/s: %.2f\n", i+1, x.First,
				x.One.E2EPOIsPerSec, p.N, x.Many.E2EPOIsPerSec, x.ManyVsOne)
		}
		fmt.Fprintf(w, "  median: one %.0f, %d repositories %.0f e2e POIs/s: %.2f\n", p.One.E2EPOIsPerSec, p.N, p.Many.E2EPOIsPerSec, p.ManyVsOne)
	}
	if l := r.SQLLatency; l != nil {
		fmt.Fprintln(w, "\nSQL publish API, caller's COMMIT to the job's first attempt (idle worker, one relay_publish a transaction):")
		for _, x := range []struct {
			name string
			run  *LatencyRun
		}{{"direct", l.Direct}, {"PgBouncer (transaction mode, River polling)", l.PgBouncer}} {
			fmt.Fprintf(w, "  %-44s %d samples: min %.0f ms, p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", x.name, x.run.Samples,
				1000*x.run.Min, 1000*x.run.P50, 1000*x.run.P99, 1000*x.run.Max)
		}
	}
	if g := r.Graph; g != nil {
		fmt.Fprintf(w, "\ngraph: %d POIs, %d relationships, written and indexed in %.1f s; %d random POIs, milliseconds:\n",
			g.POIs, g.Relationships, g.BuildSeconds, g.Samples)
		for _, x := range []struct {
			name string
			l    Latency
		}{{"callers (relay_callers, depth 1)", g.Callers}, {"callees (relay_callees, depth 1)", g.Callees},
			{fmt.Sprintf("callers to depth 3 (%d results, %d runs)", g.DepthThreeResults, g.DepthThreeRuns), g.DepthThree},
			{"console POI page over HTTP", g.Page}, {"console search completion over HTTP", g.Complete}} {
			fmt.Fprintf(w, "  %-44s p50 %7.2f  p99 %7.2f  max %7.2f\n", x.name, x.l.P50, x.l.P99, x.l.Max)
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tvalue\tgoal\tmet")
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", t.Value), "0"), "."), t.Goal, met)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\npeak RSS %.0f MiB; %.0f s in all\n", float64(r.PeakRSSBytes)/(1<<20), r.Seconds)
	return err
}

// roundsSpread returns the slowest and the median e2e POIs/s of rounds.
func roundsSpread(rounds []*RunResult) (slowest, median float64) {
	rates := make([]float64, len(rounds))
	for i, x := range rounds {
		rates[i] = x.E2EPOIsPerSec
	}
	slices.Sort(rates)
	return rates[0], rates[len(rates)/2]
}
