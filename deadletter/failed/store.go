package failed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/citus"
)

// Store reads and manages failed_pois for operators: the queries behind
// `relay failed ...`. Every write records an audit event in
// dead_letter_events in the same transaction.
type Store struct {
	pool *pgxpool.Pool
	// layout says whether failed_pois is distributed (Citus): then the
	// counts tables are not kept (citus.CountsTriggers), and a row is found
	// by id without the skip scan of the repositories (everyRepository).
	layout *citus.Layout
}

// NewStore returns a Store over pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, layout: citus.NewLayout(pool)} }

// countsKept reports whether the counts tables are kept (plain
// PostgreSQL): false on a distributed database, where the readers count
// failed_pois's rows.
func (s *Store) countsKept(ctx context.Context) (bool, error) {
	dist, err := s.layout.Distributed(ctx)
	return !dist, err
}

// args returns the queryArgs of a statement of s's database.
func (s *Store) args(ctx context.Context) (*queryArgs, error) {
	dist, err := s.layout.Distributed(ctx)
	if err != nil {
		return nil, err
	}
	return &queryArgs{distributed: dist}, nil
}

// byID is the condition of a statement that finds rows by id ($1): with the
// skip scan of the repositories on plain PostgreSQL (everyRepository), by
// id alone on a distributed failed_pois.
func (s *Store) byID(ctx context.Context, cond string) (string, error) {
	dist, err := s.layout.Distributed(ctx)
	if err != nil || dist {
		return cond, err
	}
	return `repository = ANY(` + everyRepository + `) AND ` + cond, nil
}

// HistoryEntry is one recorded failure of a row (an element of
// failed_pois.error_history).
type HistoryEntry struct {
	JobID     int64      `json:"job_id"`
	FailedAt  time.Time  `json:"failed_at"`
	Class     ErrorClass `json:"error_class"`
	Message   string     `json:"error_message"`
	Signature string     `json:"error_signature"`
}

// Record is one failed_pois row. List leaves ErrorContext, POIData and
// History empty; Get fills everything.
type Record struct {
	ID                   int64      `json:"id"`
	OriginalJobID        int64      `json:"original_job_id"`
	Repository           string     `json:"repository"`
	FileID               string     `json:"file_id"`
	POIID                string     `json:"poi_id"` // "" when NULL
	POIIndex             int        `json:"poi_index"`
	FailedAt             time.Time  `json:"failed_at"`
	Status               Status     `json:"status"`
	Attempts             int        `json:"attempts"`
	ErrorClass           ErrorClass `json:"error_class"`
	ErrorSignature       string     `json:"error_signature"`
	ErrorMessage         string     `json:"error_message"`
	ErrorContext         string     `json:"error_context,omitempty"`
	ManualReviewRequired bool       `json:"manual_review_required"`
	ReprocessJobID       int64      `json:"reprocess_job_id,omitempty"`
	ReprocessRequestedAt time.Time  `json:"reprocess_requested_at,omitzero"`
	ReprocessedAt        time.Time  `json:"reprocessed_at,omitzero"`
	IgnoredReason        string     `json:"ignored_reason,omitempty"`
	UpdatedAt            time.Time  `json:"updated_at"`
	// FileVersion is the version of the file whose batch recorded the
	// failure; 0 when unknown (rows recorded before migration 29).
	FileVersion int64 `json:"file_version,omitempty"`
	// SupersededAt and SupersededReason say when and why the row was closed
	// (status superseded).
	SupersededAt     time.Time       `json:"superseded_at,omitzero"`
	SupersededReason string          `json:"superseded_reason,omitempty"`
	POIData          json.RawMessage `json:"original_poi_data,omitempty"`
	History          []HistoryEntry  `json:"error_history,omitempty"`
}

const (
	summaryColumns = `id, original_job_id, file_id, poi_id, poi_index, failed_at, status, attempts, error_class,
		error_signature, error_message, manual_review_required, reprocess_job_id, reprocess_requested_at,
		reprocessed_at, ignored_reason, updated_at, repository, file_version, superseded_at, superseded_reason`
	fullColumns = summaryColumns + `, error_context, original_poi_data, error_history`
)

