package repositories

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker/link"
)

// ActionDelete is the action of the audit event a Delete records in
// dead_letter_events (target failed_pois, the only target of the two the
// table allows that a repository's data has; item_count is the failed_pois
// rows deleted, details every count of Deleted and purge_failed).
const ActionDelete = "repository_delete"

// Options tune a Delete.
type Options struct {
	// PurgeFailed also deletes the repository's failed_pois rows, except
	// those in status reprocessing: their reprocess job has not reported
	// back (as `relay failed purge` never deletes them). Without it every
	// failed_pois row stays.
	PurgeFailed bool
	// Actor is who the audit event names; "" is the operating-system user.
	Actor string
}

// Deleted counts what a Delete deleted, or what Preview says it would.
type Deleted struct {
	// Repository is the repository's name, "" for the default one.
	Repository string `json:"repository"`
	Files      int64  `json:"files"`
	POIs       int64  `json:"pois"`
	// References counts the repository's own poi_references rows, resolved
	// or not.
	References int64 `json:"references"`
	// QueuedAnalyses counts its analyses queued by the SQL publish API
	// (publish_queue), never published.
	QueuedAnalyses int64 `json:"queued_analyses"`
	// LinkQueue counts the jobs whose link_queue rows (one per lane) are
	// not yet linked.
	LinkQueue        int64 `json:"link_queue"`
	RejectedAnalyses int64 `json:"rejected_analyses"`
	// FailedPOIs counts its failed_pois rows deleted (Options.PurgeFailed);
	// FailedPOIsKept those left.
	FailedPOIs     int64 `json:"failed_pois"`
	FailedPOIsKept int64 `json:"failed_pois_kept"`
	// ReferencesRequeued counts the other repositories' supplied references
	// by a symbol that one of its POIs had: the linker resolves each again
	// against the repositories left. ReferencesCleared counts those of them
	// that resolved to one of its POIs: they have no target until then.
	ReferencesRequeued int64 `json:"references_requeued"`
	ReferencesCleared  int64 `json:"references_cleared"`
	// EventID is the audit event in dead_letter_events (Delete only).
	EventID int64 `json:"event_id,omitempty"`
}

// Empty reports whether there is nothing to delete: the repository has no
// rows a Delete with the same options would remove (failed_pois rows kept
// do not count).
func (d *Deleted) Empty() bool {
	return d.Files+d.POIs+d.References+d.QueuedAnalyses+d.LinkQueue+d.RejectedAnalyses+d.FailedPOIs == 0
}

// previewSQL counts what a Delete of $1 would delete now; $2 is
// resolver.SymbolPrefix. The references re-queued are the other
// repositories' references by the symbols of its POIs and by the symbols
// its queued link_queue rows changed, as Delete queues them: one probe of
// poi_references_symbol_key_idx per symbol (the LATERAL, kept apart by
// OFFSET 0).
const previewSQL = previewCountsSQL + `,
	       (SELECT count(*) FROM (` + previewSymbolsSQL + `) s
	        CROSS JOIN LATERAL (SELECT 1 FROM poi_references r
	                            WHERE r.key = s.k AND r.key LIKE 'sym:%' AND r.repository <> $1 OFFSET 0) r)`

// previewDistributedSQL is previewSQL on distributed tables (Citus), which
// cannot push a LATERAL from one repository's symbols into every shard of
// poi_references ("cannot push down this subquery"): the symbols are read
// first, from the repository's shard, and the count of the references by
// them runs on every shard with them.
const previewDistributedSQL = previewCountsSQL + `,
	       (SELECT count(*) FROM poi_references r
	        WHERE r.key IN (` + previewSymbolsSQL + `) AND r.key LIKE 'sym:%' AND r.repository <> $1)`

// previewSymbolsSQL is the keys by which Delete re-queues the other
// repositories' references: "sym:" and each symbol of $1's POIs, and the
// symbols its queued link_queue rows changed.
const previewSymbolsSQL = `
	            SELECT $2 || symbol AS k FROM pois WHERE repository = $1 AND symbol IS NOT NULL
	            UNION SELECT k FROM link_queue, unnest(changed) AS k WHERE repository = $1 AND starts_with(k, $2)`

