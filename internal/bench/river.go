package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// RiverNoOp is River's own rate on this machine and database: jobs that do
// nothing, worked by one client with RiverNoOpWorkers workers.
type RiverNoOp struct {
	Jobs       int     `json:"jobs"`
	Workers    int     `json:"workers"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
}

// RiverNoOpWorkers is how many no-op jobs River works at once.
const RiverNoOpWorkers = 200

type noOpArgs struct{}

func (noOpArgs) Kind() string { return "bench_noop" }

type noOpWorker struct {
	river.WorkerDefaults[noOpArgs]
}

func (noOpWorker) Work(context.Context, *river.Job[noOpArgs]) error { return nil }

// riverNoOp inserts five no-op jobs per file of the main corpus, and at
// least 50,000 (about two seconds of work: a shorter run measures River's
// start as much as its rate), then times one River client
// (RiverNoOpWorkers workers, relay's fetch cooldown, River's pool) working
// all of them: the rate relay's end-to-end run is compared with.
func (b *bench) riverNoOp(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	n := max(b.cfg.Files*5, 50_000)
	workers := river.NewWorkers()
	river.AddWorker(workers, noOpWorker{})
	client, err := river.NewClient(riverpgxv5.New(b.riverPool), &river.Config{
		Logger:        b.cfg.Logger,
		Workers:       workers,
		Queues:        map[string]river.QueueConfig{"bench_noop": {MaxWorkers: RiverNoOpWorkers}},
		FetchCooldown: b.workerConfig().FetchCooldown,
	})
	if err != nil {
		return fmt.Errorf("error creating River client: %w", err)
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noOpArgs{}, InsertOpts: &river.InsertOpts{Queue: "bench_noop"}}
	}
	if _, err := client.InsertManyFast(ctx, params); err != nil {
		return fmt.Errorf("error inserting no-op jobs: %w", err)
	}
	start := time.Now()
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("error starting River client: %w", err)
	}
	defer func() { _ = client.Stop(context.WithoutCancel(ctx)) }()
	// Counted in the table: River's subscription drops events when its
	// buffer is full.
	if err := b.waitFor(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		var left int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&left)
		return left == 0, err
	}); err != nil {
		return fmt.Errorf("River did not work the no-op jobs: %w", err)
	}
	secs := time.Since(start).Seconds()
	res.RiverNoOp = &RiverNoOp{Jobs: n, Workers: RiverNoOpWorkers, Seconds: secs, JobsPerSec: float64(n) / secs}
	b.progress("  River: %d no-op jobs in %.2fs: %.0f jobs/s", n, secs, res.RiverNoOp.JobsPerSec)
	return nil
}