// scanRecord reads summaryColumns, plus the full columns when full.
func scanRecord(row pgx.Row, full bool) (*Record, error) {
	var (
		id, originalJob       int64
		poiIndex, attempts    int32
		fileID, sig, message  string
		repository            string
		status, class         string
		failedAt, updatedAt   time.Time
		manual                bool
		poiID, reason         *string
		reprocessJob          *int64
		requestedAt, reprocAt *time.Time
		errContext            string
		data, history         []byte
		fileVersion           *int64
		supersededAt          *time.Time
		supersededReason      *string
	)
	dest := []any{&id, &originalJob, &fileID, &poiID, &poiIndex, &failedAt, &status, &attempts, &class,
		&sig, &message, &manual, &reprocessJob, &requestedAt, &reprocAt, &reason, &updatedAt, &repository,
		&fileVersion, &supersededAt, &supersededReason}
	if full {
		dest = append(dest, &errContext, &data, &history)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	r := Record{ID: id, OriginalJobID: originalJob, Repository: repository, FileID: fileID, POIIndex: int(poiIndex), FailedAt: failedAt.UTC(),
		Status: Status(status), Attempts: int(attempts), ErrorClass: ErrorClass(class), ErrorSignature: sig,
		ErrorMessage: message, ManualReviewRequired: manual, UpdatedAt: updatedAt.UTC()}
	if poiID != nil {
		r.POIID = *poiID
	}
	if reason != nil {
		r.IgnoredReason = *reason
	}
	if reprocessJob != nil {
		r.ReprocessJobID = *reprocessJob
	}
	if requestedAt != nil {
		r.ReprocessRequestedAt = requestedAt.UTC()
	}
	if reprocAt != nil {
		r.ReprocessedAt = reprocAt.UTC()
	}
	if fileVersion != nil {
		r.FileVersion = *fileVersion
	}
	if supersededAt != nil {
		r.SupersededAt = supersededAt.UTC()
	}
	if supersededReason != nil {
		r.SupersededReason = *supersededReason
	}
	if full {
		r.ErrorContext = errContext
		r.POIData = json.RawMessage(data)
		if err := json.Unmarshal(history, &r.History); err != nil {
			return nil, fmt.Errorf("error decoding error_history of failed_pois row %d: %w", id, err)
		}
	}
	return &r, nil
}

// List returns rows matching f, newest failure first.
func (s *Store) List(ctx context.Context, f Filter, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = 50
	}
	res, err := s.ListPage(ctx, f, Page{Limit: limit})
	if err != nil {
		return nil, err
	}
	return res.Rows, nil
}

// Cursor is a row's position in the listing order: its failed_at and id.
type Cursor struct {
	FailedAt time.Time
	ID       int64
}

// Page is one page of a listing in time order.
type Page struct {
	// After starts the page after this position (nil: at the start).
	After *Cursor
	// Limit is the page's length (50 when not positive).
	Limit int
	// OldestFirst lists in ascending time order instead of newest first.
	OldestFirst bool
	// MaxScan, when positive and the filter has a Search, bounds the rows
	// the page reads: it returns the matches among the next MaxScan rows
	// the rest of the filter selects, and Next continues after the last row
	// read. So a page costs the same whether the text is everywhere or
	// nowhere.
	MaxScan int
}

// PageResult is one page of a listing.
type PageResult struct {
	Rows []Record
	// Next is where the next page starts; nil when nothing follows.
	Next *Cursor
	// Scanned is how many rows a bounded search read (Page.MaxScan), and
	// ScannedTo the last of them.
	Scanned   int64
	ScannedTo *Cursor
}