// previewCountsSQL is previewSQL's counts but the last.
const previewCountsSQL = `
	SELECT (SELECT count(*) FROM files WHERE repository = $1),
	       (SELECT count(*) FROM pois WHERE repository = $1),
	       (SELECT count(*) FROM poi_references WHERE repository = $1),
	       (SELECT count(*) FROM publish_queue WHERE repository = $1),
	       (SELECT count(DISTINCT job_id) FROM link_queue WHERE repository = $1),
	       (SELECT count(*) FROM rejected_analyses WHERE repository = $1),
	       (SELECT count(*) FROM failed_pois WHERE repository = $1 AND status <> 'reprocessing'),
	       (SELECT count(*) FROM failed_pois WHERE repository = $1 AND status = 'reprocessing'),
	       (SELECT count(*) FROM poi_references
	        WHERE target_repository = $1 AND target_poi_id IS NOT NULL AND repository <> $1)`

// Preview counts what Delete(ctx, name, opts) would delete now.
func (s *Store) Preview(ctx context.Context, name string, opts Options) (*Deleted, error) {
	d := &Deleted{Repository: name}
	var failed, reprocessing int64
	dist, err := s.layout.Distributed(ctx)
	if err != nil {
		return nil, fmt.Errorf("error counting the rows of repository %q: %w", name, err)
	}
	sql := previewSQL
	if dist {
		sql = previewDistributedSQL
	}
	err = s.pool.QueryRow(ctx, sql, name, resolver.SymbolPrefix).Scan(&d.Files, &d.POIs, &d.References,
		&d.QueuedAnalyses, &d.LinkQueue, &d.RejectedAnalyses, &failed, &reprocessing, &d.ReferencesCleared, &d.ReferencesRequeued)
	if err != nil {
		return nil, fmt.Errorf("error counting the rows of repository %q: %w", name, err)
	}
	d.FailedPOIsKept = failed + reprocessing
	if opts.PurgeFailed {
		d.FailedPOIs, d.FailedPOIsKept = failed, reprocessing
	}
	return d, nil
}

// deleteAttempts is how many times Delete runs its transaction when it
// conflicts with a concurrent writer (a deadlock or a serialization
// failure): the transaction rolled back, so running it again is safe.
const deleteAttempts = 3

// Delete deletes repository name's data in one transaction and returns
// what it deleted:
//
//   - its analyses queued by the SQL publish API (publish_queue);
//   - its files, POIs and references (poi_references whose source is in
//     it), and the target of the other repositories' references that
//     resolved to one of its POIs (supplied references by symbol, the only
//     ones that cross repositories);
//   - its link_queue rows;
//   - its rejected_analyses rows;
//   - its failed_pois rows only with opts.PurgeFailed (and not those in
//     reprocessing).
//
// So that no other repository's reference stays unresolved, or ambiguous
// for a POI that is gone, it queues one link_queue row in the deleted
// repository (file_version NULL, no references of its own) whose changed
// names are "sym:<symbol>" for every symbol its deleted POIs had, and for
// every symbol its deleted link_queue rows had not yet re-resolved: the
// linker resolves every repository's references by those symbols again.
// The row's job_id is minus the transaction id (River job ids are
// positive) and its publish_xid the transaction id, so every reference a
// link round resolved without seeing the delete is resolved again. The
// same transaction inserts a link job to read it. One audit event
// (ActionDelete) records the counts and opts.Actor.
//
// The repository's files are locked first, in file_id order as publishes
// lock them, so the delete waits for publishes, resolve_file batches and
// link rounds that hold them and then deletes exactly the POIs whose
// symbols it queues. Analyses published to the repository after the
// delete began are not deleted: stop publishing to it first. Each table is
// deleted from in one statement; a large repository may need a longer
// statement_timeout.
func (s *Store) Delete(ctx context.Context, name string, opts Options) (*Deleted, error) {
	if s.jobs == nil {
		return nil, errors.New("error deleting repository: the store has no River client to insert a link job with")
	}
	for attempt := 1; ; attempt++ {
		d, err := s.deleteTx(ctx, name, opts)
		if err == nil {
			return d, nil
		}
		if attempt < deleteAttempts && isConflict(err) && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "repository delete conflicted with a concurrent writer; running it again",
				slog.String("repository", name), slog.Int("attempt", attempt), slog.String("error", err.Error()))
			continue
		}
		return nil, fmt.Errorf("error deleting repository %q: %w", name, err)
	}
}

