package ops

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// Metric names relay exports. The dashboards and alert rules under deploy/
// may use only these (a test checks).
const (
	MetricPOIsResolved         = "relay_pois_resolved_total"
	MetricPOIsFailed           = "relay_pois_failed_total"
	MetricBatches              = "relay_batches_total"
	MetricBatchDuration        = "relay_batch_duration_seconds"
	MetricRelationshipsWritten = "relay_relationships_written_total"
	MetricReferencesReresolved = "relay_references_reresolved_total"
	MetricFreshness            = "relay_freshness_seconds"
	MetricFailedPOIs           = "relay_failed_pois"
	MetricDeadLetteredItems    = "relay_dead_lettered_items"
	MetricOldestNewFailedPOI   = "relay_oldest_new_failed_poi_age_seconds"
	MetricRiverJobs            = "relay_river_jobs"
	MetricScrapeErrors         = "relay_state_scrape_errors_total"
	MetricPublishQueue         = "relay_publish_queue"
	MetricPublishQueueOldest   = "relay_publish_queue_oldest_seconds"
	MetricRejectedAnalyses     = "relay_rejected_analyses"
)

// Metrics holds relay's Prometheus collectors in their own registry (no
// global state). It is the worker's Observer: every finished batch updates
// the counters; the dead-letter and queue gauges are read from the database
// at scrape time, at most once per refresh interval.
type Metrics struct {
	Registry *prometheus.Registry

	resolved      prometheus.Counter
	failed        *prometheus.CounterVec
	batches       *prometheus.CounterVec
	duration      prometheus.Histogram
	relationships prometheus.Counter
	reresolved    prometheus.Counter
	freshness     prometheus.Histogram
}

// NewMetrics registers relay's metrics, the Go runtime's and the process's,
// and a collector that reads State from pool (nil: no database gauges).
func NewMetrics(pool *pgxpool.Pool, refresh time.Duration, logger *slog.Logger) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		resolved: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPOIsResolved,
			Help: "POIs resolved successfully."}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPOIsFailed,
			Help: "POIs dead-lettered to failed_pois, by error class."}, []string{"error_class"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricBatches,
			Help: "resolve_file batches worked, by outcome (completed, superseded, failed)."}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricBatchDuration,
			Help:    "Time to work one resolve_file batch, including its transaction.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		relationships: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricRelationshipsWritten,
			Help: "Relationships written."}),
		reresolved: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricReferencesReresolved,
			Help: "Other files' references resolved again because a publish changed a name they look up after they were resolved."}),
	}
	m.freshness = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricFreshness,
		Help:    "Time from a publish until the link round that made its relationships final committed.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)})
	m.Registry.MustRegister(m.resolved, m.failed, m.batches, m.duration, m.relationships, m.reresolved, m.freshness,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range []string{"validation", "panic", "timeout", "resolver", "storage"} {
		m.failed.WithLabelValues(c)
	}
	for _, o := range []string{"completed", "superseded", "failed"} {
		m.batches.WithLabelValues(o)
	}
	if pool != nil {
		m.Registry.MustRegister(newStateCollector(pool, refresh, logger))
	}
	return m
}

var _ worker.Observer = (*Metrics)(nil)

// BatchDone records a finished batch.
func (m *Metrics) BatchDone(sum *resolvefile.BatchSummary) {
	outcome := "completed"
	if sum.Superseded {
		outcome = "superseded"
	}
	m.batches.WithLabelValues(outcome).Inc()
	m.duration.Observe(sum.Duration.Seconds())
	m.resolved.Add(float64(sum.Resolved))
	for class, n := range sum.FailedByClass {
		m.failed.WithLabelValues(string(class)).Add(float64(n))
	}
}

// Linked records a committed link round.
func (m *Metrics) Linked(sum *link.Summary) {
	for _, f := range sum.Final {
		m.freshness.Observe(f.Freshness.Seconds())
	}
	m.reresolved.Add(float64(sum.Reresolved))
	m.relationships.Add(float64(sum.Relationships))
}

// BatchFailed records a batch whose transaction failed (River retries it).
func (m *Metrics) BatchFailed(time.Duration) { m.batches.WithLabelValues("failed").Inc() }