// ListPage returns one page of the rows matching f, ordered by failed_at
// then id (newest first unless p.OldestFirst). The next page starts after
// Next: keyset pagination, so every page costs the same however deep it is
// (failed_pois_failed_at_idx, or the status and signature indexes, serve
// the order). A search reads at most p.MaxScan rows when it is set.
func (s *Store) ListPage(ctx context.Context, f Filter, p Page) (*PageResult, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	cmpOp, dir := "<", "DESC"
	if p.OldestFirst {
		cmpOp, dir = ">", "ASC"
	}
	after := func(a *queryArgs) string {
		if p.After == nil {
			return ""
		}
		return ` AND (failed_at, id) ` + cmpOp + ` (` + a.add(p.After.FailedAt) + `, ` + a.add(p.After.ID) + `)`
	}
	order := ` ORDER BY failed_at ` + dir + `, id ` + dir
	res := &PageResult{Rows: []Record{}}
	var ids []int64
	if f.Search != "" && p.MaxScan > 0 {
		// One streaming statement over the next MaxScan rows of the filter
		// without the search: it returns the matches in order and the
		// MaxScan-th row read, and stops as soon as limit+1 rows matched.
		fs := f
		fs.Search = ""
		a, err := s.args(ctx)
		if err != nil {
			return nil, fmt.Errorf("error searching failed_pois: %w", err)
		}
		w := fs.where(a, "") + after(a)
		like := a.add("%" + likeEscaper.Replace(f.Search) + "%")
		maxScan := a.add(p.MaxScan)
		q := `SELECT id, failed_at, hit, rn FROM (
				SELECT id, failed_at, error_message ILIKE ` + like + ` AS hit, row_number() OVER (` + order + `) AS rn
				FROM (SELECT id, failed_at, error_message FROM failed_pois WHERE ` + w + order + ` LIMIT ` + maxScan + `) s
			) t WHERE hit OR rn = ` + maxScan + ` LIMIT ` + a.add(limit+2)
		rows, err := s.pool.Query(ctx, q, a.vals...)
		if err != nil {
			return nil, fmt.Errorf("error searching failed_pois: %w", err)
		}
		var hits []Cursor
		for rows.Next() {
			var c Cursor
			var hit bool
			var rn int64
			if err := rows.Scan(&c.ID, &c.FailedAt, &hit, &rn); err != nil {
				rows.Close()
				return nil, fmt.Errorf("error searching failed_pois: %w", err)
			}
			c.FailedAt = c.FailedAt.UTC()
			if hit && len(hits) <= limit {
				hits = append(hits, c)
			}
			if rn == int64(p.MaxScan) {
				res.Scanned, res.ScannedTo = rn, &c
			}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("error searching failed_pois: %w", err)
		}
		switch {
		case len(hits) > limit:
			hits = hits[:limit]
			res.Next = &hits[limit-1]
			res.Scanned, res.ScannedTo = 0, nil
		case res.ScannedTo != nil:
			res.Next = res.ScannedTo
		}
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		if len(ids) == 0 {
			return res, nil
		}
		f = Filter{IDs: ids}
		p = Page{OldestFirst: p.OldestFirst}
	}
	a, err := s.args(ctx)
	if err != nil {
		return nil, fmt.Errorf("error listing failed_pois: %w", err)
	}
	q := `SELECT ` + summaryColumns + ` FROM failed_pois WHERE ` + f.where(a, "") + after(a) + order + ` LIMIT ` + a.add(limit+1)
	rows, err := s.pool.Query(ctx, q, a.vals...)
	if err != nil {
		return nil, fmt.Errorf("error listing failed_pois: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRecord(rows, false)
		if err != nil {
			return nil, fmt.Errorf("error reading failed_pois: %w", err)
		}
		res.Rows = append(res.Rows, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing failed_pois: %w", err)
	}
	if ids == nil && len(res.Rows) > limit {
		res.Rows = res.Rows[:limit]
		c := res.Rows[limit-1].Cursor()
		res.Next = &c
	}
	return res, nil
}

// Cursor is r's position in the listing order.
func (r *Record) Cursor() Cursor { return Cursor{FailedAt: r.FailedAt, ID: r.ID} }

// Events returns the audit events that name row id, newest first, at most
// limit: ignores and reprocess runs that listed it by id, and the outcomes
// recorded by the River jobs that worked it (in.Jobs).
func (s *Store) Events(ctx context.Context, in *Inspection, limit int) ([]deadletter.Event, error) {
	if limit <= 0 {
		limit = 50
	}
	jobs := make([]int64, len(in.Jobs))
	for i, j := range in.Jobs {
		jobs[i] = j.ID
	}
	events, err := deadletter.CollectEvents(s.pool.Query(ctx, `
		SELECT id, occurred_at, actor, action, item_count, details::text FROM dead_letter_events
		WHERE target = 'failed_pois'
		  AND (details->'ids' @> jsonb_build_array($1::bigint)
		       OR (action = $2 AND details->>'job_id' = ANY($3::bigint[]::text[])))
		ORDER BY occurred_at DESC, id DESC LIMIT $4`, in.ID, ActionReprocessOutcome, jobs, limit))
	if err != nil {
		return nil, fmt.Errorf("error reading audit events of failed_pois row %d: %w", in.ID, err)
	}
	return events, nil
}

// JobRef is one River job involved with a row.
type JobRef struct {
	ID int64 `json:"id"`
	// Role is "original" (the publish's batch), "failed attempt" (a
	// reprocess job in which the POI failed again) or "reprocess" (the
	// latest reprocess job).
	Role string `json:"role"`
	// State is the job's River state, or "" when River no longer has it
	// (its cleaner deletes finished jobs after a retention period).
	State string `json:"state"`
}

// Inspection is one row with everything known about it.
type Inspection struct {
	Record
	Jobs []JobRef `json:"jobs"`
}

// Get returns row id with its full POI data, error history and the River
// jobs involved, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (*Inspection, error) {
	cond, err := s.byID(ctx, `id = $1`)
	if err != nil {
		return nil, fmt.Errorf("error inspecting failed_pois row %d: %w", id, err)
	}
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+fullColumns+` FROM failed_pois WHERE `+cond, id), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("error inspecting failed_pois row %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("error inspecting failed_pois row %d: %w", id, err)
	}
	in := &Inspection{Record: *r, Jobs: []JobRef{{ID: r.OriginalJobID, Role: "original"}}}
	seen := map[int64]bool{r.OriginalJobID: true}
	for _, h := range r.History {
		if !seen[h.JobID] {
			seen[h.JobID] = true
			in.Jobs = append(in.Jobs, JobRef{ID: h.JobID, Role: "failed attempt"})
		}
	}
	if r.ReprocessJobID != 0 {
		if i := slices.IndexFunc(in.Jobs, func(j JobRef) bool { return j.ID == r.ReprocessJobID }); i >= 0 {
			in.Jobs[i].Role = "reprocess"
		} else {
			in.Jobs = append(in.Jobs, JobRef{ID: r.ReprocessJobID, Role: "reprocess"})
		}
	}
	ids := make([]int64, len(in.Jobs))
	for i, j := range in.Jobs {
		ids[i] = j.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT id, state::text FROM river_job WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("error reading jobs of failed_pois row %d: %w", id, err)
	}
	states := map[int64]string{}
	for rows.Next() {
		var jid int64
		var st string
		if err := rows.Scan(&jid, &st); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error reading jobs of failed_pois row %d: %w", id, err)
		}
		states[jid] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading jobs of failed_pois row %d: %w", id, err)
	}
	for i := range in.Jobs {
		in.Jobs[i].State = states[in.Jobs[i].ID]
	}
	return in, nil
}

// Stats summarizes failed_pois.
type Stats struct {
	// Repository is the repository counted (RepositoryStats); nil for
	// every row (Stats).
	Repository *string              `json:"repository,omitempty"`
	Total      int64                `json:"total"`
	Status     map[Status]int64     `json:"by_status"`
	Class      map[ErrorClass]int64 `json:"by_error_class"`
	Oldest     time.Time            `json:"oldest_failed_at,omitzero"`
	Newest     time.Time            `json:"newest_failed_at,omitzero"`
	OldNew     time.Time            `json:"oldest_new_failed_at,omitzero"`
	Manual     int64                `json:"manual_review_required"`
	Stuck      int64                `json:"stuck_reprocessing"`
}

