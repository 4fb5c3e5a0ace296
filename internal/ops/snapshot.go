// Package ops is what an on-call engineer sees of relay without opening psql:
// the state of the queues and dead-letter tables (Snapshot, Activity),
// Prometheus metrics, and the worker's health endpoints.
package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/citus"
)

// State is a point-in-time view of relay's queues and dead-letter tables.
type State struct {
	At time.Time `json:"at"`
	// Repository, when set (RepositorySnapshot), is the repository
	// FailedPOIs, OldestNewFailedPOI and PublishQueue.Rejected count ("" the
	// default one). Jobs and the queued analyses of PublishQueue stay every
	// repository's (River's tables are shared, and the publish queue is
	// drained into them), as do DeadLetteredItems (MapReduce items belong
	// to no repository).
	Repository *string `json:"repository,omitempty"`
	// FailedPOIs counts failed_pois rows by status (every status present).
	FailedPOIs map[string]int64 `json:"failed_pois"`
	// OldestNewFailedPOI is the failed_at of the oldest row in status new.
	OldestNewFailedPOI *time.Time `json:"oldest_new_failed_poi,omitempty"`
	// DeadLetteredItems counts dead_lettered_items rows by status.
	DeadLetteredItems map[string]int64 `json:"dead_lettered_items"`
	// Jobs counts River jobs by queue and state.
	Jobs []JobCount `json:"jobs"`
	// PublishQueue is the SQL publish API's queue (relay_publish).
	PublishQueue PublishQueue `json:"publish_queue"`
}

// PublishQueue is the state of the analyses published through the SQL API:
// queued for a worker to publish, and rejected by the publisher.
type PublishQueue struct {
	Queued int64 `json:"queued"`
	// OldestQueued is the queued_at of the oldest queued analysis.
	OldestQueued *time.Time `json:"oldest_queued,omitempty"`
	// Rejected counts rejected_analyses rows.
	Rejected int64 `json:"rejected"`
}

// JobCount is the number of River jobs in one queue and state.
type JobCount struct {
	Queue string `json:"queue"`
	State string `json:"state"`
	Count int64  `json:"count"`
}

// NewFailedPOIs is the number of failed POIs waiting for attention.
func (s *State) NewFailedPOIs() int64 { return s.FailedPOIs["new"] }

// DeadLettered is the number of dead-lettered items not yet reprocessed.
func (s *State) DeadLettered() int64 {
	return s.DeadLetteredItems["dead_lettered"]
}

// QueueDepth is the number of jobs waiting or running in queue ("" for all).
func (s *State) QueueDepth(queue string) int64 {
	var n int64
	for _, j := range s.Jobs {
		if (queue == "" || j.Queue == queue) && (j.State == "available" || j.State == "running" || j.State == "retryable" || j.State == "scheduled" || j.State == "pending") {
			n += j.Count
		}
	}
	return n
}

// statuses lists the values each status CHECK allows, so absent ones show
// as zero rather than disappearing.
var (
	failedPOIStatuses    = []string{"new", "reprocessing", "reprocessed", "ignored", "superseded"}
	deadLetteredStatuses = []string{"dead_lettered", "reprocessing", "reprocessed", "ignored"}
)

// Snapshot reads State in one round trip of cheap aggregate queries (each
// uses an index on status or River's state index; failed_pois by status
// sums the deltas in failed_pois_counts instead of counting the rows; the
// publish queue is drained continuously, so counting it stays cheap).
func Snapshot(ctx context.Context, pool *pgxpool.Pool) (*State, error) {
	return snapshot(ctx, pool, nil)
}

// RepositorySnapshot is Snapshot with the failed POIs and rejected
// analyses of one repository only ("" the default one), counted from the
// rows (the counts table Snapshot reads has no repository); the queues and
// dead_lettered_items stay global (State.Repository).
func RepositorySnapshot(ctx context.Context, pool *pgxpool.Pool, repository string) (*State, error) {
	return snapshot(ctx, pool, &repository)
}

