package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/migrations"
)

// bench is one run's throwaway database and settings.
type bench struct {
	cfg      *Config
	adminURL string
	dbName   string
	// schema is the run's schema on a Citus coordinator (Config.Citus),
	// where dbName is the coordinator's database and not the run's own.
	schema string
	url    string
	pool   *pgxpool.Pool
	// riverPool runs the worker's River statements, as in relay worker
	// (database.RiverOptionsFromConfig).
	riverPool *pgxpool.Pool
	// checkpointWarned: reset has said it cannot CHECKPOINT.
	checkpointWarned bool
}

// open creates relay_bench_<random> on the server of cfg.DatabaseURL and
// migrates it.
func open(ctx context.Context, cfg *Config) (*bench, error) {
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("invalid database-url %q: want postgres://user@host:port/db", config.Redact(cfg.DatabaseURL))
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, fmt.Errorf("error reading random bytes: %w", err)
	}
	b := &bench{cfg: cfg, adminURL: cfg.DatabaseURL, dbName: "relay_bench_" + hex.EncodeToString(suffix)}
	if cfg.Citus {
		// A coordinator's database, with its nodes: a schema of the run's
		// own in it.
		b.schema, b.dbName = b.dbName, strings.TrimPrefix(u.Path, "/")
	} else {
		u.Path = "/" + b.dbName
	}
	b.url = u.String()

	if !cfg.Citus {
		admin, err := pgx.Connect(ctx, b.adminURL)
		if err != nil {
			return nil, fmt.Errorf("error connecting to %s: %w", config.Redact(b.adminURL), err)
		}
		_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{b.dbName}.Sanitize())
		_ = admin.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("error creating database %s: %w", b.dbName, err)
		}
		b.progress("created database %s", b.dbName)
	}

	b.pool, err = database.Open(ctx, b.url, database.Options{Role: "bench", Schema: b.schema, MaxConns: max(8, database.OptionsFromConfig(b.workerConfig(), "bench").MaxConns), // as relay worker's pool
		StatementTimeout: 10 * time.Minute, IdleInTransactionTimeout: 10 * time.Minute})
	if err != nil {
		b.close()
		return nil, err
	}
	b.riverPool, err = database.Open(ctx, b.url, database.RiverOptionsFromConfig(b.workerConfig(), "bench"))
	if err != nil {
		b.close()
		return nil, err
	}
	if cfg.Citus {
		if _, err := b.pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{b.schema}.Sanitize()); err != nil {
			b.close()
			return nil, fmt.Errorf("error creating schema %s: %w", b.schema, err)
		}
		b.progress("created schema %s in %s", b.schema, b.dbName)
	}
	m, err := migrations.New(b.pool, b.schema, cfg.Logger)
	if err != nil {
		b.close()
		return nil, err
	}
	_, err = m.Up(ctx)
	_ = m.Close()
	if err != nil {
		b.close()
		return nil, err
	}
	if cfg.Citus {
		rep, err := citus.Distribute(ctx, b.pool)
		if err != nil {
			b.close()
			return nil, err
		}
		b.progress("distributed %d tables by repository (%s, %d nodes with shards)", len(rep.Tables), rep.CitusVersion, rep.Workers)
	}
	return b, nil
}

// close drops the database unless Keep is set.
func (b *bench) close() {
	if b.pool != nil {
		b.pool.Close()
	}
	if b.riverPool != nil {
		b.riverPool.Close()
	}
	if b.cfg.Keep {
		b.progress("kept database %s", cmp.Or(b.schema, b.dbName))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if b.schema != "" {
		if err := dropSchema(ctx, b.adminURL, b.schema); err != nil {
			b.progress("could not drop schema %s: %v", b.schema, err)
		}
		return
	}
	if err := database.Drop(ctx, b.adminURL, b.dbName); err != nil {
		b.progress("could not drop database %s: %v", b.dbName, err)
	}
}

// dropSchema drops a Citus run's schema, with its distributed tables.
func dropSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

// reset empties relay's and River's tables, so each phase starts alike.
func (b *bench) reset(ctx context.Context) error {
	_, err := b.pool.Exec(ctx, `TRUNCATE files, pois, poi_references, failed_pois, dead_lettered_items,
		dead_letter_events, river_job RESTART IDENTITY CASCADE`)
	if err != nil {
		return fmt.Errorf("error emptying the tables: %w", err)
	}
	// Every timed run starts from a checkpoint, so none pays for the dirty
	// pages and WAL of the run before it (a checkpoint falling inside a run
	// also makes every page's first change after it log the whole page).
	if _, err := b.pool.Exec(ctx, `CHECKPOINT`); err != nil && !b.checkpointWarned {
		b.checkpointWarned = true
		b.progress("  cannot CHECKPOINT between runs (%v); runs may pay for their predecessors' writes", err)
	}
	return nil
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.cfg.Progress, "relay-bench: "+format+"\n", args...)
}

// Machine is what the figures were measured on.
type Machine struct {
	CPUs              int    `json:"cpus"`
	MemoryBytes       int64  `json:"memory_bytes"`
	GoVersion         string `json:"go_version"`
	PostgresVersion   string `json:"postgres_version"`
	SharedBuffers     string `json:"postgres_shared_buffers"`
	SynchronousCommit string `json:"postgres_synchronous_commit"`
	// GCPercent is the Go garbage collector's target the process ran with
	// (relay's gc_percent, or GOGC when set).
	GCPercent int `json:"gc_percent"`
}

func (b *bench) machine(ctx context.Context) (Machine, error) {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), MemoryBytes: memTotal()}
	err := b.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('shared_buffers'),
		current_setting('synchronous_commit')`).Scan(&m.PostgresVersion, &m.SharedBuffers, &m.SynchronousCommit)
	if err != nil {
		return m, fmt.Errorf("error reading server settings: %w", err)
	}
	return m, nil
}

// memTotal reads MemTotal from /proc/meminfo (0 where there is none).
func memTotal() int64 { return procField("/proc/meminfo", "MemTotal:") }

// procField reads a "Key: N kB" line of a /proc file, in bytes.
func procField(path, key string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n * 1024
		}
	}
	return 0
}