// liveJobStates are the River states of a job that will still run.
const liveJobStates = `('available', 'pending', 'running', 'retryable', 'scheduled')`

// Stats counts rows by status and by error class, finds the oldest and
// newest failures, the rows needing manual review (status new) and the rows
// stuck in reprocessing (their job will never report back). It sends its
// queries in one round trip; each is answered from an index.
func (s *Store) Stats(ctx context.Context) (*Stats, error) {
	return s.stats(ctx, nil)
}

// RepositoryStats is Stats of one repository's rows ("" the default
// repository). The counts table Stats reads has no repository, so it counts
// the repository's rows (failed_pois_status_file_id_idx finds them): its
// cost grows with the repository's rows.
func (s *Store) RepositoryStats(ctx context.Context, repository string) (*Stats, error) {
	return s.stats(ctx, &repository)
}

// stats is Stats of every row (repository nil) or of one repository's.
func (s *Store) stats(ctx context.Context, repository *string) (*Stats, error) {
	st := &Stats{Repository: repository, Status: map[Status]int64{}, Class: map[ErrorClass]int64{}}
	for _, x := range Statuses() {
		st.Status[x] = 0
	}
	for _, c := range Classes() {
		st.Class[c] = 0
	}
	kept, err := s.countsKept(ctx)
	if err != nil {
		return nil, fmt.Errorf("error reading failed_pois stats: %w", err)
	}
	// where and and are the repository's condition ($1) of the queries
	// but the counts', args its value.
	where, and, args := "", "", []any(nil)
	if repository != nil {
		where, and, args = ` WHERE repository = $1`, ` AND repository = $1`, []any{*repository}
	}
	// The counts per status and class come from failed_pois_counts, kept
	// by triggers (migrations 9 and 25), not from counting the rows; on a
	// distributed failed_pois, which has no counts (citus.CountsTriggers),
	// from counting the rows, on every shard at once.
	counts := `SELECT status, error_class, sum(n)::bigint FROM failed_pois_counts` + where + `
		GROUP BY status, error_class HAVING sum(n) <> 0`
	if !kept {
		counts = `SELECT status, error_class, count(*) FROM failed_pois` + where + ` GROUP BY status, error_class`
	}
	b := &pgx.Batch{}
	b.Queue(counts, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var status, class string
			var n int64
			if err := rows.Scan(&status, &class, &n); err != nil {
				return err
			}
			st.Total += n
			st.Status[Status(status)] += n
			st.Class[ErrorClass(class)] += n
		}
		return rows.Err()
	})
	var oldest, newest, oldNew *time.Time
	b.Queue(`SELECT min(failed_at), max(failed_at) FROM failed_pois`+where, args...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&oldest, &newest)
	})
	b.Queue(`SELECT min(failed_at) FROM failed_pois WHERE status = 'new'`+and, args...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&oldNew)
	})
	b.Queue(`SELECT count(*) FROM failed_pois WHERE manual_review_required AND status = 'new'`+and, args...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&st.Manual)
	})
	// Rows in reprocessing whose job is no longer live: grouped by job
	// first, so each job is looked up once (a reprocess of 100,000 rows is
	// about 2,400 jobs), not once per row.
	b.Queue(`SELECT coalesce(sum(g.n), 0)::bigint FROM (
			SELECT reprocess_job_id, count(*) AS n FROM failed_pois WHERE status = 'reprocessing'`+and+` GROUP BY reprocess_job_id) g
		WHERE NOT EXISTS (SELECT 1 FROM river_job j WHERE j.id = g.reprocess_job_id AND j.state IN `+liveJobStates+`)`, args...).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&st.Stuck)
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		if repository != nil {
			return nil, fmt.Errorf("error reading failed_pois stats of repository %q: %w", *repository, err)
		}
		return nil, fmt.Errorf("error reading failed_pois stats: %w", err)
	}
	for _, p := range []struct {
		dst *time.Time
		src *time.Time
	}{{&st.Oldest, oldest}, {&st.Newest, newest}, {&st.OldNew, oldNew}} {
		if p.src != nil {
			*p.dst = p.src.UTC()
		}
	}
	return st, nil
}

