package failed_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// bundle is one test's database with relay's components over it.
type bundle struct {
	db       *testdb.DB
	inserter *river.Client[pgx.Tx]
	pub      *outbox.Publisher
	store    *failed.Store
	reproc   *failed.Reprocessor
	// maxAttempts is the worker's ReprocessMaxAttempts.
	maxAttempts int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	db := testdb.New(t)
	inserter, err := worker.NewInsertClient(db.Pool, worker.ConfigFrom(db.Config()), testdb.Logger(t))
	require.NoError(t, err)
	return &bundle{
		db: db, inserter: inserter,
		pub:    outbox.New(inserter, nil, testdb.Logger(t)),
		store:  failed.NewStore(db.Pool),
		reproc: failed.NewReprocessor(db.Pool, inserter, nil, testdb.Logger(t)),
	}
}

func (b *bundle) publish(t *testing.T, fileID string, pois ...json.RawMessage) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), b.db.Pool, func(tx pgx.Tx) error {
		_, err := b.pub.PublishTx(context.Background(), tx, outbox.Analysis{FileID: fileID, POIs: pois})
		return err
	}))
}

// work runs a real worker until the resolve queue is idle. The worker is
// the production one (resolve_file and the linker), with
// ReprocessMaxAttempts set to b.maxAttempts.
func (b *bundle) work(t *testing.T) {
	t.Helper()
	require.NoError(t, b.workUntilIdle(t))
}

// workUntilIdle is work returning its error, for a goroutine.
func (b *bundle) workUntilIdle(t *testing.T) error {
	cfg := worker.ConfigFrom(b.db.Config())
	cfg.Concurrency, cfg.ReprocessMaxAttempts, cfg.Queues = 2, b.maxAttempts, []string{outbox.QueueResolve}
	w, err := worker.New(b.db.Pool, cfg, testdb.Logger(t))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return w.RunUntilIdle(ctx, nil)
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return testdb.Count(t, b.db.Pool, sql, args...)
}

func (b *bundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.db.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// poi returns a POI's JSON; lineNumber may be an int or, to make it fail
// validation, a string.
func poi(id, typ, name, file string, line any, code string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"id": id, "type": typ, "name": name, "filePath": file, "lineNumber": line, "rawCode": code})
	return raw
}

// seed inserts n failed_pois rows straight into the table: file f<i%files>,
// signature "failure cause <letter i%sigs>" (sigs <= 26), class validation, failed i minutes ago.
// The files exist (a reprocess closes the rows of a file that does not).
func (b *bundle) seed(t *testing.T, n, files, sigs int) {
	t.Helper()
	b.exec(t, `INSERT INTO files (file_id) SELECT 'f' || k FROM generate_series(0, $1 - 1) k ON CONFLICT DO NOTHING`, files)
	b.exec(t, `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_class,
		                         error_signature, error_history, original_poi_data)
		SELECT 1000 + i, 'f' || (i % $2), 'p' || i, 0, now() - make_interval(mins => i),
		       'failure cause ' || chr(97 + i % $3), 'validation', 'failure cause ' || chr(97 + i % $3), '[]',
		       jsonb_build_object('id', 'p' || i, 'type', 'function_definition', 'name', 'n' || i, 'lineNumber', 'x')
		FROM generate_series(1, $1) AS i`, n, files, sigs)
}

func (b *bundle) run(t *testing.T, sel failed.Selection) *failed.ReprocessResult {
	t.Helper()
	res, err := b.reproc.Run(context.Background(), sel, "tester", nil)
	require.NoError(t, err)
	return res
}
