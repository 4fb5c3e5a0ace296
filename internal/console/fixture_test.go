package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// fixture is a console over a test's own database, served by httptest.
type fixture struct {
	db   *testdb.DB
	cfg  *config.Config
	jobs *river.Client[pgx.Tx]
	srv  *httptest.Server
}

func newFixture(t *testing.T, edit func(*console.Config)) *fixture {
	t.Helper()
	db := testdb.New(t)
	cfg := db.Config()
	cfg.MapReduceWorkdir = t.TempDir()
	if os.Geteuid() == 0 {
		// relay runs no agent as root: the items run as nobody, who must
		// reach the workdir.
		cfg.AgentUser = "nobody"
		tmp := filepath.Clean(os.TempDir()) + string(os.PathSeparator)
		for p := cfg.MapReduceWorkdir; strings.HasPrefix(p, tmp); p = filepath.Dir(p) {
			require.NoError(t, os.Chmod(p, 0o711))
		}
	}
	logger := testdb.Logger(t)
	jobs, err := worker.NewInsertClient(db.Pool, worker.ConfigFrom(cfg), logger)
	require.NoError(t, err)
	cc := console.Config{Pool: db.Pool, Jobs: jobs, HeartbeatTimeout: cfg.WorkerHeartbeatTimeout,
		Database: config.RedactURL(db.URL), Logger: logger}
	if edit != nil {
		edit(&cc)
	}
	c, err := console.New(cc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, c.Start(ctx))
	srv := httptest.NewServer(c)
	t.Cleanup(func() {
		srv.Close()
		cancel()
	})
	return &fixture{db: db, cfg: cfg, jobs: jobs, srv: srv}
}

func (f *fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := f.db.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// seedFailed inserts n failed_pois rows straight into the table: file
// f<i%3> (the files exist: a reprocess closes the rows of a file that does
// not), signature "failure cause <a..d>", class validation, row i failed
// i minutes ago.
func (f *fixture) seedFailed(t *testing.T, n int) {
	t.Helper()
	f.exec(t, `INSERT INTO files (file_id) VALUES ('f0'), ('f1'), ('f2') ON CONFLICT DO NOTHING`)
	f.exec(t, `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_class,
		                         error_signature, error_history, original_poi_data)
		SELECT 1000 + i, 'f' || (i % 3), 'p' || i, 0, now() - make_interval(mins => i),
		       'failure cause ' || chr(97 + i % 4), 'validation', 'failure cause ' || chr(97 + i % 4), '[]',
		       jsonb_build_object('id', 'p' || i, 'type', 'function_definition', 'name', 'n' || i, 'lineNumber', 'x')
		FROM generate_series(1, $1) AS i`, n)
}

// poi is a POI's JSON; a string line makes it fail validation.
func poi(id, name, file string, line any) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"id": id, "type": "function_definition", "name": name, "filePath": file,
		"lineNumber": line, "rawCode": "func " + name + "() {}"})
	return raw
}

func (f *fixture) publish(t *testing.T, fileID string, pois ...json.RawMessage) {
	t.Helper()
	pub := outbox.New(f.jobs, nil, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(context.Background(), f.db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishTx(context.Background(), tx, outbox.Analysis{FileID: fileID, POIs: pois})
		return err
	}))
}

// work runs the production worker (every queue, MapReduce's agents
// included, as relay worker runs it) until no job is left.
func (f *fixture) work(t *testing.T) {
	t.Helper()
	logger := testdb.Logger(t)
	mr := mapreduce.WorkerConfig{Parallel: f.cfg.MapReduceParallel, Workdir: f.cfg.MapReduceWorkdir}
	if f.cfg.AgentUser != "" {
		u, err := agent.LookupUser(f.cfg.AgentUser)
		require.NoError(t, err)
		mr.User = u
	}
	wcfg := worker.ConfigFrom(f.cfg)
	wcfg.Extensions = []worker.Extension{mapreduce.NewAgents(mr)}
	w, err := worker.New(f.db.Pool, wcfg, logger)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, w.RunUntilIdle(ctx, nil))
}

// seedDeadLettered registers MapReduce job jobID (agent "true") with
// itemIDs, and puts each item in dead_lettered_items as if its attempts
// had failed: a retry then succeeds.
func (f *fixture) seedDeadLettered(t *testing.T, jobID string, itemIDs ...string) {
	t.Helper()
	ctx := context.Background()
	job := &mapreduce.Job{ID: jobID, Agent: "true", MaxRetries: 1, Parallel: 1, Timeout: time.Minute, DLQMaxItems: 100,
		Policy: mapreduce.DefaultPolicy()}
	in := make([]mapreduce.Item, len(itemIDs))
	for i, id := range itemIDs {
		in[i] = mapreduce.Item{ID: id, Position: i, Data: json.RawMessage(`{"id":"` + id + `"}`)}
	}
	store := items.NewStore(f.db.Pool, testdb.Logger(t))
	require.NoError(t, pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		if err := mapreduce.NewStore(f.db.Pool).CreateTx(ctx, tx, f.jobs, job, in); err != nil {
			return err
		}
		// The items' first River jobs are gone: they were the attempts that
		// failed.
		if _, err := tx.Exec(ctx, `DELETE FROM river_job WHERE kind = $1`, mapreduce.Kind); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE mapreduce_items SET status = 'dead_lettered', attempts = 2, finished_at = now()
			WHERE job_id = $1`, jobID); err != nil {
			return err
		}
		t0 := time.Now().Add(-time.Hour)
		for _, id := range itemIDs {
			code := 3
			hist := []agent.FailureDetail{{AttemptNumber: 1, Timestamp: t0, ErrorType: agent.ErrorTypeCommandFailed, ExitCode: &code,
				ErrorMessage: "agent exited with code 3", LogLocation: "/var/log/relay/" + id + "-1.log", DurationMS: 40},
				{AttemptNumber: 2, Timestamp: t0.Add(time.Minute), ErrorType: agent.ErrorTypeTimeout,
					ErrorMessage: "agent timed out after 1m0s", LogLocation: "/var/log/relay/" + id + "-2.log", DurationMS: 60000}}
			it := items.NewItem(jobID, id, json.RawMessage(`{"id":"`+id+`"}`), hist)
			if _, err := store.AddTx(ctx, tx, &it, 100, "relay-worker"); err != nil {
				return err
			}
		}
		return nil
	}))
}

// get fetches path and returns the status and body.
func (f *fixture) get(t *testing.T, path string, edit ...func(*http.Request)) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	require.NoError(t, err)
	for _, e := range edit {
		e(req)
	}
	return f.do(t, req)
}

func (f *fixture) post(t *testing.T, path string, form url.Values, edit ...func(*http.Request)) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, e := range edit {
		e(req)
	}
	return f.do(t, req)
}

func (f *fixture) do(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token reads the CSRF token from a page of the console.
func (f *fixture) token(t *testing.T, edit ...func(*http.Request)) string {
	t.Helper()
	code, body, _ := f.get(t, "/failed", edit...)
	require.Equal(t, http.StatusOK, code, body)
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "no CSRF token on the page")
	return m[1]
}

var (
	rowRE  = regexp.MustCompile(`<tr id="row-(\d+)">`)
	nextRE = regexp.MustCompile(`href="/failed\?([^"]+)" id="next"`)
)

func htmlUnescape(s string) string { return strings.ReplaceAll(s, "&amp;", "&") }