// SignatureGroup is one error signature (and class) in Analyze.
type SignatureGroup struct {
	Signature  string     `json:"error_signature"`
	ErrorClass ErrorClass `json:"error_class"`
	Count      int64      `json:"count"`
	// Share is Count over all rows analyzed (0..1).
	Share     float64   `json:"share"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// SamplePOIIDs are up to three POI ids of the group's latest failures
	// ("" for a POI without a usable id); SampleRowIDs are their rows.
	SamplePOIIDs []string `json:"sample_poi_ids"`
	SampleRowIDs []int64  `json:"sample_row_ids"`
}

// Report is `relay failed analyze`: failures grouped by cause (signature
// and class) and by hour.
type Report struct {
	Filter map[string]any   `json:"filter"`
	Total  int64            `json:"total"`
	Groups []SignatureGroup `json:"groups"`
	// OtherGroups counts the groups beyond the top ones returned.
	OtherGroups int64 `json:"other_groups"`
	// Hourly is failures per hour over the last HourlyWindow (or since
	// Filter.Since if later), oldest first, hours without failures left out.
	Hourly []deadletter.HourCount `json:"hourly"`
}

// HourlyWindow is how far back Analyze's per-hour distribution reaches.
const HourlyWindow = 7 * 24 * time.Hour

// Analyze groups the rows matching f by error signature and class: the top
// groups by count with their share, first and last failure and up to three
// sample POI ids, and the number of failures per hour. A filter of at most
// a status is answered from the counts per signature and per hour
// (failed_pois_signature_counts and failed_pois_hourly_counts, migration
// 17) and a few index probes per group, whatever the table's size; any other
// filter reads the rows it selects.
func (s *Store) Analyze(ctx context.Context, f Filter, top int) (*Report, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if top <= 0 {
		top = 20
	}
	kept, err := s.countsKept(ctx)
	if err != nil {
		return nil, fmt.Errorf("error analyzing failed_pois: %w", err)
	}
	if f.onlyStatus() && kept {
		return s.analyzeCounts(ctx, f, top)
	}
	return s.analyzeRows(ctx, f, top)
}

// onlyStatus reports whether f filters by nothing but (perhaps) a status.
func (f Filter) onlyStatus() bool {
	g := f
	g.Status = ""
	return g.Repository == nil && g.FileID == "" && g.Signature == "" && g.ErrorClass == "" && g.Since.IsZero() && g.Until.IsZero() &&
		!g.ManualReview && g.POIID == "" && g.Search == "" && len(g.IDs) == 0
}

// analyzeCounts is Analyze for a filter of at most a status, from the
// counts tables: each top group's first and last failure and its samples
// come from failed_pois_signature_failed_at_idx.
func (s *Store) analyzeCounts(ctx context.Context, f Filter, top int) (*Report, error) {
	an := &Report{Filter: f.Describe(), Groups: []SignatureGroup{}, Hourly: []deadletter.HourCount{}}
	rows, err := s.pool.Query(ctx, `
		WITH c AS (
			SELECT error_signature, error_class, sum(n)::bigint AS n FROM failed_pois_signature_counts
			WHERE $1 = '' OR status = $1
			GROUP BY error_signature, error_class HAVING sum(n) > 0
		), t AS (SELECT coalesce(sum(n), 0)::bigint AS total, count(*) AS groups FROM c)
		SELECT g.error_signature, g.error_class, g.n, g.n::float8 / t.total, fs.first_seen, s.last_seen,
		       s.ids, s.poi_ids, t.total, t.groups
		FROM (SELECT * FROM c ORDER BY n DESC, error_signature, error_class LIMIT $2) g
		CROSS JOIN t
		CROSS JOIN LATERAL (
			SELECT f.failed_at AS first_seen FROM failed_pois f
			WHERE f.error_signature = g.error_signature AND f.error_class = g.error_class AND ($1 = '' OR f.status = $1)
			ORDER BY f.failed_at LIMIT 1) fs
		CROSS JOIN LATERAL (
			SELECT array_agg(x.id ORDER BY x.failed_at DESC, x.id DESC) AS ids,
			       array_agg(coalesce(x.poi_id, '') ORDER BY x.failed_at DESC, x.id DESC) AS poi_ids,
			       max(x.failed_at) AS last_seen
			FROM (SELECT f.id, f.poi_id, f.failed_at FROM failed_pois f
			      WHERE f.error_signature = g.error_signature AND f.error_class = g.error_class AND ($1 = '' OR f.status = $1)
			      ORDER BY f.failed_at DESC, f.id DESC LIMIT 3) x
		) s
		ORDER BY g.n DESC, g.error_signature, g.error_class`, string(f.Status), top)
	if err != nil {
		return nil, fmt.Errorf("error analyzing failed_pois: %w", err)
	}
	if err := collectGroups(rows, an); err != nil {
		return nil, err
	}
	from, err := s.hourlyFrom(ctx, f.Since)
	if err != nil {
		return nil, err
	}
	if an.Hourly, err = s.Hourly(ctx, from, f.Status); err != nil {
		return nil, err
	}
	return an, nil
}

// collectGroups reads Analyze's groups into an.
func collectGroups(rows pgx.Rows, an *Report) error {
	defer rows.Close()
	var groups int64
	for rows.Next() {
		var g SignatureGroup
		var class string
		if err := rows.Scan(&g.Signature, &class, &g.Count, &g.Share, &g.FirstSeen, &g.LastSeen,
			&g.SampleRowIDs, &g.SamplePOIIDs, &an.Total, &groups); err != nil {
			return fmt.Errorf("error reading failed_pois analysis: %w", err)
		}
		g.ErrorClass, g.FirstSeen, g.LastSeen = ErrorClass(class), g.FirstSeen.UTC(), g.LastSeen.UTC()
		an.Groups = append(an.Groups, g)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error analyzing failed_pois: %w", err)
	}
	an.OtherGroups = max(0, groups-int64(len(an.Groups)))
	return nil
}

// hourlyFrom is where Analyze's per-hour distribution starts: HourlyWindow
// before the database's now(), on the hour, or since if later.
func (s *Store) hourlyFrom(ctx context.Context, since time.Time) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("error reading the time: %w", err)
	}
	if from := now.Add(-HourlyWindow).Truncate(time.Hour); since.Before(from) {
		return from, nil
	}
	return since, nil
}

// Hourly counts the rows of status (every status when "") per hour (UTC)
// of failed_at from the hour holding since on, oldest first, hours without
// failures left out, from failed_pois_hourly_counts: it reads one row per
// hour and status, however many rows failed. On a distributed failed_pois,
// which has no counts (citus.CountsTriggers), it counts the rows since the
// hour, on every shard at once.
func (s *Store) Hourly(ctx context.Context, since time.Time, status Status) ([]deadletter.HourCount, error) {
	kept, err := s.countsKept(ctx)
	if err != nil {
		return nil, fmt.Errorf("error counting failures per hour: %w", err)
	}
	if !kept {
		rows, err := s.pool.Query(ctx, `
			SELECT date_trunc('hour', failed_at, 'UTC'), count(*) FROM failed_pois
			WHERE failed_at >= date_trunc('hour', $1::timestamptz, 'UTC') AND ($2 = '' OR status = $2)
			GROUP BY 1 ORDER BY 1`, since, string(status))
		return collectHours(rows, err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT hour, sum(n)::bigint FROM failed_pois_hourly_counts
		WHERE hour >= date_trunc('hour', $1::timestamptz, 'UTC') AND ($2 = '' OR status = $2)
		GROUP BY hour HAVING sum(n) <> 0 ORDER BY hour`, since, string(status))
	return collectHours(rows, err)
}

