package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// database is one database a history or an oracle runs in.
type database struct {
	url    string // the database's own URL
	schema string
	pool   *pgxpool.Pool
	cfg    *config.Config
	wcfg   *worker.Config
	insert *river.Client[pgx.Tx]
	pub    *outbox.Publisher
	logger *slog.Logger
	// workers are the pools of up to three workers running at once, their
	// sessions named torture-worker-N.
	workers [3]*pgxpool.Pool
}

// Counts are what histories did, summed over a run.
type Counts struct {
	Histories int `json:"histories"`
	// Ops counts operations (Ops of each history run, shrinking left out).
	Ops int `json:"ops"`
	// Holds counts transactions held open while other operations ran.
	Holds int `json:"holds"`
	// Interleavings counts operations run while a held transaction was
	// open: each is ordered before that transaction's commit or rollback.
	Interleavings int `json:"interleavings_forced"`
	// LockWaits counts operations seen waiting (pg_blocking_pids) for a held
	// transaction before it closed.
	LockWaits int `json:"lock_waits"`
	// Kills counts worker processes killed (SIGKILL) mid-batch.
	Kills int `json:"kills"`
	// WorkerRuns counts worker processes run until idle.
	WorkerRuns int `json:"worker_runs"`
	// Deadlocks counts publishes PostgreSQL aborted as deadlock victims
	// (rolled back; they do not count as committed).
	Deadlocks int `json:"deadlocks"`
	// Rejections counts publishes rejected as the model expected.
	Rejections int `json:"rejections"`
}

func (c *Counts) add(o Counts) {
	c.Histories += o.Histories
	c.Ops += o.Ops
	c.Holds += o.Holds
	c.Interleavings += o.Interleavings
	c.LockWaits += o.LockWaits
	c.Kills += o.Kills
	c.WorkerRuns += o.WorkerRuns
	c.Deadlocks += o.Deadlocks
	c.Rejections += o.Rejections
}

// commit is one file's change at a point of the commit order: a version
// committed, or (version 0) the file deleted with its repository.
type commit struct {
	seq     int64
	key     key
	version int
}

// failedKey identifies an actionable failed_pois row.
type failedKey struct {
	Repo  string `json:"repository"`
	File  string `json:"file_id"`
	POIID string `json:"poi_id"`
	Index int    `json:"poi_index"`
}

// executor runs one history in db.
type executor struct {
	ctx      context.Context
	db       *database
	h        *History
	relayBin string

	seq     atomic.Int64
	mu      sync.Mutex
	commits []commit
	// outcomes are the publishes whose outcome differed from the model's
	// expectation, and other results relay must not give.
	outcomes []string
	counts   Counts
	versions map[int]*Version
	patches  []Patch
	ignored  map[int]bool
	// kept are failed rows a repository delete kept, with the delete's
	// position: neither expected nor unexpected until the file is
	// published again or a reprocess runs, after which they must not be
	// actionable.
	kept      []keptRow
	reprocess []int64 // positions of reprocess runs
	apps      atomic.Int64
	// stuck describes the database's backends the first time a settle ran
	// past stuckAfter: what a history that then failed was waiting for.
	stuck string
}

type keptRow struct {
	seq int64
	row failedKey
}

func (e *executor) app(kind string) string {
	return fmt.Sprintf("torture-%s-%d", kind, e.apps.Add(1))
}

func (e *executor) outcome(format string, args ...any) {
	e.mu.Lock()
	e.outcomes = append(e.outcomes, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

func (e *executor) recordCommit(seq int64, vs []*Version) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range vs {
		e.commits = append(e.commits, commit{seq: seq, key: v.key(), version: v.ID})
	}
}

// run executes every step, then works the queues until idle.
func (e *executor) run() error {
	e.versions, e.ignored = map[int]*Version{}, map[int]bool{}
	e.counts.Histories, e.counts.Ops = 1, e.h.Ops()
	for i, s := range e.h.Steps {
		for _, v := range s.Versions {
			e.versions[v.ID] = v
		}
		for _, h := range slices.Concat(s.Holds, s.Concurrent) {
			for _, v := range h.Versions {
				e.versions[v.ID] = v
			}
		}
		if err := e.step(s); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, strings.TrimSpace(s.Describe("")[0]), err)
		}
	}
	return e.work(2, false)
}

