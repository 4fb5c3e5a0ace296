package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// RunResult is one corpus published through the outbox and worked to
// completion by relay's worker.
type RunResult struct {
	Files int `json:"files"`
	POIs  int `json:"pois"`
	// Concurrent runs publish while the workers run; the others publish
	// first and then work.
	Concurrent bool `json:"concurrent"`
	// Malformed is how many POIs were malformed (expected in failed_pois).
	Malformed int `json:"malformed"`
	// Jobs is the resolve_file jobs enqueued; JobsPerFile Jobs / Files.
	Jobs        int64   `json:"jobs"`
	JobsPerFile float64 `json:"jobs_per_file"`
	// Relationships and FailedPOIs are the rows in those tables afterwards.
	Relationships int64 `json:"relationships"`
	FailedPOIs    int64 `json:"failed_pois"`
	// Symbols is the rows in pois.
	Symbols int64 `json:"symbols"`
	// Seconds of publishing (outbox), of working (first job fetched to queue
	// idle), and of both. In a concurrent run the workers run from the
	// start: work and total seconds are both the wall clock from the first
	// publish to an idle queue.
	PublishSeconds float64 `json:"publish_seconds"`
	WorkSeconds    float64 `json:"work_seconds"`
	TotalSeconds   float64 `json:"total_seconds"`
	// POIs per second of each.
	PublishPOIsPerSec float64 `json:"publish_pois_per_sec"`
	WorkPOIsPerSec    float64 `json:"work_pois_per_sec"`
	E2EPOIsPerSec     float64 `json:"e2e_pois_per_sec"`
	// RowsWritten is Symbols + Relationships + FailedPOIs; RowsPerSec that
	// over TotalSeconds.
	RowsWritten int64   `json:"rows_written"`
	RowsPerSec  float64 `json:"rows_per_sec"`
	// Reresolved counts the references the batches resolved again
	// (resolvefile.BatchSummary.Reresolved): those resolved before the publish
	// of a name they look up was visible. In a concurrent run it follows
	// how closely the workers keep up with the publisher, and its share of
	// the work is what moves rows/s most from one run to the next.
	Reresolved int64 `json:"reresolved"`
	// PeakRSSBytes is the largest RSS of the process during the run. The
	// relay, baseline and failures runs hold their generated corpus in
	// memory (with gc_percent 400, a few hundred MiB for 100,000 POIs); the
	// memory phase's runs stream theirs, so theirs is the worker's.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Publishers is how many goroutines published at once (concurrent
	// runs).
	Publishers int `json:"publishers,omitempty"`
	// Serial is a concurrent run's serial sections' shares of its wall
	// time.
	Serial *Serial `json:"serial,omitempty"`
}

// workerConfig is relay's default configuration for the bench database.
func (b *bench) workerConfig() *config.Config {
	cfg := config.Default()
	cfg.DatabaseURL = b.url
	cfg.DatabaseSchema = b.schema
	cfg.WorkerConcurrency = b.cfg.Workers
	if b.cfg.FetchCooldown > 0 {
		cfg.FetchCooldown = b.cfg.FetchCooldown
	}
	if b.cfg.RiverSynchronousCommit != "" {
		cfg.RiverSynchronousCommit = b.cfg.RiverSynchronousCommit
	}
	if b.cfg.LinkDelay != nil {
		cfg.LinkDelay = *b.cfg.LinkDelay
	}
	return cfg
}

// source yields the analyses of a run, one file at a time.
type source struct {
	files int
	next  func(k int) (outbox.Analysis, error)
}