// snapshot is Snapshot, of one repository's dead letters when repository
// is set.
func snapshot(ctx context.Context, pool *pgxpool.Pool, repository *string) (*State, error) {
	st := &State{Repository: repository, FailedPOIs: map[string]int64{}, DeadLetteredItems: map[string]int64{}}
	// where and and are the repository's condition ($1) of a query of
	// failed_pois or rejected_analyses, args its value.
	where, and, args := "", "", []any(nil)
	dist, err := citus.TablesDistributed(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("error reading relay state: %w", err)
	}
	failedByStatus := `SELECT 'failed_pois', status, sum(n)::bigint FROM failed_pois_counts GROUP BY status`
	if dist {
		// A distributed failed_pois has no counts (citus.CountsTriggers):
		// its rows are counted, on every shard at once.
		failedByStatus = `SELECT 'failed_pois', status, count(*) FROM failed_pois GROUP BY status`
	}
	if repository != nil {
		where, and, args = ` WHERE repository = $1`, ` AND repository = $1`, []any{*repository}
		failedByStatus = `SELECT 'failed_pois', status, count(*) FROM failed_pois WHERE repository = $1 GROUP BY status`
	}
	for _, s := range failedPOIStatuses {
		st.FailedPOIs[s] = 0
	}
	for _, s := range deadLetteredStatuses {
		st.DeadLetteredItems[s] = 0
	}
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&st.At); err != nil {
		return nil, fmt.Errorf("error reading relay state: %w", err)
	}
	rows, err := pool.Query(ctx, failedByStatus+`
		UNION ALL
		SELECT 'dead_lettered_items', status, count(*) FROM dead_lettered_items GROUP BY status`, args...)
	if err != nil {
		return nil, fmt.Errorf("error counting dead letters: %w", err)
	}
	for rows.Next() {
		var table, status string
		var n int64
		if err := rows.Scan(&table, &status, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error counting dead letters: %w", err)
		}
		if table == "failed_pois" {
			st.FailedPOIs[status] = n
		} else {
			st.DeadLetteredItems[status] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error counting dead letters: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT min(failed_at) FROM failed_pois WHERE status = 'new'`+and, args...).Scan(&st.OldestNewFailedPOI); err != nil {
		return nil, fmt.Errorf("error reading the oldest new failed POI: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM publish_queue), (SELECT min(queued_at) FROM publish_queue),
		(SELECT count(*) FROM rejected_analyses`+where+`)`, args...).
		Scan(&st.PublishQueue.Queued, &st.PublishQueue.OldestQueued, &st.PublishQueue.Rejected); err != nil {
		return nil, fmt.Errorf("error reading the publish queue: %w", err)
	}
	rows, err = pool.Query(ctx, `SELECT queue, state::text, count(*) FROM river_job GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("error counting River jobs: %w", err)
	}
	for rows.Next() {
		var j JobCount
		if err := rows.Scan(&j.Queue, &j.State, &j.Count); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error counting River jobs: %w", err)
		}
		st.Jobs = append(st.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error counting River jobs: %w", err)
	}
	return st, nil
}

// Activity is what happened recently: throughput and why things failed.
type Activity struct {
	// Repository, when set (RepositoryActivity), is the repository whose
	// failed POIs PerMinute's POIsFailed, TopSignatures and FailuresPerHour
	// count ("" the default one); the jobs and Freshness are of every
	// repository (River's tables are shared).
	Repository *string `json:"repository,omitempty"`
	// PerMinute is, for each of the last minutes (oldest first), River jobs
	// completed and discarded, and POIs dead-lettered.
	PerMinute []MinuteCount `json:"per_minute"`
	// TopSignatures are the most frequent error signatures of new failed POIs.
	TopSignatures []SignatureCount `json:"top_signatures"`
	// FailuresPerHour counts failed POIs per hour over the last 24 hours
	// (oldest first).
	FailuresPerHour []deadletter.HourCount `json:"failures_per_hour"`
	// Freshness is how long publishes took to be final over the same
	// minutes.
	Freshness Freshness `json:"freshness"`
}

// Freshness is the time from a publish until the link round that made its
// relationships final committed (docs/design.md, "Resolution protocol"):
// the median and 99th percentile over Jobs publishes.
type Freshness struct {
	Jobs       int64   `json:"jobs"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
}

// P50 and P99 are the percentiles as durations, to the millisecond.
func (f Freshness) P50() time.Duration { return toMillisecond(f.P50Seconds) }
func (f Freshness) P99() time.Duration { return toMillisecond(f.P99Seconds) }

func toMillisecond(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}

// MinuteCount is one minute's throughput.
type MinuteCount struct {
	Minute        time.Time `json:"minute"`
	JobsCompleted int64     `json:"jobs_completed"`
	JobsDiscarded int64     `json:"jobs_discarded"`
	POIsFailed    int64     `json:"pois_failed"`
}

// SignatureCount is how often one error signature occurs.
type SignatureCount struct {
	Signature  string `json:"signature"`
	ErrorClass string `json:"error_class"`
	Count      int64  `json:"count"`
}

// RecentActivity reads Activity for the last minutes minutes (throughput)
// and the last 24 hours (failures per hour), with the top n signatures.
func RecentActivity(ctx context.Context, pool *pgxpool.Pool, minutes, n int) (*Activity, error) {
	return recentActivity(ctx, pool, nil, minutes, n)
}

// RepositoryActivity is RecentActivity with the failed POIs of one
// repository only ("" the default one), counted from its rows (the counts
// per signature and per hour RecentActivity reads have no repository); the
// jobs and the freshness stay global (Activity.Repository).
func RepositoryActivity(ctx context.Context, pool *pgxpool.Pool, repository string, minutes, n int) (*Activity, error) {
	return recentActivity(ctx, pool, &repository, minutes, n)
}

// recentActivity is RecentActivity, of one repository's failed POIs when
// repository is set.
func recentActivity(ctx context.Context, pool *pgxpool.Pool, repository *string, minutes, n int) (*Activity, error) {
	act := &Activity{Repository: repository}
	// failedSince is failed_pois' rows since $1, of the repository ($2)
	// when one is set.
	failedSince, args := `failed_pois WHERE failed_at >= $1`, []any(nil)
	if repository != nil {
		failedSince, args = `failed_pois WHERE failed_at >= $1 AND repository = $2`, []any{*repository}
	}
	// One pass over each table's recent rows (indexed by time), bucketed per
	// minute; minutes without activity are filled in below.
	since := time.Now().Truncate(time.Minute).Add(-time.Duration(minutes-1) * time.Minute)
	byMinute := map[int64]*MinuteCount{}
	for i := range minutes {
		m := since.Add(time.Duration(i) * time.Minute)
		act.PerMinute = append(act.PerMinute, MinuteCount{Minute: m})
	}
	for i := range act.PerMinute {
		byMinute[act.PerMinute[i].Minute.Unix()] = &act.PerMinute[i]
	}
	rows, err := pool.Query(ctx, `
		SELECT date_trunc('minute', finalized_at), count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state = 'discarded')
		FROM river_job WHERE finalized_at >= $1 GROUP BY 1
		UNION ALL
		SELECT date_trunc('minute', failed_at), 0, -count(*) FROM `+failedSince+` GROUP BY 1`, append([]any{since}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("error reading throughput: %w", err)
	}
	for rows.Next() {
		var minute time.Time
		var completed, other int64
		if err := rows.Scan(&minute, &completed, &other); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error reading throughput: %w", err)
		}
		c := byMinute[minute.Unix()]
		if c == nil {
			continue
		}
		c.JobsCompleted += completed
		if other < 0 {
			c.POIsFailed += -other
		} else {
			c.JobsDiscarded += other
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading throughput: %w", err)
	}

	if err := pool.QueryRow(ctx, `
		SELECT count(*), coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY f), 0),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY f), 0)
		FROM link_rounds CROSS JOIN LATERAL unnest(freshness_seconds) AS f WHERE linked_at >= $1`, since).
		Scan(&act.Freshness.Jobs, &act.Freshness.P50Seconds, &act.Freshness.P99Seconds); err != nil {
		return nil, fmt.Errorf("error reading freshness: %w", err)
	}

	// The counts per signature and per hour are sums of the deltas in
	// failed_pois_signature_counts and failed_pois_hourly_counts
	// (migration 17), not counts of the rows.
	// One repository's are counted from its rows, and every repository's on
	// a distributed failed_pois, which has no counts (citus.CountsTriggers).
	dist, err := citus.TablesDistributed(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("error reading top signatures: %w", err)
	}
	topSignatures := `
		SELECT error_signature, min(error_class), sum(n)::bigint FROM (
			SELECT error_signature, error_class, sum(n) AS n FROM failed_pois_signature_counts WHERE status = 'new'
			GROUP BY 1, 2 HAVING sum(n) > 0) c
		GROUP BY error_signature ORDER BY sum(n) DESC, error_signature LIMIT $1`
	switch {
	case repository != nil:
		topSignatures = `
			SELECT error_signature, min(error_class), count(*) FROM failed_pois WHERE status = 'new' AND repository = $2
			GROUP BY error_signature ORDER BY count(*) DESC, error_signature LIMIT $1`
	case dist:
		topSignatures = `
			SELECT error_signature, min(error_class), count(*) FROM failed_pois WHERE status = 'new'
			GROUP BY error_signature ORDER BY count(*) DESC, error_signature LIMIT $1`
	}
	rows, err = pool.Query(ctx, topSignatures, append([]any{n}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("error reading top signatures: %w", err)
	}
	for rows.Next() {
		var s SignatureCount
		if err := rows.Scan(&s.Signature, &s.ErrorClass, &s.Count); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error reading top signatures: %w", err)
		}
		act.TopSignatures = append(act.TopSignatures, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading top signatures: %w", err)
	}

	firstHour := time.Now().Truncate(time.Hour).Add(-23 * time.Hour)
	for i := range 24 {
		act.FailuresPerHour = append(act.FailuresPerHour, deadletter.HourCount{Hour: firstHour.Add(time.Duration(i) * time.Hour)})
	}
	perHour := `SELECT hour, sum(n)::bigint FROM failed_pois_hourly_counts WHERE hour >= $1 GROUP BY 1`
	if repository != nil || dist {
		perHour = `SELECT date_trunc('hour', failed_at, 'UTC'), count(*) FROM ` + failedSince + ` GROUP BY 1`
	}
	rows, err = pool.Query(ctx, perHour, append([]any{firstHour}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("error reading failures per hour: %w", err)
	}
	for rows.Next() {
		var hour time.Time
		var n int64
		if err := rows.Scan(&hour, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error reading failures per hour: %w", err)
		}
		if i := int(hour.Sub(firstHour) / time.Hour); i >= 0 && i < len(act.FailuresPerHour) {
			act.FailuresPerHour[i].Count += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading failures per hour: %w", err)
	}
	return act, nil
}
