package items

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/agent"
)

// itemColumns are the columns scanItem reads, in order.
const itemColumns = `id, job_id, item_id, item_data, first_attempt, last_attempt, failure_count, failure_history,
	error_signature, error_type, exit_code, worktree_artifacts, reprocess_eligible, manual_review_required, status,
	dead_letter_count, dead_lettered_at`

func scanItem(row pgx.Row) (*Item, error) {
	var (
		it        Item
		data      []byte
		history   []byte
		artifacts []byte
		errType   string
		status    string
	)
	if err := row.Scan(&it.ID, &it.JobID, &it.ItemID, &data, &it.FirstAttempt, &it.LastAttempt, &it.FailureCount,
		&history, &it.ErrorSignature, &errType, &it.ExitCode, &artifacts, &it.ReprocessEligible,
		&it.ManualReviewRequired, &status, &it.DeadLetterCount, &it.DeadLetteredAt); err != nil {
		return nil, err
	}
	it.ItemData, it.ErrorType, it.Status = json.RawMessage(data), agent.ErrorType(errType), Status(status)
	if err := json.Unmarshal(history, &it.FailureHistory); err != nil {
		return nil, fmt.Errorf("error decoding failure history of item %q: %w", it.ItemID, err)
	}
	if len(artifacts) > 0 {
		it.WorktreeArtifacts = &WorktreeArtifacts{}
		if err := json.Unmarshal(artifacts, it.WorktreeArtifacts); err != nil {
			return nil, fmt.Errorf("error decoding worktree artifacts of item %q: %w", it.ItemID, err)
		}
	}
	return &it, nil
}

// Filter selects dead_lettered_items rows. The zero value selects every
// item still in the DLQ (status other than reprocessed).
type Filter struct {
	JobID        string
	EligibleOnly bool
	// Since and Until bound last_attempt (Since inclusive, Until
	// exclusive); zero means unbounded.
	Since, Until time.Time
	// IncludeReprocessed also selects rows already reprocessed.
	IncludeReprocessed bool
	// Signature matches error_signature exactly.
	Signature string
	// ErrorType matches error_type.
	ErrorType agent.ErrorType
	// ItemID matches item_id.
	ItemID string
}

// where renders f as a WHERE clause with numbered parameters.
func (f Filter) where() (string, []any) {
	conds := []string{"true"}
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.JobID != "" {
		add("job_id = ?", f.JobID)
	}
	if f.EligibleOnly {
		conds = append(conds, "reprocess_eligible")
	}
	if !f.Since.IsZero() {
		add("last_attempt >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		add("last_attempt < ?", f.Until)
	}
	if !f.IncludeReprocessed {
		conds = append(conds, "status <> 'reprocessed'")
	}
	if f.Signature != "" {
		add("error_signature = ?", f.Signature)
	}
	if f.ErrorType != "" {
		add("error_type = ?", string(f.ErrorType))
	}
	if f.ItemID != "" {
		add("item_id = ?", f.ItemID)
	}
	return strings.Join(conds, " AND "), args
}

// List returns up to limit items matching f, most recent failure first, and
// how many match in all.
func (s *Store) List(ctx context.Context, f Filter, limit int) ([]*Item, int, error) {
	where, args := f.where()
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM dead_lettered_items WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("error counting dead-lettered items: %w", err)
	}
	args = append(args, max(limit, 0))
	rows, err := s.pool.Query(ctx, `SELECT `+itemColumns+` FROM dead_lettered_items WHERE `+where+
		fmt.Sprintf(` ORDER BY last_attempt DESC, id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("error listing dead-lettered items: %w", err)
	}
	items, err := collectItems(rows)
	return items, total, err
}

// Cursor is an item's position in the listing order: its last_attempt and
// id.
type Cursor struct {
	LastAttempt time.Time
	ID          int64
}

// Cursor is it's position in the listing order.
func (it *Item) Cursor() Cursor { return Cursor{LastAttempt: it.LastAttempt, ID: it.ID} }

// ListPage returns up to limit items matching f after the position after
// (nil: from the start), most recent failure first: keyset pagination, so
// a page costs the same however deep it is. Unlike List it does not count
// every match.
func (s *Store) ListPage(ctx context.Context, f Filter, after *Cursor, limit int) ([]*Item, error) {
	where, args := f.where()
	if after != nil {
		args = append(args, after.LastAttempt, after.ID)
		where += fmt.Sprintf(" AND (last_attempt, id) < ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, max(limit, 0))
	rows, err := s.pool.Query(ctx, `SELECT `+itemColumns+` FROM dead_lettered_items WHERE `+where+
		fmt.Sprintf(` ORDER BY last_attempt DESC, id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("error listing dead-lettered items: %w", err)
	}
	return collectItems(rows)
}

// Events returns the audit events about item itemID of job jobID, newest
// first, at most limit: those naming the item, and the job's events that
// name no single item (retries, purges, clears).
func (s *Store) Events(ctx context.Context, jobID, itemID string, limit int) ([]deadletter.Event, error) {
	if limit <= 0 {
		limit = 50
	}
	events, err := deadletter.CollectEvents(s.pool.Query(ctx, `
		SELECT id, occurred_at, actor, action, item_count, details::text FROM dead_letter_events
		WHERE target = 'dead_lettered_items' AND details->>'job_id' = $1
		  AND (details->>'item_id' = $2 OR NOT details ? 'item_id')
		ORDER BY occurred_at DESC, id DESC LIMIT $3`, jobID, itemID, limit))
	if err != nil {
		return nil, fmt.Errorf("error reading audit events of item %q of job %q: %w", itemID, jobID, err)
	}
	return events, nil
}

func collectItems(rows pgx.Rows) ([]*Item, error) {
	defer rows.Close()
	items := []*Item{}
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("error reading dead-lettered items: %w", err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading dead-lettered items: %w", err)
	}
	return items, nil
}

// Get returns one item. Without jobID it looks the item id up in every job:
// ErrNotFound when none has it, *AmbiguousError when several do.
func (s *Store) Get(ctx context.Context, jobID, itemID string) (*Item, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+itemColumns+` FROM dead_lettered_items
		WHERE item_id = $1 AND ($2 = '' OR job_id = $2) ORDER BY job_id LIMIT 20`, itemID, jobID)
	if err != nil {
		return nil, fmt.Errorf("error reading dead-lettered item %q: %w", itemID, err)
	}
	items, err := collectItems(rows)
	switch {
	case err != nil:
		return nil, err
	case len(items) == 0:
		if jobID != "" {
			return nil, fmt.Errorf("item %q of job %q: %w", itemID, jobID, ErrNotFound)
		}
		return nil, fmt.Errorf("item %q: %w", itemID, ErrNotFound)
	case len(items) > 1:
		e := &AmbiguousError{ItemID: itemID}
		for _, it := range items {
			e.JobIDs = append(e.JobIDs, it.JobID)
		}
		return nil, e
	}
	return items[0], nil
}