// analyzeRows is Analyze for any filter: it reads the rows f selects.
func (s *Store) analyzeRows(ctx context.Context, f Filter, top int) (*Report, error) {
	an := &Report{Filter: f.Describe(), Groups: []SignatureGroup{}, Hourly: []deadletter.HourCount{}}
	a, err := s.args(ctx)
	if err != nil {
		return nil, fmt.Errorf("error analyzing failed_pois: %w", err)
	}
	where := f.where(a, "")
	fWhere := f.where(&queryArgs{distributed: a.distributed}, "f.") // same parameters in the same order
	limit := a.add(top)
	// groups are the groups of the rows, and t their total.
	groups := `
		WITH g AS (
			SELECT error_signature, error_class, count(*) AS n, min(failed_at) AS first_seen, max(failed_at) AS last_seen
			FROM failed_pois WHERE ` + where + `
			GROUP BY error_signature, error_class
		), t AS (SELECT coalesce(sum(n), 0)::bigint AS total, count(*) AS groups FROM g)`
	q := groups + `
		SELECT g.error_signature, g.error_class, g.n, g.n::float8 / t.total, g.first_seen, g.last_seen,
		       s.ids, s.poi_ids, t.total, t.groups
		FROM (SELECT * FROM g ORDER BY n DESC, error_signature, error_class LIMIT ` + limit + `) g
		CROSS JOIN t
		CROSS JOIN LATERAL (
			SELECT array_agg(x.id ORDER BY x.failed_at DESC, x.id DESC) AS ids,
			       array_agg(coalesce(x.poi_id, '') ORDER BY x.failed_at DESC, x.id DESC) AS poi_ids
			FROM (SELECT f.id, f.poi_id, f.failed_at FROM failed_pois f
			      WHERE f.error_signature = g.error_signature AND f.error_class = g.error_class AND ` + fWhere + `
			      ORDER BY f.failed_at DESC, f.id DESC LIMIT 3) x
		) s
		ORDER BY g.n DESC, g.error_signature, g.error_class`
	if a.distributed {
		// Citus cannot push the LATERAL's LIMIT per group into the shards
		// ("cannot push down this subquery"): the groups are read without
		// their samples, then each group's samples with a statement of its
		// own (ORDER BY ... LIMIT 3 on every shard, merged), in one round
		// trip.
		q = groups + `
		SELECT g.error_signature, g.error_class, g.n, g.n::float8 / t.total, g.first_seen, g.last_seen,
		       '{}'::bigint[], '{}'::text[], t.total, t.groups
		FROM (SELECT * FROM g ORDER BY n DESC, error_signature, error_class LIMIT ` + limit + `) g
		CROSS JOIN t
		ORDER BY g.n DESC, g.error_signature, g.error_class`
	}
	rows, err := s.pool.Query(ctx, q, a.vals...)
	if err != nil {
		return nil, fmt.Errorf("error analyzing failed_pois: %w", err)
	}
	if err := collectGroups(rows, an); err != nil {
		return nil, err
	}
	if a.distributed && len(an.Groups) > 0 {
		b := &pgx.Batch{}
		for i := range an.Groups {
			g := &an.Groups[i]
			sa := &queryArgs{distributed: true}
			sq := `SELECT id, coalesce(poi_id, '') FROM failed_pois WHERE error_signature = ` + sa.add(g.Signature) +
				` AND error_class = ` + sa.add(string(g.ErrorClass)) + ` AND ` + f.where(sa, "") + ` ORDER BY failed_at DESC, id DESC LIMIT 3`
			b.Queue(sq, sa.vals...).Query(func(rows pgx.Rows) error {
				var id int64
				var poi string
				_, err := pgx.ForEachRow(rows, []any{&id, &poi}, func() error {
					g.SampleRowIDs, g.SamplePOIIDs = append(g.SampleRowIDs, id), append(g.SamplePOIIDs, poi)
					return nil
				})
				return err
			})
		}
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, fmt.Errorf("error analyzing failed_pois: %w", err)
		}
	}

	hf := f
	if hf.Since, err = s.hourlyFrom(ctx, f.Since); err != nil {
		return nil, err
	}
	if !hf.Until.IsZero() && !hf.Since.Before(hf.Until) {
		return an, nil // the window ends before the hourly window starts
	}
	if an.Hourly, err = s.PerHour(ctx, hf); err != nil {
		return nil, err
	}
	return an, nil
}

