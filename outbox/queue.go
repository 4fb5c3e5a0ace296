package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Beginner starts transactions; *pgxpool.Pool is one.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Defaults for DrainConfig.
const (
	DrainIntervalDefault = 200 * time.Millisecond
	DrainBatchDefault    = 100
	DrainLoopsDefault    = 4
)

// DrainConfig tunes a Drainer. Zero values take the defaults.
type DrainConfig struct {
	// Interval is how often an idle Drainer looks for queued analyses: a
	// queued analysis waits at most this long for its publish.
	Interval time.Duration
	// Batch is how many analyses one drain transaction publishes.
	Batch int
	// Loops is how many drains Run runs at once, at most, while a backlog
	// lasts (each on a connection of its own); an idle Drainer runs one.
	Loops int
}

// Drainer publishes the analyses that the SQL API (relay_publish and
// relay_publish_many, migration 22) queued in publish_queue. Each drain
// takes up to Batch committed rows, oldest first, FOR UPDATE SKIP LOCKED
// (so any number of drainers share the queue, each row published by one),
// publishes them with the Publisher and deletes them, in one transaction:
// a drainer that dies publishes nothing and the rows stay queued. An
// analysis the Publisher rejects moves to rejected_analyses with the reason
// in the same transaction, so nothing queued is lost or published twice.
//
// Drains running at once (Run's loops, other processes' drainers) take
// different rows, and so different files: publish_queue holds one row per
// file. A drain publishes a file only under the file's publish lock
// (migration 27), which it tries to take and otherwise leaves the file for a
// later drain: every publish of the file, Go or SQL, holds that lock until it
// commits, so a drain never applies a queued analysis over a publish that
// committed after it (TestPublish_LastCommittedWinsBetweenGoAndSQL), and a
// drain never waits for a publish that waits for the drain's rows. Files
// drained together are published together, so a POI id may move between
// them (TestPublish_APOIMovesBetweenFilesPublishedTogether); the files'
// rows are locked in file_id order, as every publish locks them, so
// concurrent drains do not deadlock on them.
type Drainer struct {
	db     Beginner
	pub    *Publisher
	cfg    DrainConfig
	logger *slog.Logger
}

// NewDrainer returns a Drainer that publishes through pub.
func NewDrainer(db Beginner, pub *Publisher, cfg DrainConfig, logger *slog.Logger) *Drainer {
	cfg.Interval = cmp.Or(cfg.Interval, DrainIntervalDefault)
	cfg.Batch = cmp.Or(cfg.Batch, DrainBatchDefault)
	cfg.Loops = cmp.Or(cfg.Loops, DrainLoopsDefault)
	return &Drainer{db: db, pub: pub, cfg: cfg, logger: logger}
}

// DrainResult says what one drain did.
type DrainResult struct {
	// Published is the number of analyses published, Rejected the number
	// moved to rejected_analyses.
	Published, Rejected int
}

// Run drains until ctx ends. One loop drains every Interval, and again at
// once after a full batch; a full batch also wakes another of up to Loops
// loops, which drains beside it until it takes a batch that is not full:
// a backlog is drained Loops batches at a time, an idle queue costs one
// drain every Interval. A failed drain (the database unreachable, a
// deadlock) is logged and its rows stay queued: the first loop tries again
// after Interval, another goes idle. Run returns nil when ctx ends, once
// every loop's drain in progress has committed or rolled back.
func (d *Drainer) Run(ctx context.Context) error {
	// Buffered, so that a wake-up sent while every other loop is busy is
	// taken by the next to go idle rather than lost.
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for range d.cfg.Loops - 1 {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-wake:
				}
				for d.step(ctx, wake) {
				}
			}
		})
	}
	defer wg.Wait()
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
		if d.step(ctx, wake) {
			wait.Reset(0)
		} else {
			wait.Reset(d.cfg.Interval)
		}
	}
}

// step runs one drain of Run's loops and reports whether it took a full
// batch, in which case it wakes another loop if one is idle.
func (d *Drainer) step(ctx context.Context, wake chan<- struct{}) (full bool) {
	res, err := d.Drain(ctx)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		d.logger.ErrorContext(ctx, "publishing queued analyses failed; they stay queued", slog.String("error", err.Error()))
		return false
	case res.Published+res.Rejected < d.cfg.Batch:
		return false
	}
	select {
	case wake <- struct{}{}:
	default:
	}
	return true
}

// queued is one publish_queue row.
type queued struct {
	repo     string
	fileID   string
	analysis []byte
	queuedAt time.Time
}