// isConflict reports whether err is a transaction's conflict with a
// concurrent one (deadlock, serialization failure): running it again
// resolves it.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// deleteSQL deletes repository $1's POIs, references and files in one
// statement (one snapshot: the symbols queued are those of exactly the
// POIs deleted, and each file's cascade finds its POIs gone) and inserts
// the delete's link_queue row with their symbols, one in every lane ($2 is
// resolver.SymbolPrefix, $3 link.Lanes, $4 the transaction's id). It
// returns the counts and the row's job_id. Every table it reads and writes
// is read and written by repository: on Citus the statement runs on the
// node that holds the repository. The transaction's id is a parameter,
// read on the coordinator (xidSQL): a node's pg_current_xact_id() is the
// id of its own part of the transaction, which link rounds on the
// coordinator's snapshots do not know.
const deleteSQL = `
	WITH p AS (DELETE FROM pois WHERE repository = $1 RETURNING symbol),
	     r AS (DELETE FROM poi_references WHERE repository = $1 RETURNING 1),
	     f AS (DELETE FROM files WHERE repository = $1 RETURNING 1),
	     q AS (INSERT INTO link_queue (job_id, repository, file_id, file_version, replace, published_at, changed,
	                                   ref_sources, ref_names, ref_types, publish_xid, lane)
	           SELECT -$4::bigint, $1, '', NULL, false, now(),
	                  ARRAY(SELECT DISTINCT $2 || symbol FROM p WHERE symbol IS NOT NULL), '{}', '{}', '{}', $4::bigint, l
	           FROM generate_series(0, $3 - 1) AS l
	           RETURNING job_id)
	SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM p), (SELECT count(*) FROM r), (SELECT min(job_id) FROM q)`

// xidSQL is the delete's transaction id (on Citus, the coordinator's).
const xidSQL = `SELECT pg_current_xact_id()::text::bigint`

// clearTargetsSQL clears the target of the other repositories' references
// that resolved to one of repository $1's POIs (its own references are
// deleted): supplied references by symbol, the only ones that cross
// repositories. They have no target until the linker resolves them again
// by the symbols the delete queues. It spans repositories (on Citus,
// every shard of poi_references), looked up on
// poi_references_target_poi_id_idx.
const clearTargetsSQL = `
	UPDATE poi_references SET target_poi_id = NULL, target_file_id = NULL
	WHERE target_repository = $1 AND target_poi_id IS NOT NULL`

// mergeQueuedSQL deletes repository $1's other link_queue rows ($2 is the
// delete's own) and adds the symbols they changed ($3 is
// resolver.SymbolPrefix) to the delete's rows: their references are gone,
// but other repositories' references by those symbols may not have been
// resolved again yet. It returns the rows deleted and the symbols queued.
const mergeQueuedSQL = `
	WITH gone AS (DELETE FROM link_queue WHERE repository = $1 AND job_id <> $2 RETURNING job_id, changed)
	UPDATE link_queue l SET changed = ARRAY(
		SELECT k FROM unnest(l.changed) AS k
		UNION SELECT k FROM gone, unnest(gone.changed) AS k WHERE starts_with(k, $3))
	WHERE l.repository = $1 AND l.job_id = $2
	RETURNING (SELECT count(DISTINCT job_id) FROM gone), cardinality(l.changed)`

// requeuedSQL counts the other repositories' references by the symbols $2
// (the delete's link_queue row's changed names), through
// poi_references_symbol_key_idx: every shard's on Citus. The names are
// read first (changedSQL), by repository: Citus cannot join one
// repository's row to every shard of poi_references.
const requeuedSQL = `
	SELECT count(*) FROM poi_references
	WHERE key = ANY($2::text[]) AND key LIKE 'sym:%' AND repository <> $1`

// changedSQL reads the names the delete's link_queue row ($2 of
// repository $1) changed.
const changedSQL = `SELECT changed FROM link_queue WHERE repository = $1 AND job_id = $2 AND lane = 0`