func (e *executor) step(s *Step) error {
	switch s.Kind {
	case KindPublish:
		committed, rejected, err := e.publish(e.ctx, s, nil)
		if err != nil {
			return err
		}
		e.checkRejection(s, rejected)
		if committed {
			e.recordCommit(e.seq.Add(1), s.Versions)
		}
		return nil
	case KindWork:
		return e.work(s.Workers, false)
	case KindWindow:
		return e.window(s)
	case KindDeleteRepo:
		return e.deleteRepo(s)
	case KindReprocess:
		e.patches = append(e.patches, s.Applies...)
		e.reprocess = append(e.reprocess, e.seq.Add(1))
		r := failed.NewReprocessor(e.db.pool, e.db.insert, nil, e.db.logger)
		if _, err := r.Run(e.ctx, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}}, "torture", nil); err != nil {
			return fmt.Errorf("relay reprocess: %w", err)
		}
		return nil
	case KindIgnore:
		e.ignored[s.Ignored] = true
		ids, err := e.newRows(s.Repo, s.File, "")
		if err != nil || len(ids) == 0 {
			return err
		}
		res, err := failed.NewStore(e.db.pool).Ignore(e.ctx, ids, "torture", "torture")
		if err != nil {
			return fmt.Errorf("relay failed ignore: %w", err)
		}
		if len(res.NotFound)+len(res.Refused) > 0 {
			return fmt.Errorf("relay failed ignore: %d rows not found, %d refused", len(res.NotFound), len(res.Refused))
		}
		return nil
	case KindCorrect:
		// As an operator corrects a row before reprocessing it
		// (docs/failed_pois.md).
		_, err := e.db.pool.Exec(e.ctx, `UPDATE failed_pois SET original_poi_data = $1::jsonb
			WHERE repository = $2 AND file_id = $3 AND poi_id = $4 AND status = 'new'`,
			string(s.Fixed.render(s.File)), s.Repo, s.File, s.POIID)
		if err != nil {
			return fmt.Errorf("error correcting failed rows: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unknown step kind %d", s.Kind)
}