// runCorpus publishes src through the outbox (FilesPerTx files per
// transaction) and works every job with relay's real worker: after the
// publishing (sequential), or while it goes on, as a service and relay's
// workers run in production (concurrent). With perPOI, the publisher splits
// every file into one job per POI: the same symbols, the same worker and
// the same writes, only no batching.
func (b *bench) runCorpus(ctx context.Context, src source, perPOI, concurrent bool) (*RunResult, error) {
	if err := b.reset(ctx); err != nil {
		return nil, err
	}
	rss := sampleRSS()
	defer rss.Stop()
	wcfg := worker.ConfigFrom(b.workerConfig())
	inserter, err := worker.NewInsertClient(b.pool, wcfg, b.cfg.Logger)
	if err != nil {
		return nil, err
	}
	pcfg := &outbox.Config{}
	if perPOI {
		pcfg.MaxJobBytes = 1 // every POI is larger: one job each
	}
	pub := outbox.New(inserter, pcfg, b.cfg.Logger)
	res := &RunResult{Files: src.files, Concurrent: concurrent}

	if !concurrent {
		start := time.Now()
		if err := b.publish(ctx, src, pub, res); err != nil {
			return nil, err
		}
		res.PublishSeconds = time.Since(start).Seconds()
		b.progress("  published %d POIs of %d files in %.1fs; working", res.POIs, res.Files, res.PublishSeconds)
		if err := b.work(ctx, wcfg, res); err != nil {
			return nil, err
		}
		res.PeakRSSBytes = rss.Stop()
		return res, b.count(ctx, res)
	}

	w, err := b.newWorker(wcfg, reresolved{res})
	if err != nil {
		return nil, err
	}
	after, err := lastRound(ctx, b.pool)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()
	var waits *waitSampler
	if b.cfg.SampleWaits {
		waits = sampleWaits(ctx, b.pool, 300*time.Millisecond)
	}
	res.Publishers = b.cfg.Publishers
	if err := b.publishConcurrently(ctx, src, pub, res); err != nil {
		return nil, err
	}
	res.PublishSeconds = time.Since(start).Seconds()
	b.progress("  published %d POIs of %d files in %.1fs while working; draining", res.POIs, res.Files, res.PublishSeconds)
	if err := worker.WaitIdle(ctx, b.pool, b.workProgress()); err != nil {
		return nil, err
	}
	res.TotalSeconds = time.Since(start).Seconds()
	res.WorkSeconds = res.TotalSeconds
	if res.Serial, err = serialShares(ctx, b.pool, after, res.TotalSeconds); err != nil {
		return nil, err
	}
	if waits != nil {
		if res.Serial.Waits, err = waits.Stop(15); err != nil {
			return nil, err
		}
	}
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	res.PeakRSSBytes = rss.Stop()
	return res, b.count(ctx, res)
}

// publish publishes every file of src with pub, FilesPerTx files per
// transaction, counting the POIs into res.
func (b *bench) publish(ctx context.Context, src source, pub *outbox.Publisher, res *RunResult) error {
	return b.publishBatches(src, res, func(batch []outbox.Analysis) error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := pub.PublishManyTx(ctx, tx, batch)
			return err
		})
	})
}

// publishConcurrently publishes src as publish does, with Publishers
// goroutines at once, each its share of the files (file k to goroutine k
// mod Publishers).
func (b *bench) publishConcurrently(ctx context.Context, src source, pub *outbox.Publisher, res *RunResult) error {
	n := b.cfg.Publishers
	if n <= 1 {
		return b.publish(ctx, src, pub, res)
	}
	parts := make([]RunResult, n)
	errs := make(chan error, n)
	for i := range n {
		share := source{files: (src.files - i + n - 1) / n, next: func(k int) (outbox.Analysis, error) { return src.next(k*n + i) }}
		go func() { errs <- b.publish(ctx, share, pub, &parts[i]) }()
	}
	var err error
	for range n {
		err = cmp.Or(err, <-errs)
	}
	for _, p := range parts {
		res.POIs += p.POIs
	}
	return err
}