// Drain publishes, in one transaction, up to Batch queued analyses.
func (d *Drainer) Drain(ctx context.Context) (DrainResult, error) {
	var res DrainResult
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("error draining the publish queue: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	rows, err := tx.Query(ctx, `
		SELECT repository, file_id, analysis::text, queued_at FROM publish_queue
		ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, d.cfg.Batch)
	if err != nil {
		return res, fmt.Errorf("error reading the publish queue: %w", err)
	}
	qs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queued, error) {
		var q queued
		err := row.Scan(&q.repo, &q.fileID, &q.analysis, &q.queuedAt)
		return q, err
	})
	if err != nil {
		return res, fmt.Errorf("error reading the publish queue: %w", err)
	}
	if len(qs) == 0 {
		return res, nil
	}
	if qs, err = lockQueued(ctx, tx, qs); err != nil {
		return res, err
	}

	var as []Analysis
	var asQueued []queued
	var rejected []rejection
	for _, q := range qs {
		a, err := DecodeAnalysis(q.analysis)
		if err != nil {
			rejected = append(rejected, rejectionOf(q, err))
			continue
		}
		as, asQueued = append(as, a), append(asQueued, q)
	}
	// All at once; if one is rejected, all at once again without it
	// (PublishManyTx leaves tx usable), so that one bad analysis holds up no
	// other and files published together still are (a POI id moving
	// between them).
	for len(as) > 0 {
		_, err = d.pub.PublishManyTx(ctx, tx, as)
		var rej *RejectError
		if err == nil {
			res.Published = len(as)
			break
		}
		if !errors.As(err, &rej) {
			return DrainResult{}, err
		}
		i := slices.IndexFunc(as, func(a Analysis) bool { return a.Repository == rej.Repository && a.FileID == rej.FileID })
		if i < 0 {
			return DrainResult{}, fmt.Errorf("error draining the publish queue: a rejection names no analysis of the drain: %w", err)
		}
		rejected = append(rejected, rejectionOf(asQueued[i], err))
		as, asQueued = slices.Delete(as, i, i+1), slices.Delete(asQueued, i, i+1)
	}
	if err := recordRejections(ctx, tx, rejected); err != nil {
		return DrainResult{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return DrainResult{}, fmt.Errorf("error committing a drain of the publish queue: %w", err)
	}
	res.Rejected = len(rejected)
	for _, r := range rejected {
		d.logger.WarnContext(ctx, "queued analysis rejected; kept in rejected_analyses for `relay outbox retry`",
			slog.String("file_id", r.fileID), slog.String("poi_id", r.poiID), slog.String("reason", r.reason))
	}
	if res.Published > 0 {
		d.logger.DebugContext(ctx, "queued analyses published", slog.Int("published", res.Published), slog.Int("rejected", res.Rejected))
	}
	return res, nil
}

// lockQueued takes the publish locks of the queued files it can take at
// once (relay_try_lock_files) and returns their rows: a file whose lock
// another transaction holds is being published, or queued again by a SQL
// publish waiting for the row this drain holds; it stays queued for a later
// drain, so the two cannot deadlock.
func lockQueued(ctx context.Context, tx pgx.Tx, qs []queued) ([]queued, error) {
	repos, files := make([]string, len(qs)), make([]string, len(qs))
	for i, q := range qs {
		repos[i], files[i] = q.repo, q.fileID
	}
	rows, err := tx.Query(ctx, `SELECT relay_try_lock_files($1::text[], $2::text[])`, repos, files)
	if err != nil {
		return nil, fmt.Errorf("error taking the publish locks of %d queued files: %w", len(qs), err)
	}
	busy, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("error taking the publish locks of %d queued files: %w", len(qs), err)
	}
	out := qs[:0:0]
	for i, q := range qs {
		if !slices.Contains(busy, int32(i+1)) {
			out = append(out, q)
		}
	}
	return out, nil
}

// rejection is a queued analysis the publisher rejected.
type rejection struct {
	queued
	poiID, reason string
}

func rejectionOf(q queued, err error) rejection {
	r := rejection{queued: q, reason: err.Error()}
	var rej *RejectError
	if errors.As(err, &rej) {
		r.poiID = rej.POIID
	}
	return r
}

// recordRejections moves rejected queued analyses to rejected_analyses,
// with the version their file had then.
func recordRejections(ctx context.Context, tx pgx.Tx, rs []rejection) error {
	if len(rs) == 0 {
		return nil
	}
	repos, files, analyses, reasons := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
	pois, queuedAt := make([]*string, len(rs)), make([]time.Time, len(rs))
	for i, r := range rs {
		repos[i], files[i], analyses[i], reasons[i], queuedAt[i] = r.repo, r.fileID, string(r.analysis), r.reason, r.queuedAt
		if r.poiID != "" {
			pois[i] = &r.poiID
		}
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO rejected_analyses (repository, file_id, analysis, reason, poi_id, file_version, queued_at)
		SELECT u.repository, u.file_id, u.analysis::jsonb, u.reason, u.poi_id, coalesce(f.version, 0), u.queued_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])
			AS u(repository, file_id, analysis, reason, poi_id, queued_at)
		LEFT JOIN files f ON f.repository = u.repository AND f.file_id = u.file_id`,
		repos, files, analyses, reasons, pois, queuedAt); err != nil {
		return fmt.Errorf("error recording rejected analyses: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM publish_queue q USING unnest($1::text[], $2::text[]) AS u(repository, file_id)
		WHERE q.repository = u.repository AND q.file_id = u.file_id`, repos, files); err != nil {
		return fmt.Errorf("error deleting rejected analyses from the publish queue: %w", err)
	}
	return nil
}
