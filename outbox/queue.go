package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
)

// DrainConfig tunes a Drainer. Zero values take the defaults.
type DrainConfig struct {
	// Interval is how often an idle Drainer looks for queued analyses: a
	// queued analysis waits at most this long for its publish.
	Interval time.Duration
	// Batch is how many analyses one drain transaction publishes.
	Batch int
}

// Drainer publishes the analyses that the SQL API (relay_publish and
// relay_publish_many, migration 22) queued in publish_queue. Each drain
// takes up to Batch committed rows, oldest first, FOR UPDATE SKIP LOCKED
// (so any number of drainers share the queue, each row published by one),
// publishes them with the Publisher and deletes them, in one transaction:
// a drainer that dies publishes nothing and the rows stay queued. An
// analysis the Publisher rejects moves to rejected_analyses with the reason
// in the same transaction, so nothing queued is lost or published twice.
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
	return &Drainer{db: db, pub: pub, cfg: cfg, logger: logger}
}

// DrainResult says what one drain did.
type DrainResult struct {
	// Published is the number of analyses published, Rejected the number
	// moved to rejected_analyses.
	Published, Rejected int
}

// Run drains until ctx ends: again at once after a full batch, otherwise
// every Interval. A failed drain (the database unreachable, a deadlock) is
// logged and tried again after Interval; its rows stay queued. Run returns
// nil when ctx ends.
func (d *Drainer) Run(ctx context.Context) error {
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
		res, err := d.Drain(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			d.logger.ErrorContext(ctx, "publishing queued analyses failed; they stay queued", slog.String("error", err.Error()))
		case res.Published+res.Rejected == d.cfg.Batch:
			wait.Reset(0)
			continue
		}
		wait.Reset(d.cfg.Interval)
	}
}

// queued is one publish_queue row.
type queued struct {
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
		SELECT file_id, analysis::text, queued_at FROM publish_queue
		ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, d.cfg.Batch)
	if err != nil {
		return res, fmt.Errorf("error reading the publish queue: %w", err)
	}
	qs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queued, error) {
		var q queued
		err := row.Scan(&q.fileID, &q.analysis, &q.queuedAt)
		return q, err
	})
	if err != nil {
		return res, fmt.Errorf("error reading the publish queue: %w", err)
	}
	if len(qs) == 0 {
		return res, nil
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
	// All at once; if one is rejected, one by one (PublishManyTx leaves tx
	// usable), so that one bad analysis holds up no other.
	_, err = d.pub.PublishManyTx(ctx, tx, as)
	switch {
	case err == nil:
		res.Published = len(as)
	case errors.Is(err, ErrRejected):
		for i, a := range as {
			if _, err := d.pub.PublishTx(ctx, tx, a); err != nil {
				if !errors.Is(err, ErrRejected) {
					return DrainResult{}, err
				}
				rejected = append(rejected, rejectionOf(asQueued[i], err))
				continue
			}
			res.Published++
		}
	default:
		return DrainResult{}, err
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
	files, analyses, reasons, pois, queuedAt := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs)),
		make([]*string, len(rs)), make([]time.Time, len(rs))
	for i, r := range rs {
		files[i], analyses[i], reasons[i], queuedAt[i] = r.fileID, string(r.analysis), r.reason, r.queuedAt
		if r.poiID != "" {
			pois[i] = &r.poiID
		}
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO rejected_analyses (file_id, analysis, reason, poi_id, file_version, queued_at)
		SELECT u.file_id, u.analysis::jsonb, u.reason, u.poi_id, coalesce(f.version, 0), u.queued_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS u(file_id, analysis, reason, poi_id, queued_at)
		LEFT JOIN files f ON f.file_id = u.file_id`, files, analyses, reasons, pois, queuedAt); err != nil {
		return fmt.Errorf("error recording rejected analyses: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM publish_queue WHERE file_id = ANY($1)`, files); err != nil {
		return fmt.Errorf("error deleting rejected analyses from the publish queue: %w", err)
	}
	return nil
}