// Names lists every metric relay itself defines.
func Names() []string {
	return []string{MetricPOIsResolved, MetricPOIsFailed, MetricBatches, MetricBatchDuration, MetricRelationshipsWritten, MetricReferencesReresolved, MetricFreshness,
		MetricFailedPOIs, MetricDeadLetteredItems, MetricOldestNewFailedPOI, MetricRiverJobs, MetricScrapeErrors,
		MetricPublishQueue, MetricPublishQueueOldest, MetricRejectedAnalyses}
}

// stateCollector exports State as gauges, caching it for refresh so that
// frequent scrapes cost one set of queries per interval.
type stateCollector struct {
	pool    *pgxpool.Pool
	refresh time.Duration
	logger  *slog.Logger

	failedPOIs, deadLettered, oldest, jobs, scrapeErrors *prometheus.Desc
	queued, queuedOldest, rejected                       *prometheus.Desc

	mu             sync.Mutex
	cached         *State
	readAt         time.Time
	scrapeFailures float64
}

func newStateCollector(pool *pgxpool.Pool, refresh time.Duration, logger *slog.Logger) *stateCollector {
	return &stateCollector{
		pool: pool, refresh: refresh, logger: logger,
		failedPOIs:   prometheus.NewDesc(MetricFailedPOIs, "Rows in failed_pois, by status.", []string{"status"}, nil),
		deadLettered: prometheus.NewDesc(MetricDeadLetteredItems, "Rows in dead_lettered_items, by status.", []string{"status"}, nil),
		oldest: prometheus.NewDesc(MetricOldestNewFailedPOI,
			"Age of the oldest failed_pois row in status new (0 when there is none).", nil, nil),
		jobs:         prometheus.NewDesc(MetricRiverJobs, "River jobs, by queue and state.", []string{"queue", "state"}, nil),
		scrapeErrors: prometheus.NewDesc(MetricScrapeErrors, "Failed reads of relay's state from the database.", nil, nil),
		queued:       prometheus.NewDesc(MetricPublishQueue, "Analyses queued by the SQL publish API (relay_publish), not yet published.", nil, nil),
		queuedOldest: prometheus.NewDesc(MetricPublishQueueOldest,
			"Age of the oldest analysis queued by the SQL publish API (0 when there is none).", nil, nil),
		rejected: prometheus.NewDesc(MetricRejectedAnalyses, "Rows in rejected_analyses: SQL-published analyses the publisher rejected.", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.failedPOIs, c.deadLettered, c.oldest, c.jobs, c.scrapeErrors, c.queued, c.queuedOldest, c.rejected} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached == nil || time.Since(c.readAt) >= c.refresh {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := Snapshot(ctx, c.pool)
		cancel()
		if err != nil {
			c.scrapeFailures++
			c.logger.Warn("could not read relay state for metrics", slog.String("error", err.Error()))
		} else {
			c.cached, c.readAt = st, time.Now()
		}
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeErrors, prometheus.CounterValue, c.scrapeFailures)
	st := c.cached
	if st == nil {
		return
	}
	for status, n := range st.FailedPOIs {
		ch <- prometheus.MustNewConstMetric(c.failedPOIs, prometheus.GaugeValue, float64(n), status)
	}
	for status, n := range st.DeadLetteredItems {
		ch <- prometheus.MustNewConstMetric(c.deadLettered, prometheus.GaugeValue, float64(n), status)
	}
	age := 0.0
	if st.OldestNewFailedPOI != nil {
		age = st.At.Sub(*st.OldestNewFailedPOI).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
	queuedAge := 0.0
	if st.PublishQueue.OldestQueued != nil {
		queuedAge = max(0, st.At.Sub(*st.PublishQueue.OldestQueued).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(st.PublishQueue.Queued))
	ch <- prometheus.MustNewConstMetric(c.queuedOldest, prometheus.GaugeValue, queuedAge)
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.GaugeValue, float64(st.PublishQueue.Rejected))
	// The resolve queue's backlog states always have a series (0 when
	// empty), so alerts on them see "no backlog" rather than "no data".
	seen := map[[2]string]bool{}
	for _, j := range st.Jobs {
		seen[[2]string{j.Queue, j.State}] = true
		ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(j.Count), j.Queue, j.State)
	}
	for _, state := range []string{"available", "running", "retryable", "scheduled"} {
		if !seen[[2]string{outbox.QueueResolve, state}] {
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, 0, outbox.QueueResolve, state)
		}
	}
}