// PerHour counts the rows matching f per hour (UTC) of failed_at, oldest
// first, hours without failures left out. Bound f.Since: the count reads
// every matching row.
func (s *Store) PerHour(ctx context.Context, f Filter) ([]deadletter.HourCount, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	a, err := s.args(ctx)
	if err != nil {
		return nil, fmt.Errorf("error counting failures per hour: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT date_trunc('hour', failed_at, 'UTC'), count(*) FROM failed_pois WHERE `+f.where(a, "")+`
		GROUP BY 1 ORDER BY 1`, a.vals...)
	return collectHours(rows, err)
}

// Export calls fn for every row matching f, in id order, with every column,
// reading the table in pages by id (each page its own short query) so that a
// million rows are never in memory and no statement runs for long. limit
// caps the rows (0: all). It returns how many rows fn accepted.
func (s *Store) Export(ctx context.Context, f Filter, limit int64, fn func(*Record) error) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	var n, after int64
	for {
		page := deadletter.ExportPageSize(limit, n)
		if page == 0 {
			return n, nil
		}
		a, err := s.args(ctx)
		if err != nil {
			return n, fmt.Errorf("error exporting failed_pois: %w", err)
		}
		q := `SELECT ` + fullColumns + ` FROM failed_pois WHERE ` + f.where(a, "") +
			` AND id > ` + a.add(after) + ` ORDER BY id LIMIT ` + a.add(page)
		rows, err := s.pool.Query(ctx, q, a.vals...)
		if err != nil {
			return n, fmt.Errorf("error exporting failed_pois after id %d: %w", after, err)
		}
		got := 0
		for rows.Next() {
			r, err := scanRecord(rows, true)
			if err == nil {
				err = fn(r)
			}
			if err != nil {
				rows.Close()
				return n, fmt.Errorf("error exporting failed_pois row: %w", err)
			}
			n, after = n+1, r.ID
			got++
		}
		if err := rows.Err(); err != nil {
			return n, fmt.Errorf("error exporting failed_pois after id %d: %w", after, err)
		}
		if int64(got) < page {
			return n, nil
		}
	}
}

// IgnoreResult says what Ignore did with each id.
type IgnoreResult struct {
	Ignored  []int64 `json:"ignored"`
	NotFound []int64 `json:"not_found"`
	// Refused maps ids whose status cannot be ignored (reprocessing: its job
	// owns the row until it reports back; reprocessed: already resolved;
	// superseded: closed) to that status.
	Refused map[int64]Status `json:"refused"`
}

// Ignore sets rows aside: status ignored with reason, so `relay reprocess
// --status new` no longer picks them (`--status ignored` brings them back).
// Rows in new or already ignored are ignored (an ignored row gets the new
// reason); others are refused. One audit event records the ids.
func (s *Store) Ignore(ctx context.Context, ids []int64, reason, actor string) (*IgnoreResult, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, errors.New("a reason is required to ignore failed_pois rows")
	}
	res := &IgnoreResult{Ignored: []int64{}, NotFound: []int64{}, Refused: map[int64]Status{}}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	dist, err := s.layout.Distributed(ctx)
	if err != nil {
		return nil, fmt.Errorf("error ignoring failed_pois rows: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		found, err := lockByID(ctx, tx, ids, dist)
		if err != nil {
			return err
		}
		var repos []string // of res.Ignored
		for _, id := range ids {
			r, ok := found[id]
			switch {
			case !ok:
				res.NotFound = append(res.NotFound, id)
			case r.status == StatusNew || r.status == StatusIgnored:
				res.Ignored, repos = append(res.Ignored, id), append(repos, r.repo)
			default:
				res.Refused[id] = r.status
			}
		}
		if len(res.Ignored) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `
			UPDATE failed_pois f SET status = 'ignored', ignored_reason = $3, updated_at = now()
			FROM unnest($1::text[], $2::bigint[]) AS u(repo, id)
			WHERE f.repository = u.repo AND f.id = u.id`, repos, res.Ignored, deadletter.StorableText(reason)); err != nil {
			return err
		}
		_, err = InsertEventTx(ctx, tx, actor, ActionIgnore, int64(len(res.Ignored)),
			map[string]any{"ids": res.Ignored, "reason": deadletter.StorableText(reason)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error ignoring failed_pois rows: %w", err)
	}
	return res, nil
}

// lockedRow is a row lockByID locked.
type lockedRow struct {
	repo   string
	status Status
}

// lockByID locks the rows of ids (sorted) that exist, in id order, and
// returns their repository and status. On plain PostgreSQL it is one
// statement, through the skip scan of the repositories (everyRepository).
// On a distributed failed_pois, where Citus takes row locks only in a
// statement routed to one shard, it reads the rows' repositories first,
// without locking, then locks each repository's rows (repository = $1), in
// repository order: a row's repository never changes, and a row deleted in
// between is not found.
func lockByID(ctx context.Context, tx pgx.Tx, ids []int64, distributed bool) (map[int64]lockedRow, error) {
	found := map[int64]lockedRow{}
	collect := func(rows pgx.Rows, err error) error {
		if err != nil {
			return err
		}
		var id int64
		var repo, st string
		_, err = pgx.ForEachRow(rows, []any{&repo, &id, &st}, func() error {
			found[id] = lockedRow{repo: repo, status: Status(st)}
			return nil
		})
		return err
	}
	if !distributed {
		err := collect(tx.Query(ctx, `SELECT repository, id, status FROM failed_pois
			WHERE repository = ANY(`+everyRepository+`) AND id = ANY($1) ORDER BY id FOR UPDATE`, ids))
		return found, err
	}
	var repos []string
	if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT repository ORDER BY repository), '{}') FROM failed_pois WHERE id = ANY($1)`,
		ids).Scan(&repos); err != nil {
		return nil, err
	}
	for _, repo := range repos {
		if err := collect(tx.Query(ctx, `SELECT repository, id, status FROM failed_pois
			WHERE repository = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`, repo, ids)); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// PurgeFilter selects rows to purge.
type PurgeFilter struct {
	// OlderThan: rows not updated for this long (updated_at).
	OlderThan time.Duration
	// Status limits the purge to one status; "" purges every status but
	// reprocessing. Rows in reprocessing are never purged: their job would
	// report back about a row that no longer exists.
	Status Status
	// Repository, when set, limits the purge to one repository's rows.
	Repository *string
}

// ErrPurgeReprocessing is returned for a purge of status reprocessing.
var ErrPurgeReprocessing = errors.New("rows in status reprocessing cannot be purged: their jobs have not reported back (see `relay reprocess --status reprocessing` for stuck ones)")

// where renders p for rows last updated before cutoff.
func (p PurgeFilter) where(a *queryArgs, cutoff time.Time) string {
	w := `status <> 'reprocessing' AND updated_at < ` + a.add(cutoff)
	if p.Status != "" {
		w += ` AND status = ` + a.add(string(p.Status))
	}
	if p.Repository != nil {
		w += ` AND repository = ` + a.add(*p.Repository)
	}
	return w
}

// cutoff validates p and returns the database's now() minus p.OlderThan.
func (s *Store) cutoff(ctx context.Context, p PurgeFilter) (time.Time, error) {
	if p.OlderThan <= 0 {
		return time.Time{}, fmt.Errorf("purge age %s must be positive", p.OlderThan)
	}
	if p.Status == StatusReprocessing {
		return time.Time{}, ErrPurgeReprocessing
	}
	if p.Status != "" {
		if _, err := ParseStatus(string(p.Status)); err != nil {
			return time.Time{}, err
		}
	}
	var t time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now() - $1::interval`, p.OlderThan).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("error reading the purge cutoff: %w", err)
	}
	return t, nil
}