// publishBatches hands every file of src to flush, FilesPerTx files at a
// time, counting the POIs into res and logging progress every 5s.
func (b *bench) publishBatches(src source, res *RunResult, flush func([]outbox.Analysis) error) error {
	batch := make([]outbox.Analysis, 0, b.cfg.FilesPerTx)
	lastLog := time.Now()
	for k := range src.files {
		a, err := src.next(k)
		if err != nil {
			return err
		}
		res.POIs += len(a.POIs)
		batch = append(batch, a)
		if len(batch) == cap(batch) {
			if err := flush(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if time.Since(lastLog) > 5*time.Second {
			b.progress("  published %d of %d files", k+1, src.files)
			lastLog = time.Now()
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return flush(batch)
}

// newWorker is relay's worker with wcfg, River's statements on the
// bench's River pool, telling obs about every batch and round.
func (b *bench) newWorker(wcfg *worker.Config, obs worker.Observer) (*worker.Worker, error) {
	cfg := *wcfg
	cfg.RiverPool, cfg.Observer = b.riverPool, obs
	return worker.New(b.pool, &cfg, b.cfg.Logger)
}

// work runs relay's worker until the queue is idle.
func (b *bench) work(ctx context.Context, wcfg *worker.Config, res *RunResult) error {
	w, err := b.newWorker(wcfg, reresolved{res})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := w.RunUntilIdle(ctx, b.workProgress()); err != nil {
		return err
	}
	res.WorkSeconds = time.Since(start).Seconds()
	return nil
}

// reresolved adds every link round's re-resolved references to a run's
// count.
type reresolved struct{ res *RunResult }

func (reresolved) BatchDone(*resolvefile.BatchSummary) {}

func (reresolved) BatchFailed(time.Duration) {}

func (r reresolved) Linked(sum *link.Summary) {
	atomic.AddInt64(&r.res.Reresolved, int64(sum.Reresolved))
}

// workProgress reports the queue every 5 seconds.
func (b *bench) workProgress() func(worker.Progress) {
	lastLog := time.Now()
	return func(p worker.Progress) {
		if time.Since(lastLog) > 5*time.Second {
			b.progress("  working: %d jobs pending, %d completed", p.Pending, p.Completed)
			lastLog = time.Now()
		}
	}
}

// count fills in what the run wrote and the rates.
func (b *bench) count(ctx context.Context, res *RunResult) error {
	var discarded int64
	err := b.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM river_job WHERE kind = $1),
		(SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'discarded'),
		(SELECT count(*) FROM relationships), (SELECT count(*) FROM failed_pois), (SELECT count(*) FROM pois)`,
		outbox.KindResolveFile).Scan(&res.Jobs, &discarded, &res.Relationships, &res.FailedPOIs, &res.Symbols)
	if err != nil {
		return fmt.Errorf("error counting results: %w", err)
	}
	if discarded > 0 {
		return fmt.Errorf("%d resolve_file jobs were discarded; run with --log-level debug to see why", discarded)
	}
	if !res.Concurrent {
		res.TotalSeconds = res.PublishSeconds + res.WorkSeconds
	}
	res.JobsPerFile = ratio(float64(res.Jobs), float64(res.Files))
	res.PublishPOIsPerSec = ratio(float64(res.POIs), res.PublishSeconds)
	res.WorkPOIsPerSec = ratio(float64(res.POIs), res.WorkSeconds)
	res.E2EPOIsPerSec = ratio(float64(res.POIs), res.TotalSeconds)
	res.RowsWritten = res.Symbols + res.Relationships + res.FailedPOIs
	res.RowsPerSec = ratio(float64(res.RowsWritten), res.TotalSeconds)
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (b *bench) mainCorpus() corpus {
	return corpus{files: b.cfg.Files, poisPerFile: b.cfg.POIsPerFile, malformed: b.cfg.Malformed, repositories: b.cfg.Repositories}
}

func corpusSource(c corpus) source { return source{files: c.files, next: c.analysis} }

// pregenerated generates every analysis of src before the run, so that the
// publish time measured is relay's and not the synthetic generator's (about
// 0.4 s of CPU per 100,000 POIs, on the publishing goroutine). The memory
// phase streams instead: its figure is the worker's memory, not the corpus's.
func pregenerated(src source) (source, error) {
	all := make([]outbox.Analysis, src.files)
	for k := range all {
		a, err := src.next(k)
		if err != nil {
			return source{}, err
		}
		all[k] = a
	}
	return source{files: src.files, next: func(k int) (outbox.Analysis, error) { return all[k], nil }}, nil
}

// relay is phase 2: the corpus published and then worked, and published
// again (on a fresh database) while the workers run.
func (b *bench) relay(ctx context.Context, res *Result) error {
	c := b.mainCorpus()
	src, err := pregenerated(corpusSource(c))
	if err != nil {
		return err
	}
	if b.cfg.RelayRuns != RelayRunsConcurrent {
		r, err := b.runCorpus(ctx, src, false, false)
		if err != nil {
			return err
		}
		r.Malformed = c.malformedCount()
		res.Relay = r
	}
	if b.cfg.RelayRuns != RelayRunsSequential {
		for round := range b.cfg.Rounds {
			b.progress("  publishing while the workers run (round %d of %d)", round+1, b.cfg.Rounds)
			r, err := b.runCorpus(ctx, src, false, true)
			if err != nil {
				return err
			}
			r.Malformed = c.malformedCount()
			b.progress("  round %d: %.0f e2e POIs/s, %d references re-resolved", round+1, r.E2EPOIsPerSec, r.Reresolved)
			res.RelayConcurrentRounds = append(res.RelayConcurrentRounds, r)
		}
		res.RelayConcurrent = medianRound(res.RelayConcurrentRounds)
		if len(res.RelayConcurrentRounds) == 1 {
			res.RelayConcurrentRounds = nil
		}
	}
	return nil
}

func (b *bench) baseline(ctx context.Context, res *Result) error {
	c := b.mainCorpus()
	c.files = b.cfg.BaselineFiles
	src, err := pregenerated(corpusSource(c))
	if err != nil {
		return err
	}
	r, err := b.runCorpus(ctx, src, true, false)
	if err != nil {
		return err
	}
	r.Malformed = c.malformedCount()
	res.Baseline = r
	return nil
}

// Failures is phase 4: the same well-formed POIs without and with malformed
// POIs added, FailureRate of the total.
type Failures struct {
	Clean   *RunResult `json:"clean"`
	Failing *RunResult `json:"failing"`
	// ExtraMillisPerFailedPOI is the failing run's extra total time divided
	// by its failed POIs.
	ExtraMillisPerFailedPOI float64 `json:"extra_ms_per_failed_poi"`
}

func (b *bench) failures(ctx context.Context, res *Result) error {
	clean := corpus{files: b.cfg.FailuresFiles, poisPerFile: b.cfg.POIsPerFile}
	failing := clean
	failing.extraMalformed = b.cfg.FailureRate
	f := &Failures{}
	cleanSrc, err := pregenerated(corpusSource(clean))
	if err != nil {
		return err
	}
	failingSrc, err := pregenerated(corpusSource(failing))
	if err != nil {
		return err
	}
	if f.Clean, err = b.runCorpus(ctx, cleanSrc, false, false); err != nil {
		return err
	}
	if f.Failing, err = b.runCorpus(ctx, failingSrc, false, false); err != nil {
		return err
	}
	f.Failing.Malformed = failing.malformedCount()
	f.ExtraMillisPerFailedPOI = ratio((f.Failing.TotalSeconds-f.Clean.TotalSeconds)*1000, float64(f.Failing.FailedPOIs))
	res.Failures = f
	return nil
}

// Stdlib is phase 6: `relay analyze` on the Go standard library's source.
type Stdlib struct {
	Dir string `json:"dir"`
	RunResult
	// SkippedFiles did not parse; RejectedFiles were refused by the outbox.
	SkippedFiles  int `json:"skipped_files"`
	RejectedFiles int `json:"rejected_files"`
}

func (b *bench) stdlib(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	rss := sampleRSS()
	defer rss.Stop()
	wcfg := worker.ConfigFrom(b.workerConfig())
	inserter, err := worker.NewInsertClient(b.pool, wcfg, b.cfg.Logger)
	if err != nil {
		return err
	}
	pub := outbox.New(inserter, nil, b.cfg.Logger)
	sum, err := goanalyze.Publish(ctx, b.pool, pub, b.cfg.GoSrc, goanalyze.PublishConfig{FilesPerTx: b.cfg.FilesPerTx, References: b.cfg.StdlibReferences})
	if err != nil {
		return err
	}
	s := &Stdlib{Dir: b.cfg.GoSrc, SkippedFiles: len(sum.Skipped), RejectedFiles: len(sum.Rejected)}
	s.Files, s.POIs, s.PublishSeconds = sum.Files, sum.POIs, sum.Seconds
	b.progress("  published %d POIs of %d files in %.1fs (%d skipped); working", s.POIs, s.Files, s.PublishSeconds, s.SkippedFiles)
	if err := b.work(ctx, wcfg, &s.RunResult); err != nil {
		return err
	}
	s.PeakRSSBytes = rss.Stop()
	if err := b.count(ctx, &s.RunResult); err != nil {
		return err
	}
	res.Stdlib = s
	return nil
}

// Memory is phase 7: relay's peak RSS for the main corpus and for one
// MemoryFiles/Files times larger.
type Memory struct {
	Small *RunResult `json:"small"`
	Large *RunResult `json:"large"`
	// RSSRatio is Large.PeakRSSBytes / Small.PeakRSSBytes.
	RSSRatio float64 `json:"rss_ratio"`
}

func (b *bench) memory(ctx context.Context, res *Result) error {
	// Both runs stream their corpus (the relay phase's run holds its corpus
	// in memory, so its RSS is not comparable).
	m := &Memory{}
	var err error
	if m.Small, err = b.runCorpus(ctx, corpusSource(b.mainCorpus()), false, false); err != nil {
		return err
	}
	large := b.mainCorpus()
	large.files = b.cfg.MemoryFiles
	if m.Large, err = b.runCorpus(ctx, corpusSource(large), false, false); err != nil {
		return err
	}
	m.Large.Malformed = large.malformedCount()
	m.RSSRatio = ratio(float64(m.Large.PeakRSSBytes), float64(m.Small.PeakRSSBytes))
	res.Memory = m
	return nil
}

// alternate runs the two runs once each per round, for Config.Rounds
// rounds, the first of names first in even rounds and the second in odd
// ones, and hands each round's runs (in names' order) to done.
func (b *bench) alternate(names [2]string, run [2]func() (*RunResult, error),
	done func(round int, first string, runs [2]*RunResult)) error {
	for round := range b.cfg.Rounds {
		order := [2]int{0, 1}
		if round%2 == 1 {
			order = [2]int{1, 0}
		}
		var runs [2]*RunResult
		for _, i := range order {
			b.progress("  round %d of %d: %s while the worker runs", round+1, b.cfg.Rounds, names[i])
			r, err := run[i]()
			if err != nil {
				return err
			}
			runs[i] = r
		}
		done(round, names[order[0]], runs)
	}
	return nil
}

// medianRound returns the round of median e2e POIs/s.
func medianRound(rounds []*RunResult) *RunResult {
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b *RunResult) int { return cmp.Compare(a.E2EPOIsPerSec, b.E2EPOIsPerSec) })
	return sorted[len(sorted)/2]
}