// TypeCount is how many items have one error type.
type TypeCount struct {
	ErrorType agent.ErrorType `json:"error_type"`
	Count     int             `json:"count"`
	Share     float64         `json:"share"`
}

// Stats summarises the DLQ (of one job, or of all).
type Stats struct {
	JobID                string         `json:"job_id,omitempty"`
	Total                int            `json:"total"`
	ReprocessEligible    int            `json:"reprocess_eligible"`
	ManualReviewRequired int            `json:"manual_review_required"`
	ByStatus             map[string]int `json:"by_status"`
	// Oldest and Newest are the earliest first_attempt and the latest
	// last_attempt of the items in the DLQ.
	Oldest     *time.Time  `json:"oldest,omitempty"`
	Newest     *time.Time  `json:"newest,omitempty"`
	ErrorTypes []TypeCount `json:"error_types"`
	// Reprocessed counts rows that left the DLQ and wait for `relay dlq clear`.
	Reprocessed int `json:"reprocessed"`
}

// Stats reads totals for jobID ("" for every job). Totals count items still
// in the DLQ; Reprocessed counts those waiting to be cleared.
func (s *Store) Stats(ctx context.Context, jobID string) (*Stats, error) {
	st := &Stats{JobID: jobID, ByStatus: map[string]int{}, ErrorTypes: []TypeCount{}}
	rows, err := s.pool.Query(ctx, `
		SELECT status, error_type, count(*), count(*) FILTER (WHERE reprocess_eligible),
		       count(*) FILTER (WHERE manual_review_required), min(first_attempt), max(last_attempt)
		FROM dead_lettered_items WHERE ($1 = '' OR job_id = $1)
		GROUP BY status, error_type`, jobID)
	if err != nil {
		return nil, fmt.Errorf("error reading dead-letter stats: %w", err)
	}
	defer rows.Close()
	byType := map[agent.ErrorType]int{}
	for rows.Next() {
		var (
			status, typ         string
			n, eligible, manual int
			oldest, newest      time.Time
		)
		if err := rows.Scan(&status, &typ, &n, &eligible, &manual, &oldest, &newest); err != nil {
			return nil, fmt.Errorf("error reading dead-letter stats: %w", err)
		}
		st.ByStatus[status] += n
		if status == string(StatusReprocessed) {
			st.Reprocessed += n
			continue
		}
		st.Total += n
		st.ReprocessEligible += eligible
		st.ManualReviewRequired += manual
		byType[agent.ErrorType(typ)] += n
		if st.Oldest == nil || oldest.Before(*st.Oldest) {
			st.Oldest = &oldest
		}
		if st.Newest == nil || newest.After(*st.Newest) {
			st.Newest = &newest
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading dead-letter stats: %w", err)
	}
	st.ErrorTypes = itemTypeCounts(byType, st.Total)
	return st, nil
}

func itemTypeCounts(byType map[agent.ErrorType]int, total int) []TypeCount {
	out := []TypeCount{}
	for t, n := range byType {
		out = append(out, TypeCount{ErrorType: t, Count: n, Share: itemShare(n, total)})
	}
	sortItemTypeCounts(out)
	return out
}

func sortItemTypeCounts(tc []TypeCount) {
	for i := 1; i < len(tc); i++ {
		for j := i; j > 0 && (tc[j].Count > tc[j-1].Count || (tc[j].Count == tc[j-1].Count && tc[j].ErrorType < tc[j-1].ErrorType)); j-- {
			tc[j], tc[j-1] = tc[j-1], tc[j]
		}
	}
}

func itemShare(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// PatternGroup is the items sharing one error signature.
type PatternGroup struct {
	Signature       string          `json:"signature"`
	Count           int             `json:"count"`
	Share           float64         `json:"share"`
	ErrorType       agent.ErrorType `json:"error_type"` // the most common among them
	SampleItems     []string        `json:"sample_items"`
	FirstOccurrence time.Time       `json:"first_occurrence"`
	LastOccurrence  time.Time       `json:"last_occurrence"`
}

// Report is `relay dlq analyze`: the DLQ grouped by error signature, by
// error type and by hour of the last failure.
type Report struct {
	JobID         string                 `json:"job_id,omitempty"`
	GeneratedAt   time.Time              `json:"generated_at"`
	Since         *time.Time             `json:"since,omitempty"`
	Until         *time.Time             `json:"until,omitempty"`
	TotalItems    int                    `json:"total_items"`
	PatternGroups []PatternGroup         `json:"pattern_groups"`
	ErrorTypes    []TypeCount            `json:"error_types"`
	Temporal      []deadletter.HourCount `json:"temporal_distribution"`
}

// MaxPatternGroups caps the groups Analyze returns (largest first).
const MaxPatternGroups = 50

// Analyze groups the items matching f. It only reads: no audit event.
// Sample items are item ids, or job/item when f spans jobs.
func (s *Store) Analyze(ctx context.Context, f Filter) (*Report, error) {
	a := &Report{JobID: f.JobID, GeneratedAt: time.Now().UTC(), PatternGroups: []PatternGroup{}, Temporal: []deadletter.HourCount{}}
	if !f.Since.IsZero() {
		a.Since = &f.Since
	}
	if !f.Until.IsZero() {
		a.Until = &f.Until
	}
	where, args := f.where()
	sample := "job_id || '/' || item_id"
	if f.JobID != "" {
		sample = "item_id"
	}
	rows, err := s.pool.Query(ctx, `
		SELECT error_signature, count(*), mode() WITHIN GROUP (ORDER BY error_type),
		       (array_agg(`+sample+` ORDER BY last_attempt DESC, id DESC))[1:3], min(first_attempt), max(last_attempt)
		FROM dead_lettered_items WHERE `+where+`
		GROUP BY error_signature ORDER BY count(*) DESC, error_signature`, args...)
	if err != nil {
		return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
	}
	byType := map[agent.ErrorType]int{}
	for rows.Next() {
		var (
			g   PatternGroup
			typ string
		)
		if err := rows.Scan(&g.Signature, &g.Count, &typ, &g.SampleItems, &g.FirstOccurrence, &g.LastOccurrence); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
		}
		g.ErrorType = agent.ErrorType(typ)
		a.TotalItems += g.Count
		if len(a.PatternGroups) < MaxPatternGroups {
			a.PatternGroups = append(a.PatternGroups, g)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
	}
	for i := range a.PatternGroups {
		a.PatternGroups[i].Share = itemShare(a.PatternGroups[i].Count, a.TotalItems)
	}
	rows, err = s.pool.Query(ctx, `SELECT error_type, count(*) FROM dead_lettered_items WHERE `+where+` GROUP BY error_type`, args...)
	if err != nil {
		return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
	}
	for rows.Next() {
		var (
			typ string
			n   int
		)
		if err := rows.Scan(&typ, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
		}
		byType[agent.ErrorType(typ)] = n
	}
	rows.Close()
	a.ErrorTypes = itemTypeCounts(byType, a.TotalItems)
	rows, err = s.pool.Query(ctx, `SELECT date_trunc('hour', last_attempt AT TIME ZONE 'UTC'), count(*)
		FROM dead_lettered_items WHERE `+where+` GROUP BY 1 ORDER BY 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
	}
	for rows.Next() {
		var h deadletter.HourCount
		if err := rows.Scan(&h.Hour, &h.Count); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
		}
		h.Hour = time.Date(h.Hour.Year(), h.Hour.Month(), h.Hour.Day(), h.Hour.Hour(), 0, 0, 0, time.UTC)
		a.Temporal = append(a.Temporal, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error analysing dead-lettered items: %w", err)
	}
	return a, nil
}

// Export calls fn for every item matching f, ordered by job and id, with
// every column, reading the table in pages (each page its own short query,
// as Store.Export does) so that a large DLQ is never in memory and no
// statement runs for long. limit caps the items (0: all). It returns how
// many items fn accepted.
func (s *Store) Export(ctx context.Context, f Filter, limit int64, fn func(*Item) error) (int64, error) {
	where, args := f.where()
	var (
		n        int64
		afterJob string
		afterID  int64
	)
	for {
		page := deadletter.ExportPageSize(limit, n)
		if page == 0 {
			return n, nil
		}
		pageArgs := append(slices.Clip(args), afterJob, afterID, page)
		k := len(args)
		rows, err := s.pool.Query(ctx, `SELECT `+itemColumns+` FROM dead_lettered_items WHERE `+where+
			fmt.Sprintf(` AND (job_id, id) > ($%d, $%d) ORDER BY job_id, id LIMIT $%d`, k+1, k+2, k+3), pageArgs...)
		if err != nil {
			return n, fmt.Errorf("error exporting dead-lettered items: %w", err)
		}
		var got int64
		for rows.Next() {
			it, err := scanItem(rows)
			if err == nil {
				err = fn(it)
			}
			if err != nil {
				rows.Close()
				return n, fmt.Errorf("error exporting dead-lettered item: %w", err)
			}
			n, got, afterJob, afterID = n+1, got+1, it.JobID, it.ID
		}
		if err := rows.Err(); err != nil {
			return n, fmt.Errorf("error exporting dead-lettered items: %w", err)
		}
		if got < page {
			return n, nil
		}
	}
}

// CountOlderThan counts the items a Purge with the same arguments would delete.
func (s *Store) CountOlderThan(ctx context.Context, cutoff time.Time, jobID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM dead_lettered_items WHERE dead_lettered_at < $1 AND ($2 = '' OR job_id = $2)`,
		cutoff, jobID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("error counting old dead-lettered items: %w", err)
	}
	return n, nil
}

// Purge deletes items dead-lettered before cutoff (of jobID, or of every job)
// and records an item_removed event with the reason.
func (s *Store) Purge(ctx context.Context, cutoff time.Time, jobID, reason, actor string) (int, error) {
	return s.remove(ctx, `dead_lettered_at < $1 AND ($2 = '' OR job_id = $2)`, []any{cutoff, jobID}, jobID, reason, actor)
}

// CountReprocessed counts the items of jobID that Clear would delete.
func (s *Store) CountReprocessed(ctx context.Context, jobID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM dead_lettered_items WHERE job_id = $1 AND status = 'reprocessed'`, jobID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("error counting reprocessed items: %w", err)
	}
	return n, nil
}

// Clear deletes jobID's items that were successfully reprocessed and records
// an item_removed event.
func (s *Store) Clear(ctx context.Context, jobID, actor string) (int, error) {
	return s.remove(ctx, `job_id = $1 AND status = 'reprocessed'`, []any{jobID}, jobID,
		"cleared after successful reprocessing", actor)
}

func (s *Store) remove(ctx context.Context, where string, args []any, jobID, reason, actor string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM dead_lettered_items WHERE `+where+` RETURNING job_id, item_id`, args...)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var job, item string
			if err := rows.Scan(&job, &item); err != nil {
				rows.Close()
				return err
			}
			if len(ids) < 100 {
				ids = append(ids, job+"/"+item)
			}
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return s.eventTx(ctx, tx, actor, EventItemRemoved, n, map[string]any{
			"job_id": jobID, "reason": reason, "items": ids,
		})
	})
	if err != nil {
		return 0, fmt.Errorf("error removing dead-lettered items (%s): %w", reason, err)
	}
	return n, nil
}

