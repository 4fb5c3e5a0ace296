package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	// Reresolved is the sum of the workers' relay_references_reresolved_total.
	Reresolved int64 `json:"reresolved"`
}

// cli builds the relay binary, writes the main corpus as the NDJSON `relay
// publish` reads, and, for each --cli-workers value n, starts n `relay
// worker` processes with relay's default settings and times `relay
// publish` until the queue is drained.
func (b *bench) cli(ctx context.Context, res *Result) error {
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
	pois, err := writeCorpus(c, input)
	if err != nil {
		return err
	}
	for _, n := range b.cfg.CLIWorkers {
		run := &CLIRun{WorkerProcesses: n, Files: c.files, POIs: pois}
		if err := b.cliRun(ctx, bin, input, dir, run); err != nil {
			return err
		}
		res.CLIRuns = append(res.CLIRuns, run)
	}
	res.CLI = res.CLIRuns[0]
	return nil
}

// cliRun is one run of the cli phase with run.WorkerProcesses workers, on
// a reset database.
func (b *bench) cliRun(ctx context.Context, bin, input, dir string, run *CLIRun) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	env := append(os.Environ(), "RELAY_DATABASE_URL="+b.url, "RELAY_LOG_LEVEL=warn",
		"RELAY_LINK_DELAY="+b.workerConfig().LinkDelay.String())
	var workers []*exec.Cmd
	defer func() {
		for _, w := range workers {
			_ = w.Process.Signal(syscall.SIGTERM)
			_ = w.Wait()
		}
	}()
	var addrs []string
	for i := range run.WorkerProcesses {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		addrs = append(addrs, addr)
		w := exec.Command(bin, "worker", "--http-addr", addr)
		w.Env = env
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d-of-%d.log", i, run.WorkerProcesses)))
		if err != nil {
			return fmt.Errorf("error creating a worker log: %w", err)
		}
		defer log.Close()
		w.Stderr = log
		if err := w.Start(); err != nil {
			return fmt.Errorf("error starting relay worker: %w", err)
		}
		workers = append(workers, w)
	}
	// The workers are up when they have announced themselves.
	if err := b.waitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		var n int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM relay_workers`).Scan(&n)
		return n >= run.WorkerProcesses, err
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
	for _, addr := range addrs {
		n, err := scrapeCounter(ctx, addr, "relay_references_reresolved_total")
		if err != nil {
			return err
		}
		run.Reresolved += n
	}
	b.progress("  %d relay worker processes + relay publish: %d POIs in %.2fs (publish %.2fs): %.0f POIs/s, %d references re-resolved",
		run.WorkerProcesses, run.POIs, run.TotalSeconds, run.PublishSeconds, run.E2EPOIsPerSec, run.Reresolved)
	return nil
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("error finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scrapeCounter reads the counter name from the Prometheus text exposition
// a worker serves at addr's /metrics.
func scrapeCounter(ctx context.Context, addr, name string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("error reading a worker's metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("error reading a worker's metrics: %w", err)
	}
	return 0, fmt.Errorf("a worker's metrics have no %s", name)
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
