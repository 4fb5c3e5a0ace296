package torture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/cli"
	relaydb "github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// AsRelayEnv, set in a process's environment, makes a binary that calls
// MaybeRunAsRelay run as relay itself: the torture test and relay-torture
// start their `relay worker` processes by running themselves, so no relay
// binary has to be built first.
const AsRelayEnv = "RELAY_TORTURE_AS_RELAY"

// MaybeRunAsRelay runs relay's command line (cli.Main) with the process's
// arguments and exits, when AsRelayEnv is set; otherwise it returns.
// Call it first in main or TestMain.
func MaybeRunAsRelay() {
	if os.Getenv(AsRelayEnv) == "" {
		return
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		LookupEnv: os.LookupEnv}))
}

// The settings every worker of a history runs with, in-process or as a
// process: fast enough that a history takes well under a second (no link
// delay, queues polled often), and a killed worker's batches returned
// after two seconds.
const (
	heartbeatInterval = 250 * time.Millisecond
	heartbeatTimeout  = 2 * time.Second
	drainInterval     = 10 * time.Millisecond
	fetchPollInterval = 10 * time.Millisecond
	fetchCooldown     = time.Millisecond
)

var relaySettings = map[string]string{
	"RELAY_LOG_LEVEL":                 "error",
	"RELAY_WORKER_CONCURRENCY":        "2",
	"RELAY_LINK_DELAY":                "0s",
	"RELAY_PUBLISH_QUEUE_INTERVAL":    drainInterval.String(),
	"RELAY_FETCH_POLL_INTERVAL":       fetchPollInterval.String(),
	"RELAY_FETCH_COOLDOWN":            fetchCooldown.String(),
	"RELAY_WORKER_HEARTBEAT_INTERVAL": heartbeatInterval.String(),
	"RELAY_WORKER_HEARTBEAT_TIMEOUT":  heartbeatTimeout.String(),
}

// relayConfig is relay's configuration for a history's database, with
// relaySettings applied.
func relayConfig(url, schema string) *config.Config {
	cfg := config.Default()
	cfg.DatabaseURL, cfg.DatabaseSchema = url, schema
	cfg.LogLevel, cfg.WorkerConcurrency, cfg.LinkDelay = "error", 2, 0
	cfg.PublishQueueInterval, cfg.FetchPollInterval, cfg.FetchCooldown = drainInterval, fetchPollInterval, fetchCooldown
	cfg.WorkerHeartbeatInterval, cfg.WorkerHeartbeatTimeout = heartbeatInterval, heartbeatTimeout
	return cfg
}

// appURL is dbURL with its sessions named app in pg_stat_activity, so the
// executor can tell which operation a session belongs to.
func appURL(dbURL, app string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("error parsing database URL: %w", err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// openPool opens a pool on db whose sessions are named app.
func openPool(ctx context.Context, db *database, app string, maxConns int32) (*pgxpool.Pool, error) {
	u, err := appURL(db.url, app)
	if err != nil {
		return nil, err
	}
	return relaydb.Open(ctx, u, relaydb.Options{Schema: db.schema, MaxConns: maxConns,
		StatementTimeout: time.Minute, IdleInTransactionTimeout: 2 * time.Minute})
}

// publishCLI runs the path of `relay publish` (cli.PublishNDJSON) with the
// versions as NDJSON, on a pool of its own whose sessions are named app.
func (db *database) publishCLI(ctx context.Context, app, ndjson string) (*cli.PublishSummary, error) {
	pool, err := openPool(ctx, db, app, 2)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	var stderr bytes.Buffer
	sum, err := cli.PublishNDJSON(ctx, db.cfg, pool, strings.NewReader(ndjson), &stderr, db.logger)
	if err != nil {
		return nil, fmt.Errorf("relay publish: %w", err)
	}
	return sum, nil
}

// runWorker runs one in-process worker until the queues are idle, as
// `relay worker --until-idle` does: a River client working the resolve and
// link queues, the SQL API's drain beside it, its heartbeat announced in
// relay_workers (so that it returns killed workers' batches). pool's
// sessions name the worker.
func (db *database) runWorker(ctx context.Context, pool *pgxpool.Pool, names *clientNames) error {
	w, err := names.newWorker(func() (*worker.Worker, error) {
		cfg := *db.wcfg
		cfg.Queues, cfg.DrainLoops = []string{outbox.QueueResolve}, 2
		return worker.New(pool, &cfg, db.logger)
	})
	if err != nil {
		return err
	}
	live := &liveness.Liveness{Pool: pool, ClientID: w.ID(), Interval: heartbeatInterval, Timeout: heartbeatTimeout, Logger: db.logger}
	if err := live.Announce(ctx); err != nil {
		return err
	}
	workCtx, stopWork := context.WithCancelCause(ctx)
	defer stopWork(nil)
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		if err := live.Run(liveCtx); err != nil {
			stopWork(err)
		}
	}()
	err = w.RunUntilIdle(workCtx, nil)
	stopLive()
	<-liveDone
	if cause := context.Cause(workCtx); errors.Is(cause, liveness.ErrLeaseLost) {
		return cause
	}
	return err
}

// clientNames are the River client ids of the workers of one run.
type clientNames struct {
	mu    sync.Mutex
	taken map[string]bool
}

// newWorker makes a worker with make until its id is new: River names a
// client after the host and the microsecond it was made, and workers made
// in the same microsecond would share a name (and a heartbeat row).
func (n *clientNames) newWorker(make func() (*worker.Worker, error)) (*worker.Worker, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken == nil {
		n.taken = map[string]bool{}
	}
	for {
		c, err := make()
		if err != nil || !n.taken[c.ID()] {
			if err == nil {
				n.taken[c.ID()] = true
			}
			return c, err
		}
	}
}

// process is a `relay worker --until-idle` process.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	output bytes.Buffer
}

// startWorkerProcess starts relayBin (a binary that runs as relay under
// AsRelayEnv) as `relay worker --until-idle`, its sessions named app.
func startWorkerProcess(relayBin, dbURL, schema, app string) (*process, error) {
	u, err := appURL(dbURL, app)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(relayBin, "worker", "--until-idle", "--database-url", u, "--database-schema", schema)
	env := []string{AsRelayEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RELAY_") {
			env = append(env, kv)
		}
	}
	for k, v := range relaySettings {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	p := &process{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.output, &p.output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("error starting a relay worker process: %w", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends the process SIGKILL and waits for it to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// newDatabase prepares a history's (or an oracle's) database: its relay
// configuration, a publisher, and one pool per worker slot.
func newDatabase(ctx context.Context, url, schema string, pool *pgxpool.Pool) (*database, error) {
	db := &database{url: url, schema: schema, pool: pool, logger: slog.New(slog.DiscardHandler), cfg: relayConfig(url, schema)}
	db.wcfg = worker.ConfigFrom(db.cfg)
	client, err := worker.NewInsertClient(pool, db.wcfg, db.logger)
	if err != nil {
		return nil, err
	}
	db.insert = client
	db.pub = outbox.New(client, &db.wcfg.Publish, db.logger)
	for i := range db.workers {
		p, err := openPool(ctx, db, fmt.Sprintf("torture-worker-%d", i), 10)
		if err != nil {
			db.close()
			return nil, err
		}
		db.workers[i] = p
	}
	return db, nil
}

func (db *database) close() {
	for _, p := range db.workers {
		if p != nil {
			p.Close()
		}
	}
	db.pool.Close()
}