// ClaimForRetryTx marks jobID's dead_lettered items that match filter (a
// JSONPath predicate over the row as jsonb, evaluated by PostgreSQL's
// jsonb_path_match; "" matches all) as reprocessing and returns their ids.
// Only reprocess_eligible items are taken unless force. Rows another retry
// holds are skipped. A bad filter gives *InvalidFilterError.
func (s *Store) ClaimForRetryTx(ctx context.Context, tx pgx.Tx, jobID, filter string, force bool) ([]string, error) {
	if filter != "" {
		if err := ValidateFilter(ctx, tx, filter); err != nil {
			return nil, err
		}
	}
	rows, err := tx.Query(ctx, `
		UPDATE dead_lettered_items SET status = 'reprocessing', updated_at = now()
		WHERE id IN (
		    SELECT d.id FROM dead_lettered_items d
		    WHERE d.job_id = $1 AND d.status = 'dead_lettered' AND ($3 OR d.reprocess_eligible)
		      AND ($2 = '' OR jsonb_path_match(to_jsonb(d), $2::jsonpath))
		    ORDER BY d.id FOR UPDATE SKIP LOCKED)
		RETURNING item_id`, jobID, filter, force)
	if err != nil {
		return nil, itemFilterError(filter, fmt.Errorf("error selecting items of job %q to retry: %w", jobID, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, itemFilterError(filter, fmt.Errorf("error selecting items of job %q to retry: %w", jobID, err))
	}
	return ids, nil
}

// ValidateFilter asks PostgreSQL whether expr is a JSONPath predicate,
// evaluating it against an empty object.
func ValidateFilter(ctx context.Context, q pgx.Tx, expr string) error {
	var ok *bool
	_, err := q.Exec(ctx, `SAVEPOINT relay_filter_check`)
	if err != nil {
		return err
	}
	err = q.QueryRow(ctx, `SELECT jsonb_path_match('{}'::jsonb, $1::jsonpath)`, expr).Scan(&ok)
	if err != nil {
		if _, rbErr := q.Exec(ctx, `ROLLBACK TO SAVEPOINT relay_filter_check`); rbErr != nil {
			return rbErr
		}
		return itemFilterError(expr, err)
	}
	_, err = q.Exec(ctx, `RELEASE SAVEPOINT relay_filter_check`)
	return err
}

// itemFilterError turns PostgreSQL's complaints about a jsonpath (a syntax
// error, a variable such as $1 that no one passes (42704), or a result that
// is not one boolean) into *InvalidFilterError.
func itemFilterError(expr string, err error) error {
	var pgErr *pgconn.PgError
	if expr != "" && errors.As(err, &pgErr) && (pgErr.Code == "42601" || pgErr.Code == "42704" || strings.HasPrefix(pgErr.Code, "22")) {
		return &InvalidFilterError{Expr: expr, Err: errors.New(pgErr.Message)}
	}
	return err
}

// ClaimAllTx marks every dead_lettered item of jobID as reprocessing,
// whatever its eligibility (`relay mapreduce resume --include-dlq-items`).
func (s *Store) ClaimAllTx(ctx context.Context, tx pgx.Tx, jobID string) ([]string, error) {
	return s.ClaimForRetryTx(ctx, tx, jobID, "", true)
}

// ReleaseTx puts items claimed for a retry back to dead_lettered (the retry
// could not be enqueued).
func (s *Store) ReleaseTx(ctx context.Context, tx pgx.Tx, jobID string, itemIDs []string) error {
	_, err := tx.Exec(ctx, `UPDATE dead_lettered_items SET status = 'dead_lettered', updated_at = now()
		WHERE job_id = $1 AND item_id = ANY($2) AND status = 'reprocessing'`, jobID, itemIDs)
	if err != nil {
		return fmt.Errorf("error releasing items of job %q: %w", jobID, err)
	}
	return nil
}

// ResolveTx records in tx that an item succeeded: if it is in the DLQ, its
// row becomes reprocessed (it leaves the DLQ; `relay dlq clear` deletes it)
// and an item_removed event is written. It reports whether there was a row.
func (s *Store) ResolveTx(ctx context.Context, tx pgx.Tx, jobID, itemID, actor string) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE dead_lettered_items SET status = 'reprocessed', updated_at = now()
		WHERE job_id = $1 AND item_id = $2 AND status IN ('dead_lettered', 'reprocessing')`, jobID, itemID)
	if err != nil {
		return false, fmt.Errorf("error marking item %q of job %q reprocessed: %w", itemID, jobID, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	return true, s.eventTx(ctx, tx, actor, EventItemRemoved, 1, map[string]any{
		"job_id": jobID, "item_id": itemID, "reason": "reprocessed successfully",
	})
}
