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
	WorkerProcesses int `json:"worker_processes"`
	// Publishers is how many `relay publish` processes ran at once, each
	// with its share of the corpus's files.
	Publishers     int     `json:"publishers"`
	Files          int     `json:"files"`
	POIs           int     `json:"pois"`
	PublishSeconds float64 `json:"publish_seconds"`
	TotalSeconds   float64 `json:"total_seconds"`
	E2EPOIsPerSec  float64 `json:"e2e_pois_per_sec"`
	Relationships  int64   `json:"relationships"`
	FailedPOIs     int64   `json:"failed_pois"`
	// Reresolved is the sum of the workers' relay_references_reresolved_total.
	Reresolved int64 `json:"reresolved"`
	// Serial is the run's serial sections' shares of its wall time.
	Serial *Serial `json:"serial,omitempty"`
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
	inputs := map[int][]string{}
	var pois int
	for _, p := range b.cfg.CLIPublishers {
		if inputs[p], pois, err = writeCorpus(c, filepath.Join(dir, fmt.Sprintf("corpus-%d", p)), p); err != nil {
			return err
		}
	}
	for _, n := range b.cfg.CLIWorkers {
		for _, p := range b.cfg.CLIPublishers {
			run := &CLIRun{WorkerProcesses: n, Publishers: p, Files: c.files, POIs: pois}
			if err := b.cliRun(ctx, bin, inputs[p], dir, run); err != nil {
				return err
			}
			res.CLIRuns = append(res.CLIRuns, run)
		}
	}
	res.CLI = res.CLIRuns[0]
	return nil
}

// cliRun is one run of the cli phase with run.WorkerProcesses workers, on
// a reset database.
func (b *bench) cliRun(ctx context.Context, bin string, inputs []string, dir string, run *CLIRun) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	env := append(os.Environ(), "RELAY_DATABASE_URL="+b.url, "RELAY_DATABASE_SCHEMA="+b.schema, "RELAY_LOG_LEVEL=warn",
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

	var waits *waitSampler
	if b.cfg.SampleWaits {
		waits = sampleWaits(ctx, b.pool, 300*time.Millisecond)
	}
	after, err := lastRound(ctx, b.pool)
	if err != nil {
		return err
	}
	start := time.Now()
	errs := make(chan error, len(inputs))
	for _, input := range inputs {
		go func() {
			pub := exec.CommandContext(ctx, bin, "publish", input)
			pub.Env = env
			if out, err := pub.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("relay publish %s: %w\n%s", input, err, out)
				return
			}
			errs <- nil
		}()
	}
	for range inputs {
		if err := <-errs; err != nil {
			return err
		}
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
	if run.Serial, err = serialShares(ctx, b.pool, after, run.TotalSeconds); err != nil {
		return err
	}
	if waits != nil {
		if run.Serial.Waits, err = waits.Stop(15); err != nil {
			return err
		}
	}
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
	b.progress("  %d relay worker processes + %d relay publish: %d POIs in %.2fs (publish %.2fs): %.0f POIs/s, %d references re-resolved; linker lanes held at most %.1f%% of the time",
		run.WorkerProcesses, run.Publishers, run.POIs, run.TotalSeconds, run.PublishSeconds, run.E2EPOIsPerSec, run.Reresolved, 100*run.Serial.MaxHeldShare)
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

// writeCorpus writes c's analyses as parts files, prefix-0.ndjson to
// prefix-(parts-1).ndjson, one JSON object a line (file k in part k mod
// parts), and returns their paths and the number of POIs.
func writeCorpus(c corpus, prefix string, parts int) ([]string, int, error) {
	paths := make([]string, parts)
	files := make([]*os.File, parts)
	ws := make([]*bufio.Writer, parts)
	defer func() {
		for _, f := range files {
			if f != nil {
				_ = f.Close()
			}
		}
	}()
	for i := range parts {
		paths[i] = fmt.Sprintf("%s-%d.ndjson", prefix, i)
		f, err := os.Create(paths[i])
		if err != nil {
			return nil, 0, fmt.Errorf("error writing the corpus: %w", err)
		}
		files[i], ws[i] = f, bufio.NewWriter(f)
	}
	pois := 0
	for k := range c.files {
		a, err := c.analysis(k)
		if err != nil {
			return nil, 0, err
		}
		pois += len(a.POIs)
		if err := json.NewEncoder(ws[k%parts]).Encode(struct {
			FileID string            `json:"fileId"`
			POIs   []json.RawMessage `json:"pois"`
		}{a.FileID, a.POIs}); err != nil {
			return nil, 0, fmt.Errorf("error writing the corpus: %w", err)
		}
	}
	for i, w := range ws {
		if err := w.Flush(); err != nil {
			return nil, 0, fmt.Errorf("error writing the corpus: %w", err)
		}
		if err := files[i].Close(); err != nil {
			return nil, 0, fmt.Errorf("error writing the corpus: %w", err)
		}
		files[i] = nil
	}
	return paths, pois, nil
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