// newRows returns the ids of the new failed_pois rows of a file (of one
// POI id, unless "").
func (e *executor) newRows(repo, file, poiID string) ([]int64, error) {
	rows, err := e.db.pool.Query(e.ctx, `SELECT id FROM failed_pois WHERE repository = $1 AND file_id = $2
		AND ($3 = '' OR poi_id = $3) AND status = 'new' ORDER BY id`, repo, file, poiID)
	if err != nil {
		return nil, fmt.Errorf("error reading failed rows: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("error reading failed rows: %w", err)
	}
	return ids, nil
}

func (e *executor) checkRejection(s *Step, rejected []string) {
	switch {
	case s.Reject && len(rejected) == 0:
		e.outcome("%s was not rejected; the model expected a rejection (a POI id of another file)", strings.TrimSpace(s.Describe("")[0]))
	case !s.Reject && len(rejected) > 0:
		e.outcome("%s was rejected: %s", strings.TrimSpace(s.Describe("")[0]), strings.Join(rejected, "; "))
	case s.Reject:
		e.mu.Lock()
		e.counts.Rejections++
		e.mu.Unlock()
	}
}

func (e *executor) analyses(vs []*Version) []outbox.Analysis {
	as := make([]outbox.Analysis, len(vs))
	for i, v := range vs {
		a, err := outbox.DecodeAnalysis(v.Analysis(nil))
		if err != nil {
			panic(fmt.Sprintf("torture: version %d does not decode: %v", v.ID, err)) // rendered by Analysis
		}
		as[i] = a
	}
	return as
}

// publish runs publish step s to its commit, on conn when given (a
// connection whose backend the caller watches), and returns whether it
// committed and the rejections it met. A deadlock victim is rolled back:
// neither committed nor an error.
func (e *executor) publish(ctx context.Context, s *Step, conn *pgxpool.Conn) (committed bool, rejected []string, err error) {
	switch s.Path {
	case PathCLI:
		return e.publishCLI(ctx, s, e.app("publish"))
	case PathSQLMany:
		return e.inTx(ctx, conn, func(tx pgx.Tx) ([]string, error) {
			arr := make([]json.RawMessage, len(s.Versions))
			for i, v := range s.Versions {
				arr[i] = v.Analysis(nil)
			}
			b, err := json.Marshal(arr)
			if err != nil {
				return nil, err
			}
			_, err = tx.Exec(ctx, `SELECT relay_publish_many($1::jsonb)`, string(b))
			return nil, err
		})
	default:
		return e.inTx(ctx, conn, func(tx pgx.Tx) ([]string, error) { return e.publishIn(ctx, tx, s) })
	}
}

// publishIn runs publish s (a Go or relay_publish path) in tx.
func (e *executor) publishIn(ctx context.Context, tx pgx.Tx, s *Step) ([]string, error) {
	switch s.Path {
	case PathSQL:
		for _, v := range s.Versions {
			if _, err := tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`, string(v.Analysis(nil))); err != nil {
				return nil, err
			}
		}
		return nil, nil
	default:
		_, err := e.db.pub.PublishManyTx(ctx, tx, e.analyses(s.Versions))
		if errors.Is(err, outbox.ErrRejected) {
			return []string{err.Error()}, nil
		}
		return nil, err
	}
}

// inTx runs fn in a transaction on conn (or the pool) and commits unless fn
// met a rejection.
func (e *executor) inTx(ctx context.Context, conn *pgxpool.Conn, fn func(pgx.Tx) ([]string, error)) (bool, []string, error) {
	var tx pgx.Tx
	var err error
	if conn != nil {
		tx, err = conn.Begin(ctx)
	} else {
		tx, err = e.db.pool.Begin(ctx)
	}
	if err != nil {
		return false, nil, fmt.Errorf("error beginning a publish: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rejected, err := fn(tx)
	if err == nil && len(rejected) == 0 {
		err = tx.Commit(ctx)
	}
	if isDeadlock(err) {
		e.mu.Lock()
		e.counts.Deadlocks++
		e.mu.Unlock()
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("error publishing: %w", err)
	}
	return len(rejected) == 0, rejected, nil
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// publishCLI runs `relay publish`'s path with the versions as NDJSON. It
// counts as committed when no line was rejected (a rejected line is the
// whole step's rejection: the model expects rejections only of
// single-file steps).
func (e *executor) publishCLI(ctx context.Context, s *Step, app string) (bool, []string, error) {
	var in strings.Builder
	for _, v := range s.Versions {
		in.Write(v.Analysis(nil))
		in.WriteByte('\n')
	}
	sum, err := e.db.publishCLI(ctx, app, in.String())
	if err != nil {
		return false, nil, err
	}
	var rejected []string
	for _, rl := range sum.Rejected {
		rejected = append(rejected, fmt.Sprintf("line %d (%s): %s", rl.Line, rl.FileID, rl.Error))
	}
	if len(rejected) > 0 && sum.Files > 0 {
		return false, rejected, fmt.Errorf("relay publish published %d files and rejected %d: %s", sum.Files, len(rejected), strings.Join(rejected, "; "))
	}
	return len(rejected) == 0, rejected, nil
}

// work runs n workers until the queues are idle, the first a `relay
// worker` process when subprocess is set.
func (e *executor) work(n int, subprocess bool) error {
	errs := make([]error, n)
	names := &clientNames{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = e.runWorker(e.ctx, i, subprocess && i == 0, nil, names) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runWorker runs worker slot i until idle; started, when given, receives
// the process of a subprocess worker.
func (e *executor) runWorker(ctx context.Context, i int, subprocess bool, started chan<- *process, names *clientNames) error {
	e.mu.Lock()
	e.counts.WorkerRuns++
	e.mu.Unlock()
	if subprocess {
		p, err := startWorkerProcess(e.relayBin, e.db.url, e.db.schema, "torture-process")
		if started != nil {
			started <- p
		}
		if err != nil {
			return err
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			p.kill()
			return ctx.Err()
		}
		if p.err != nil && p.cmd.ProcessState.ExitCode() != -1 { // -1: killed by the window
			return fmt.Errorf("relay worker process: %v: %s", p.err, p.output.String())
		}
		return nil
	}
	return e.db.runWorker(ctx, e.db.workers[i], names)
}

func (e *executor) deleteRepo(s *Step) error {
	seq := e.seq.Add(1)
	if !s.Purge {
		rows, err := e.db.pool.Query(e.ctx, `SELECT repository, file_id, coalesce(poi_id, ''), coalesce(poi_index, -1)
			FROM failed_pois WHERE repository = $1 AND status = 'new'`, s.Repo)
		if err != nil {
			return fmt.Errorf("error reading failed rows: %w", err)
		}
		kept, err := pgx.CollectRows(rows, pgx.RowToStructByPos[failedKey])
		if err != nil {
			return fmt.Errorf("error reading failed rows: %w", err)
		}
		for _, k := range kept {
			e.kept = append(e.kept, keptRow{seq: seq, row: k})
		}
	}
	st := repositories.New(e.db.pool, e.db.insert, e.db.logger)
	if _, err := st.Delete(e.ctx, s.Repo, repositories.Options{PurgeFailed: s.Purge, Actor: "torture"}); err != nil {
		return fmt.Errorf("relay repository delete: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range fileNames {
		e.commits = append(e.commits, commit{seq: seq, key: key{s.Repo, f}})
	}
	return nil
}

// finalVersions are the versions the oracle publishes: each file's last
// committed version, unless its repository was deleted after it.
func (e *executor) finalVersions() []*Version {
	last := map[key]commit{}
	for _, c := range e.commits {
		if l, ok := last[c.key]; !ok || c.seq > l.seq {
			last[c.key] = c
		}
	}
	var out []*Version
	for _, c := range last {
		if c.version != 0 {
			out = append(out, e.versions[c.version])
		}
	}
	slices.SortFunc(out, func(a, b *Version) int { return strings.Compare(a.key().String(), b.key().String()) })
	return out
}

// keptOpen are the kept rows still neither expected nor unexpected: their
// file not published and no reprocess run since the delete.
func (e *executor) keptOpen() map[failedKey]bool {
	out := map[failedKey]bool{}
	for _, k := range e.kept {
		closed := slices.ContainsFunc(e.reprocess, func(s int64) bool { return s > k.seq }) ||
			slices.ContainsFunc(e.commits, func(c commit) bool {
				return c.version != 0 && c.seq > k.seq && c.key == key{k.row.Repo, k.row.File}
			})
		if !closed {
			out[k.row] = true
		}
	}
	return out
}

// deadline bounds every wait of a history: a history that runs this long
// is stuck (a lock never released, a worker that never goes idle).
const deadline = 2 * time.Minute