// PurgePreview counts, by status, the rows Purge would delete now.
func (s *Store) PurgePreview(ctx context.Context, p PurgeFilter) (map[Status]int64, error) {
	cutoff, err := s.cutoff(ctx, p)
	if err != nil {
		return nil, err
	}
	a := &queryArgs{}
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM failed_pois WHERE `+p.where(a, cutoff)+` GROUP BY status`, a.vals...)
	if err != nil {
		return nil, fmt.Errorf("error counting failed_pois rows to purge: %w", err)
	}
	defer rows.Close()
	out := map[Status]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("error counting failed_pois rows to purge: %w", err)
		}
		out[Status(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error counting failed_pois rows to purge: %w", err)
	}
	return out, nil
}

// purgeBatch is how many rows Purge deletes per transaction.
const purgeBatch = 5000

// Purge deletes the rows p selects, in batches of purgeBatch rows per
// transaction (so it never holds many locks for long). One audit event
// records the run; its count grows with each batch, in the batch's
// transaction. It returns how many rows were deleted; after an error, the
// batches already committed stay deleted and are counted in the event.
func (s *Store) Purge(ctx context.Context, p PurgeFilter, actor string) (int64, error) {
	cutoff, err := s.cutoff(ctx, p)
	if err != nil {
		return 0, err
	}
	details := map[string]any{"older_than": p.OlderThan.String(), "updated_before": cutoff.UTC()}
	if p.Status != "" {
		details["status"] = p.Status
	}
	var event int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		event, err = InsertEventTx(ctx, tx, actor, ActionPurge, 0, details)
		return err
	})
	if err != nil {
		return 0, err
	}
	// The cutoff is fixed for the whole run: rows aging past it while the
	// run goes on are left for the next one.
	a := &queryArgs{}
	w := p.where(a, cutoff)
	limit := a.add(purgeBatch)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `
				DELETE FROM failed_pois WHERE id IN (
					SELECT id FROM failed_pois WHERE `+w+` LIMIT `+limit+` FOR UPDATE SKIP LOCKED)`,
				a.vals...)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
			if n == 0 {
				return nil
			}
			return addToEventTx(ctx, tx, event, n, nil)
		})
		if err != nil {
			return total, fmt.Errorf("error purging failed_pois (%d rows deleted before): %w", total, err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}

// collectHours reads the (hour, count) rows of a query (rows, err are its
// results), hours in UTC.
func collectHours(rows pgx.Rows, err error) ([]deadletter.HourCount, error) {
	if err == nil {
		var out []deadletter.HourCount
		out, err = pgx.AppendRows(make([]deadletter.HourCount, 0), rows, func(row pgx.CollectableRow) (deadletter.HourCount, error) {
			var h deadletter.HourCount
			err := row.Scan(&h.Hour, &h.Count)
			h.Hour = h.Hour.UTC()
			return h, err
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("error counting failures per hour: %w", err)
}
