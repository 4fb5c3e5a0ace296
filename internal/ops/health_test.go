package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

type healthBundle struct {
	db      *testdb.DB
	metrics *ops.Metrics
	river   bool
	srv     *httptest.Server
}

func setupHealth(t *testing.T, maxNew int64) *healthBundle {
	t.Helper()
	b := &healthBundle{db: testdb.New(t), river: true}
	b.metrics = ops.NewMetrics(b.db.Pool, 0, testdb.Logger(t))
	h := ops.NewHealth(ops.HealthConfig{
		Pool: b.db.Pool,
		MigrationsPending: func(ctx context.Context) (bool, error) {
			m, err := migrations.New(b.db.Pool, b.db.Schema, testdb.Logger(t))
			if err != nil {
				return false, err
			}
			defer m.Close()
			return m.Pending(ctx)
		},
		RiverRunning:         func() bool { return b.river },
		MaxNewFailedPOIs:     maxNew,
		MaxDeadLetteredItems: 10,
		Metrics:              b.metrics,
		Logger:               testdb.Logger(t),
	})
	b.srv = httptest.NewServer(h.Handler())
	t.Cleanup(b.srv.Close)
	return b
}

func (b *healthBundle) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(b.srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func (b *healthBundle) readyz(t *testing.T) (int, ops.Readiness) {
	t.Helper()
	code, body := b.get(t, "/readyz")
	var rd ops.Readiness
	require.NoError(t, json.Unmarshal([]byte(body), &rd), body)
	return code, rd
}

func addFailedPOIs(t *testing.T, db *testdb.DB, n int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	rows := make([]failed.POI, n)
	for i := range rows {
		rows[i] = failed.POI{JobID: 1, FileID: "src/a.js", POIID: fmt.Sprintf("p%d", i), POIIndex: i, Class: failed.ClassValidation,
			Message: "name is required", Data: json.RawMessage(`{"id":"p"}`), FailedAt: time.Now().Add(-time.Hour)}
	}
	_, err = failed.InsertTx(ctx, tx, rows)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
}

func TestHealth_ReadyOKThenDegradedThenUnavailable(t *testing.T) {
	t.Parallel()
	b := setupHealth(t, 2)

	code, body := b.get(t, "/healthz")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok"}`, body)

	code, rd := b.readyz(t)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, ops.StatusOK, rd.Status)
	require.True(t, rd.Checks["database"].OK)
	require.True(t, rd.Checks["migrations"].OK)
	require.True(t, rd.Checks["river"].OK)

	addFailedPOIs(t, b.db, 3)
	code, rd = b.readyz(t)
	require.Equal(t, http.StatusOK, code, "degraded still serves traffic")
	require.Equal(t, ops.StatusDegraded, rd.Status)
	require.Equal(t, int64(3), rd.DeadLetters.NewFailedPOIs)
	require.Contains(t, rd.Reasons[0], "3 new failed POIs (threshold 2)")

	b.river = false
	code, rd = b.readyz(t)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, ops.StatusUnavailable, rd.Status)
	require.False(t, rd.Checks["river"].OK)
}

func TestHealth_PendingMigrationsMakeItUnavailable(t *testing.T) {
	t.Parallel()
	b := setupHealth(t, 100)
	m, err := migrations.New(b.db.Pool, b.db.Schema, testdb.Logger(t))
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Down(context.Background())
	require.NoError(t, err)

	code, rd := b.readyz(t)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.False(t, rd.Checks["migrations"].OK)
	require.Contains(t, rd.Checks["migrations"].Error, "relay migrate up")
}

func TestMetrics_ExportEveryNameWithBatchAndDatabaseValues(t *testing.T) {
	t.Parallel()
	b := setupHealth(t, 100)
	addFailedPOIs(t, b.db, 2)
	b.metrics.BatchDone(&resolvefile.BatchSummary{POIs: 5, Resolved: 4, Failed: 1, Duration: 20 * time.Millisecond,
		FailedByClass: map[failed.ErrorClass]int{failed.ClassTimeout: 1}})
	b.metrics.Linked(&link.Summary{Rows: 1, Relationships: 7, Reresolved: 3,
		Final: []link.Final{{FileID: "a.go", Freshness: 250 * time.Millisecond}}})
	b.metrics.BatchFailed(time.Second)

	code, body := b.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, name := range ops.Names() {
		require.Contains(t, body, "\n"+name, "metric %s missing from /metrics", name)
	}
	for _, line := range []string{
		`relay_pois_resolved_total 4`,
		`relay_pois_failed_total{error_class="timeout"} 1`,
		`relay_relationships_written_total 7`,
		`relay_references_reresolved_total 3`,
		`relay_freshness_seconds_count 1`,
		`relay_batches_total{outcome="completed"} 1`,
		`relay_batches_total{outcome="failed"} 1`,
		`relay_failed_pois{status="new"} 2`,
		`relay_dead_lettered_items{status="dead_lettered"} 0`,
		`relay_batch_duration_seconds_count 1`,
	} {
		require.Contains(t, body, line)
	}
	var age string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "relay_oldest_new_failed_poi_age_seconds ") {
			age = l
		}
	}
	require.NotEmpty(t, age)
	require.NotEqual(t, "relay_oldest_new_failed_poi_age_seconds 0", age, "two rows failed an hour ago")
}
