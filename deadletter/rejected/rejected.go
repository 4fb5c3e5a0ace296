// Package rejected stores rejected_analyses: the analyses queued through
// the SQL publish API (relay_publish, migration 22) that the publisher
// rejected when relay's workers took them from the queue, for what only
// the publish can find (a POI id another file owns, a POI above
// max_poi_bytes). Each row keeps the analysis whole, the reason and the
// POI at fault; Retry publishes it again after a fix, refusing one that a
// later publish of its file superseded.
package rejected

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/outbox"
)

// DB is what the store runs its statements on; *pgxpool.Pool is one.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Rejection is one rejected_analyses row.
type Rejection struct {
	ID         int64  `json:"id"`
	Repository string `json:"repository"`
	FileID     string `json:"file_id"`
	// POIID names the POI at fault, when one is.
	POIID  string `json:"poi_id,omitempty"`
	Reason string `json:"reason"`
	// FileVersion is the file's version when the analysis was last
	// rejected (0: never published).
	FileVersion int64     `json:"file_version"`
	QueuedAt    time.Time `json:"queued_at"`
	RejectedAt  time.Time `json:"rejected_at"`
	// Attempts counts the publishes that rejected it.
	Attempts int `json:"attempts"`
	// Analysis is the analysis as queued.
	Analysis json.RawMessage `json:"analysis"`
}

// Store reads and changes rejected_analyses.
type Store struct{ db DB }

// New returns a Store on db.
func New(db DB) *Store { return &Store{db: db} }

const columns = `id, repository, file_id, coalesce(poi_id, ''), reason, file_version, queued_at, rejected_at, attempts, analysis::text`

func scan(row pgx.Row) (*Rejection, error) {
	var a Rejection
	var raw string
	if err := row.Scan(&a.ID, &a.Repository, &a.FileID, &a.POIID, &a.Reason, &a.FileVersion, &a.QueuedAt, &a.RejectedAt, &a.Attempts, &raw); err != nil {
		return nil, err
	}
	a.Analysis = json.RawMessage(raw)
	return &a, nil
}

// List returns up to limit rows, most recently rejected first, of one
// file ("" for all), and how many there are in all.
func (s *Store) List(ctx context.Context, fileID string, limit int) ([]*Rejection, int, error) {
	rows, err := s.db.Query(ctx, `SELECT `+columns+` FROM rejected_analyses
		WHERE $1 = '' OR file_id = $1 ORDER BY rejected_at DESC, id DESC LIMIT $2`, fileID, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("error listing rejected analyses: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Rejection, error) { return scan(row) })
	if err != nil {
		return nil, 0, fmt.Errorf("error listing rejected analyses: %w", err)
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM rejected_analyses WHERE $1 = '' OR file_id = $1`, fileID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("error counting rejected analyses: %w", err)
	}
	return list, total, nil
}

// IDs returns the ids of every row, oldest first.
func (s *Store) IDs(ctx context.Context) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM rejected_analyses ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("error listing rejected analyses: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("error listing rejected analyses: %w", err)
	}
	return ids, nil
}

// Publisher publishes an analysis in a transaction; *outbox.Publisher is
// one.
type Publisher interface {
	PublishTx(ctx context.Context, tx pgx.Tx, a outbox.Analysis) (*outbox.Result, error)
}

// Outcome is what Retry did with one row.
type Outcome struct {
	ID     int64  `json:"id"`
	FileID string `json:"file_id,omitempty"`
	// Result is published (the row is deleted), rejected (kept, with the
	// new reason), superseded (kept: a later publish of the file exists;
	// retry with force to publish it over that one) or missing (no such
	// row).
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
	// JobIDs are the resolve_file jobs a publish enqueued.
	JobIDs []int64 `json:"job_ids,omitempty"`
}

// Outcome results.
const (
	Published  = "published"
	Rejected   = "rejected"
	Superseded = "superseded"
	Missing    = "missing"
)

// Retry publishes each row's analysis again with pub, each in a
// transaction of its own: a published row is deleted in that transaction,
// a rejected one keeps its analysis with the new reason. Unless force, a
// row whose file was published after it was rejected, or has a newer
// analysis queued, is left alone (superseded): publishing it would replace
// the file's newer POIs with older ones.
func (s *Store) Retry(ctx context.Context, pub Publisher, ids []int64, force bool) ([]Outcome, error) {
	out := make([]Outcome, 0, len(ids))
	for _, id := range ids {
		o, err := s.retry(ctx, pub, id, force)
		if err != nil {
			return out, err
		}
		out = append(out, o)
	}
	return out, nil
}

func (s *Store) retry(ctx context.Context, pub Publisher, id int64, force bool) (Outcome, error) {
	o := Outcome{ID: id}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		row, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM rejected_analyses WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			o.Result = Missing
			return nil
		}
		if err != nil {
			return fmt.Errorf("error reading rejected analysis %d: %w", id, err)
		}
		o.FileID = row.FileID
		var version int64
		var queued bool
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT version FROM files WHERE repository = $2 AND file_id = $1), 0),
			EXISTS (SELECT 1 FROM publish_queue WHERE repository = $2 AND file_id = $1)`, row.FileID, row.Repository).Scan(&version, &queued); err != nil {
			return fmt.Errorf("error reading file %q: %w", row.FileID, err)
		}
		if !force && (version > row.FileVersion || queued) {
			o.Result = Superseded
			o.Reason = fmt.Sprintf("file %q was published again (version %d, rejected at version %d) or has a newer analysis queued; "+
				"retry with --force to publish this older analysis over it, or purge it", row.FileID, version, row.FileVersion)
			return nil
		}
		a, err := outbox.DecodeAnalysis(row.Analysis)
		if err == nil {
			var res *outbox.Result
			if res, err = pub.PublishTx(ctx, tx, a); err == nil {
				o.Result, o.JobIDs = Published, res.JobIDs
				if _, err := tx.Exec(ctx, `DELETE FROM rejected_analyses WHERE id = $1`, id); err != nil {
					return fmt.Errorf("error deleting rejected analysis %d: %w", id, err)
				}
				return nil
			}
		}
		if !errors.Is(err, outbox.ErrRejected) {
			return fmt.Errorf("error publishing rejected analysis %d (file %q): %w", id, row.FileID, err)
		}
		o.Result, o.Reason = Rejected, err.Error()
		var poiID *string
		var rej *outbox.RejectError
		if errors.As(err, &rej) && rej.POIID != "" {
			poiID = &rej.POIID
		}
		if _, err := tx.Exec(ctx, `UPDATE rejected_analyses SET reason = $2, poi_id = $3, file_version = $4,
			rejected_at = now(), attempts = attempts + 1 WHERE id = $1`, id, o.Reason, poiID, version); err != nil {
			return fmt.Errorf("error updating rejected analysis %d: %w", id, err)
		}
		return nil
	})
	return o, err
}

// Count returns the number of rows among ids (all rows when ids is nil).
func (s *Store) Count(ctx context.Context, ids []int64) (int64, error) {
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM rejected_analyses WHERE $1::bigint[] IS NULL OR id = ANY($1)`, ids).Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting rejected analyses: %w", err)
	}
	return n, nil
}

// Purge deletes the rows among ids (every row when ids is nil) and returns
// how many it deleted.
func (s *Store) Purge(ctx context.Context, ids []int64) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM rejected_analyses WHERE $1::bigint[] IS NULL OR id = ANY($1)`, ids)
	if err != nil {
		return 0, fmt.Errorf("error purging rejected analyses: %w", err)
	}
	return tag.RowsAffected(), nil
}
