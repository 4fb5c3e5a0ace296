package torture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	relaydb "github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
)

// Config is a torture run.
type Config struct {
	// ServerURL is the PostgreSQL server; each parallel lane creates two
	// databases on it (a history's and its oracle's), copies of the
	// migrated template, emptied between histories.
	ServerURL string
	// Seeds are the histories to run, one per seed.
	Seeds []uint64
	// Parallel is how many histories run at once.
	Parallel int
	Gen      GenConfig
	// CheckFailed compares the actionable failed_pois rows too.
	CheckFailed bool
	// Shrink shrinks each divergence to the smallest history that still
	// diverges (at most ShrinkRuns reruns).
	Shrink     bool
	ShrinkRuns int
	// RelayBin is a binary that runs as relay under AsRelayEnv (the
	// running executable, usually), for worker processes that are killed.
	RelayBin string
	// Progress, when set, is called after each history.
	Progress func(done int, c Counts, divergences int)
	// Diverged, when set, is called with each divergence as soon as it is
	// found (and shrunk), one call at a time: a long run reports its seeds
	// while it goes on.
	Diverged func(*Failure)
	Logger   *slog.Logger
}

// Failure is one history that diverged (or failed to run).
type Failure struct {
	Seed uint64 `json:"seed"`
	// History is the history as generated; Shrunk the smallest that still
	// diverges (nil when not shrunk).
	History *History `json:"-"`
	Shrunk  *History `json:"-"`
	Diff    *Diff    `json:"-"`
	// Err is set when the history could not run to its comparison (a
	// step failed, a wait timed out): a failure too, but not a diff.
	Err error `json:"-"`
}

// Result is a whole run.
type Result struct {
	Counts   Counts
	Failures []*Failure
	Elapsed  time.Duration
}

// lane is a pair of databases one history at a time runs in.
type lane struct {
	hist, oracle *database
	drops        []func() error
}

const resetSQL = `
	SELECT string_agg(format('DELETE FROM %I.%I', schemaname, tablename), '; ' ORDER BY tablename)
	FROM pg_tables WHERE schemaname = $1 AND tablename NOT IN ('relay_goose_db_version', 'river_migration')`

// reset empties every table of db but the migrations' own, as the
// template left them: no triggers run (session_replication_role replica).
func reset(ctx context.Context, db *database) error {
	var sql string
	if err := db.pool.QueryRow(ctx, resetSQL, db.schema).Scan(&sql); err != nil {
		return fmt.Errorf("error listing tables: %w", err)
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return fmt.Errorf("error emptying the database: %w", err)
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("error emptying the database: %w", err)
		}
		return nil
	})
}

func newLane(ctx context.Context, serverURL string) (*lane, error) {
	l := &lane{}
	for _, dst := range []**database{&l.hist, &l.oracle} {
		tdb, drop, err := testdb.Create(ctx, serverURL)
		if err != nil {
			l.close()
			return nil, err
		}
		l.drops = append(l.drops, drop)
		pool, err := relaydb.Open(ctx, tdb.URL, relaydb.Options{Role: "torture", Schema: tdb.Schema, MaxConns: 12,
			StatementTimeout: time.Minute, IdleInTransactionTimeout: 2 * time.Minute})
		if err != nil {
			l.close()
			return nil, err
		}
		db, err := newDatabase(ctx, tdb.URL, tdb.Schema, pool)
		if err != nil {
			pool.Close()
			l.close()
			return nil, err
		}
		*dst = db
	}
	return l, nil
}

func (l *lane) close() error {
	var errs []error
	for _, db := range []*database{l.hist, l.oracle} {
		if db != nil {
			db.close()
		}
	}
	for _, d := range l.drops {
		errs = append(errs, d())
	}
	return errors.Join(errs...)
}

// runOne runs history h in lane l and compares it with its oracle.
func (cfg *Config) runOne(ctx context.Context, l *lane, h *History) (Counts, *Diff, error) {
	if err := reset(ctx, l.hist); err != nil {
		return Counts{}, nil, err
	}
	if err := reset(ctx, l.oracle); err != nil {
		return Counts{}, nil, err
	}
	e := &executor{ctx: ctx, db: l.hist, h: h, relayBin: cfg.RelayBin}
	if err := e.run(); err != nil {
		if e.stuck != "" {
			err = fmt.Errorf("%w\nat the first settle that ran past %s, %s", err, stuckAfter, e.stuck)
		}
		return e.counts, nil, err
	}
	hist, err := readState(ctx, l.hist.pool)
	if err != nil {
		return e.counts, nil, err
	}
	orc, rejected, err := oracle(ctx, l.oracle, e.finalVersions(), e.patches)
	if err != nil {
		return e.counts, nil, err
	}
	d := compare(hist, orc, e, cfg.CheckFailed)
	d.Outcomes = append(d.Outcomes, e.outcomes...)
	if rejected != "" {
		d.Outcomes = append(d.Outcomes, rejected)
	}
	ras, err := strings1(ctx, l.hist.pool, `SELECT format('rejected_analyses: %s %s: %s', repository, file_id, reason)
		FROM rejected_analyses ORDER BY id`)
	if err != nil {
		return e.counts, nil, err
	}
	d.Outcomes = append(d.Outcomes, ras...)
	return e.counts, d, nil
}

// Run runs every seed's history, cfg.Parallel at a time, and shrinks the
// divergences.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	cfg.Parallel = max(cfg.Parallel, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	lanes := make([]*lane, min(cfg.Parallel, len(cfg.Seeds)))
	for i := range lanes {
		l, err := newLane(ctx, cfg.ServerURL)
		if err != nil {
			for _, l := range lanes[:i] {
				_ = l.close()
			}
			return nil, fmt.Errorf("error creating the databases of lane %d: %w", i, err)
		}
		lanes[i] = l
	}
	defer func() {
		for _, l := range lanes {
			if err := l.close(); err != nil {
				cfg.Logger.Warn("dropping a lane's databases", slog.String("error", err.Error()))
			}
		}
	}()

	res := &Result{}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(cfg.Seeds) {
					return
				}
				seed := cfg.Seeds[i]
				h := Generate(seed, cfg.Gen)
				c, d, err := cfg.runOne(ctx, l, h)
				var f *Failure
				if err != nil || !d.Empty() {
					f = &Failure{Seed: seed, History: h, Diff: d, Err: err}
					if cfg.Shrink && ctx.Err() == nil {
						f.Shrunk, f.Diff, f.Err = cfg.shrink(ctx, l, h, d, err)
					}
				}
				mu.Lock()
				res.Counts.add(c)
				if f != nil {
					res.Failures = append(res.Failures, f)
					if cfg.Diverged != nil {
						cfg.Diverged(f)
					}
				}
				if cfg.Progress != nil {
					cfg.Progress(res.Counts.Histories, res.Counts, len(res.Failures))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, ctx.Err()
}

// RunSeeds is Run of seeds first, first+1, ..., first+n-1.
func Seeds(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}
