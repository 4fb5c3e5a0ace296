package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// CLIRun is relay end to end as an operator runs it: `relay worker`
// processes started, then `relay publish FILE` of the main corpus, timed by
// the wall clock from the publish's start until no job is left to work.
type CLIRun struct {
	WorkerProcesses int     `json:"worker_processes"`
	Files           int     `json:"files"`
	POIs            int     `json:"pois"`
	PublishSeconds  float64 `json:"publish_seconds"`
	TotalSeconds    float64 `json:"total_seconds"`
	E2EPOIsPerSec   float64 `json:"e2e_pois_per_sec"`
	Relationships   int64   `json:"relationships"`
	FailedPOIs      int64   `json:"failed_pois"`
}

// cli builds the relay binary, writes the main corpus as the NDJSON `relay
// publish` reads, starts --cli-workers `relay worker` processes with
// relay's default settings, and times `relay publish` until the queue is
// drained.
func (b *bench) cli(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "relay-bench-cli-")
	if err != nil {
		return fmt.Errorf("error creating a work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "relay")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/relay")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("error building relay (relay-bench runs from the repository's root): %w\n%s", err, out)
	}
	c := b.mainCorpus()
	input := filepath.Join(dir, "corpus.ndjson")
	run := &CLIRun{WorkerProcesses: b.cfg.CLIWorkers, Files: c.files}
	if run.POIs, err = writeCorpus(c, input); err != nil {
		return err
	}
	env := append(os.Environ(), "RELAY_DATABASE_URL="+b.url, "RELAY_LOG_LEVEL=warn")
	var workers []*exec.Cmd
	defer func() {
		for _, w := range workers {
			_ = w.Process.Signal(syscall.SIGTERM)
			_ = w.Wait()
		}
	}()
	for i := range b.cfg.CLIWorkers {
		w := exec.Command(bin, "worker")
		w.Env = env
		w.Stderr, err = os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if err != nil {
			return fmt.Errorf("error creating a worker log: %w", err)
		}
		if err := w.Start(); err != nil {
			return fmt.Errorf("error starting relay worker: %w", err)
		}
		workers = append(workers, w)
	}
	// The workers are up when they have announced themselves.
	if err := b.waitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		var n int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM relay_workers`).Scan(&n)
		return n >= b.cfg.CLIWorkers, err
	}); err != nil {
		return fmt.Errorf("relay workers did not start: %w (logs in %s)", err, dir)
	}

	start := time.Now()
	pub := exec.CommandContext(ctx, bin, "publish", input)
	pub.Env = env
	if out, err := pub.CombinedOutput(); err != nil {
		return fmt.Errorf("relay publish: %w\n%s", err, out)
	}
	run.PublishSeconds = time.Since(start).Seconds()
	if err := b.waitFor(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		var left int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&left)
		return left == 0, err
	}); err != nil {
		return fmt.Errorf("the queue did not drain: %w", err)
	}
	run.TotalSeconds = time.Since(start).Seconds()
	run.E2EPOIsPerSec = float64(run.POIs) / run.TotalSeconds
	if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM relationships), (SELECT count(*) FROM failed_pois)`).
		Scan(&run.Relationships, &run.FailedPOIs); err != nil {
		return fmt.Errorf("error counting the results: %w", err)
	}
	res.CLI = run
	b.progress("  %d relay worker processes + relay publish: %d POIs in %.2fs (publish %.2fs): %.0f POIs/s",
		run.WorkerProcesses, run.POIs, run.TotalSeconds, run.PublishSeconds, run.E2EPOIsPerSec)
	return nil
}

// writeCorpus writes c's analyses to path, one JSON object a line, and
// returns how many POIs they hold.
func writeCorpus(c corpus, path string) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("error writing the corpus: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	pois := 0
	for k := range c.files {
		a, err := c.analysis(k)
		if err != nil {
			return 0, err
		}
		pois += len(a.POIs)
		if err := enc.Encode(struct {
			FileID string            `json:"fileId"`
			POIs   []json.RawMessage `json:"pois"`
		}{a.FileID, a.POIs}); err != nil {
			return 0, fmt.Errorf("error writing the corpus: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("error writing the corpus: %w", err)
	}
	return pois, f.Close()
}

// waitFor polls cond every 20 ms until it holds, ctx ends or timeout passes.
func (b *bench) waitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