func (s *Store) deleteTx(ctx context.Context, name string, opts Options) (*Deleted, error) {
	start := time.Now()
	log := s.logger.With(slog.String("repository", name))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("error beginning the delete: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	d := &Deleted{Repository: name}

	// The repository's lock first (migration 27): every publish of it holds
	// the lock shared until it commits, so each one committed before the
	// delete is deleted, and each one after it waits for the delete to
	// commit (TestDelete_APublishCommitsBeforeTheDeleteOrAfterIt). Then
	// queued analyses: publishes lock them before the files' rows.
	if _, err := tx.Exec(ctx, `SELECT relay_lock_repository($1)`, name); err != nil {
		return nil, fmt.Errorf("error taking the repository's lock: %w", err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM publish_queue WHERE repository = $1`, name)
	if err != nil {
		return nil, fmt.Errorf("error deleting queued analyses: %w", err)
	}
	d.QueuedAnalyses = tag.RowsAffected()
	var locked int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM files WHERE repository = $1 ORDER BY file_id FOR UPDATE) f`,
		name).Scan(&locked); err != nil {
		return nil, fmt.Errorf("error locking the files: %w", err)
	}
	log.InfoContext(ctx, "deleting repository: files locked", slog.Int64("files", locked),
		slog.Int64("queued_analyses", d.QueuedAnalyses), slog.Duration("elapsed", time.Since(start)))

	var xid, jobID int64
	if err := tx.QueryRow(ctx, xidSQL).Scan(&xid); err != nil {
		return nil, fmt.Errorf("error reading the transaction's id: %w", err)
	}
	if err := tx.QueryRow(ctx, deleteSQL, name, resolver.SymbolPrefix, link.Lanes, xid).Scan(&d.Files, &d.POIs, &d.References,
		&jobID); err != nil {
		return nil, fmt.Errorf("error deleting files, POIs and references: %w", err)
	}
	if tag, err = tx.Exec(ctx, clearTargetsSQL, name); err != nil {
		return nil, fmt.Errorf("error clearing the targets of references into the repository: %w", err)
	}
	d.ReferencesCleared = tag.RowsAffected()
	log.InfoContext(ctx, "deleting repository: files, POIs and references deleted", slog.Int64("files", d.Files),
		slog.Int64("pois", d.POIs), slog.Int64("references", d.References),
		slog.Int64("references_cleared", d.ReferencesCleared), slog.Duration("elapsed", time.Since(start)))

	var symbols int64
	if err := tx.QueryRow(ctx, mergeQueuedSQL, name, jobID, resolver.SymbolPrefix).Scan(&d.LinkQueue, &symbols); err != nil {
		return nil, fmt.Errorf("error deleting link_queue rows: %w", err)
	}
	if symbols == 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM link_queue WHERE repository = $1 AND job_id = $2`, name, jobID); err != nil {
			return nil, fmt.Errorf("error deleting link_queue rows: %w", err)
		}
	} else {
		var changed []string
		if err := tx.QueryRow(ctx, changedSQL, name, jobID).Scan(&changed); err != nil {
			return nil, fmt.Errorf("error counting the references to resolve again: %w", err)
		}
		if err := tx.QueryRow(ctx, requeuedSQL, name, changed).Scan(&d.ReferencesRequeued); err != nil {
			return nil, fmt.Errorf("error counting the references to resolve again: %w", err)
		}
		// Inserted unconditionally (link.EnsureTx needs a worker's
		// context): a link job inserted in this transaction reads its
		// lane's row once it commits; a link job already waiting makes
		// this one redundant, and it completes at once finding nothing
		// queued.
		if _, err := s.jobs.InsertManyTx(ctx, tx, link.EveryLane()); err != nil {
			return nil, fmt.Errorf("error inserting link jobs: %w", err)
		}
	}
	log.InfoContext(ctx, "deleting repository: link queue updated", slog.Int64("link_queue", d.LinkQueue),
		slog.Int64("symbols", symbols), slog.Int64("references_requeued", d.ReferencesRequeued),
		slog.Duration("elapsed", time.Since(start)))

	if tag, err = tx.Exec(ctx, `DELETE FROM rejected_analyses WHERE repository = $1`, name); err != nil {
		return nil, fmt.Errorf("error deleting rejected analyses: %w", err)
	}
	d.RejectedAnalyses = tag.RowsAffected()
	if opts.PurgeFailed {
		if tag, err = tx.Exec(ctx, `DELETE FROM failed_pois WHERE repository = $1 AND status <> 'reprocessing'`, name); err != nil {
			return nil, fmt.Errorf("error deleting failed_pois rows: %w", err)
		}
		d.FailedPOIs = tag.RowsAffected()
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM failed_pois WHERE repository = $1`, name).Scan(&d.FailedPOIsKept); err != nil {
		return nil, fmt.Errorf("error counting failed_pois rows: %w", err)
	}

	if d.EventID, err = insertEvent(ctx, tx, opts, d); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("error committing the delete: %w", err)
	}
	log.InfoContext(ctx, "repository deleted", slog.Int64("rejected_analyses", d.RejectedAnalyses),
		slog.Int64("failed_pois", d.FailedPOIs), slog.Int64("failed_pois_kept", d.FailedPOIsKept),
		slog.Int64("event_id", d.EventID), slog.Duration("elapsed", time.Since(start)))
	return d, nil
}

// insertEvent records the delete's audit event and returns its id.
func insertEvent(ctx context.Context, tx pgx.Tx, opts Options, d *Deleted) (int64, error) {
	actor := strings.TrimSpace(opts.Actor)
	if actor == "" {
		actor = deadletter.DefaultActor()
	}
	return failed.InsertEventTx(ctx, tx, actor, ActionDelete, d.FailedPOIs, struct {
		*Deleted
		PurgeFailed bool `json:"purge_failed"`
	}{d, opts.PurgeFailed})
}
