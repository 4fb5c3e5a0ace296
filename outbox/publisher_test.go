package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

type testBundle struct {
	q   querier // the test's database, or its transaction (setupTx)
	pub *outbox.Publisher
}

// querier is what the tests read and write through: a pool or a
// transaction (whose Begin is a savepoint).
type querier interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// setup gives the test a database of its own, for tests that commit.
func setup(t *testing.T, cfg *outbox.Config) *testBundle {
	t.Helper()
	db := testdb.New(t)
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	require.NoError(t, err)
	return &testBundle{q: db.Pool, pub: outbox.New(client, cfg, testdb.Logger(t))}
}

// setupTx gives the test a transaction that is rolled back at its end
// (testdb.Tx): each publish is a savepoint in it. Tests using it publish
// files no other such test publishes.
func setupTx(t *testing.T, cfg *outbox.Config) *testBundle {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{Schema: testdb.Schema})
	require.NoError(t, err)
	return &testBundle{q: testdb.Tx(t), pub: outbox.New(client, cfg, testdb.Logger(t))}
}

// publish publishes a in its own committed transaction.
func (b *testBundle) publish(t *testing.T, a outbox.Analysis) (*outbox.Result, error) {
	t.Helper()
	var res *outbox.Result
	err := pgx.BeginFunc(context.Background(), b.q, func(tx pgx.Tx) error {
		var err error
		res, err = b.pub.PublishTx(context.Background(), tx, a)
		return err
	})
	return res, err
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return testdb.Count(t, b.q, sql, args...)
}

func poi(id, name, file string, line int, code string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "function_definition", "name": name,
		"filePath": file, "lineNumber": line, "rawCode": code, "context": ""})
	return b
}

func analysis(file string, n int) outbox.Analysis {
	a := outbox.Analysis{FileID: file}
	for i := range n {
		a.POIs = append(a.POIs, poi(fmt.Sprintf("%s#%d", file, i), fmt.Sprintf("f%d", i), file, i+1,
			fmt.Sprintf("function f%d() { return 1; }", i)))
	}
	return a
}

func TestPublishTx_EnqueuesExactlyOneJobCarryingTheWholeBatch(t *testing.T) {
	t.Parallel()
	b := setupTx(t, nil)
	a := analysis("src/math.js", 50)

	res, err := b.publish(t, a)
	require.NoError(t, err)
	require.Len(t, res.JobIDs, 1, "50 POIs must give 1 job")
	require.Equal(t, 50, res.POIs)
	require.Equal(t, 50, res.Symbols)
	require.Equal(t, int64(1), res.Version)

	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file'`))
	require.Equal(t, 50, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'src/math.js'`))

	var raw []byte
	require.NoError(t, b.q.QueryRow(context.Background(), `SELECT args FROM river_job WHERE id = $1`, res.JobIDs[0]).Scan(&raw))
	var args outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	require.Equal(t, "src/math.js", args.FileID)
	require.Len(t, args.POIs, 50)
	require.JSONEq(t, string(a.POIs[7]), string(args.POIs[7]), "each POI travels as received")
	require.Equal(t, 0, args.Parts)
}

func TestPublishTx_CallerRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()

	tx, err := b.q.Begin(ctx)
	require.NoError(t, err)
	res, err := b.pub.PublishTx(ctx, tx, analysis("src/a.js", 3))
	require.NoError(t, err)
	require.Len(t, res.JobIDs, 1)
	require.NoError(t, tx.Rollback(ctx))

	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM river_job`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM files`))
}

func TestPublishTx_EmptyPOIsEnqueuesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	res, err := b.publish(t, outbox.Analysis{FileID: "src/empty.js", POIs: []json.RawMessage{}})
	require.NoError(t, err)
	require.Empty(t, res.JobIDs)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM river_job`))
}

func TestPublishTx_RejectsWithNamedErrorAndEnqueuesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, &outbox.Config{MaxPOIBytes: 2048})
	_, err := b.publish(t, outbox.Analysis{FileID: "src/owner.js", POIs: []json.RawMessage{poi("taken", "x", "src/owner.js", 1, "")}})
	require.NoError(t, err)
	before := b.count(t, `SELECT count(*) FROM river_job`)

	for _, tc := range []struct {
		name    string
		a       outbox.Analysis
		wantErr []string
	}{
		{"empty fileId", outbox.Analysis{FileID: "", POIs: []json.RawMessage{poi("p1", "a", "", 1, "")}}, []string{"fileId is empty"}},
		{"blank fileId", outbox.Analysis{FileID: "  ", POIs: nil}, []string{"fileId is empty"}},
		{"filePath disagrees with fileId", outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{
			poi("p1", "a", "src/a.js", 1, ""), poi("p2", "b", "src/b.js", 2, "")}},
			[]string{`poi "p2"`, `filePath "src/b.js" does not match`, `"src/a.js"`}},
		{"NUL in rawCode", outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{
			json.RawMessage(`{"id":"nul1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1,"rawCode":"a\u0000b"}`)}},
			[]string{`poi "nul1"`, "NUL"}},
		{"invalid UTF-8", outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{
			json.RawMessage("{\"id\":\"utf\",\"type\":\"import\",\"name\":\"a\",\"lineNumber\":1,\"rawCode\":\"\xff\xfe\"}")}},
			[]string{`poi "utf"`, "invalid UTF-8"}},
		{"duplicate id in file", outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{
			poi("dup", "a", "src/a.js", 1, ""), poi("dup", "b", "src/a.js", 2, "")}},
			[]string{`poi "dup"`, "duplicate POI id"}},
		{"id owned by another file", outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{poi("taken", "x", "src/a.js", 1, "")}},
			[]string{`poi "taken"`, `belongs to a POI of file "src/owner.js"`}},
		{"POI over the size limit", outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{
			poi("big", "a", "src/a.js", 1, strings.Repeat("x", 4096))}},
			[]string{`poi "big"`, "max_poi_bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.publish(t, tc.a)
			require.Error(t, err)
			require.True(t, errors.Is(err, outbox.ErrRejected), "want a rejection, got %v", err)
			for _, s := range tc.wantErr {
				require.Contains(t, err.Error(), s)
			}
		})
	}
	require.Equal(t, before, b.count(t, `SELECT count(*) FROM river_job`), "a rejected analysis enqueues nothing")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois`), "a rejected analysis stores nothing")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM files WHERE file_id = 'src/a.js'`))
}

func TestPublishTx_RejectionInsideCallerTxLeavesItUsable(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	_, err := b.publish(t, outbox.Analysis{FileID: "src/owner.js", POIs: []json.RawMessage{poi("taken", "x", "src/owner.js", 1, "")}})
	require.NoError(t, err)

	tx, err := b.q.Begin(ctx)
	require.NoError(t, err)
	_, err = b.pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{poi("taken", "x", "src/a.js", 1, "")}})
	require.ErrorIs(t, err, outbox.ErrRejected)
	_, err = b.pub.PublishTx(ctx, tx, analysis("src/b.js", 2))
	require.NoError(t, err, "the caller's transaction must survive a rejection")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM files WHERE file_id = 'src/a.js'`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'src/b.js'`))
}

func TestPublishTx_RepublishReplacesWithoutDuplicating(t *testing.T) {
	t.Parallel()
	b := setupTx(t, nil)
	a := analysis("src/republish.js", 5)
	r1, err := b.publish(t, a)
	require.NoError(t, err)
	r2, err := b.publish(t, a)
	require.NoError(t, err)
	require.Equal(t, r1.Version+1, r2.Version)
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM pois`))

	// A re-analysis that dropped two POIs and renamed one.
	a2 := analysis("src/republish.js", 3)
	a2.POIs[2] = poi("src/republish.js#2", "renamed", "src/republish.js", 3, "")
	r3, err := b.publish(t, a2)
	require.NoError(t, err)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM pois`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE name = 'renamed'`))

	var raw []byte
	require.NoError(t, b.q.QueryRow(context.Background(), `SELECT args FROM river_job WHERE id = $1`, r3.JobIDs[0]).Scan(&raw))
	var args outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	require.Equal(t, r3.Version, args.FileVersion)
	// The names, and the ids of the POIs gone (targetId references name
	// them); a renamed POI keeps its id.
	require.ElementsMatch(t, []string{"f2", "f3", "f4", "renamed", "id:src/republish.js#3", "id:src/republish.js#4"}, args.ChangedNames)
}

func TestPublishTx_InvalidPOIsTravelButStayOutOfSymbolTable(t *testing.T) {
	t.Parallel()
	b := setupTx(t, nil)
	a := outbox.Analysis{FileID: "src/invalid.js", POIs: []json.RawMessage{
		poi("ok", "a", "src/invalid.js", 1, ""),
		json.RawMessage(`{"id":"bad","type":"function_definition","name":"b","lineNumber":"ten"}`),
		json.RawMessage(`null`),
	}}
	res, err := b.publish(t, a)
	require.NoError(t, err)
	require.Equal(t, 3, res.POIs)
	require.Equal(t, 1, res.Symbols)
	require.Len(t, res.JobIDs, 1)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois`))
	require.Equal(t, 3, b.count(t, `SELECT (args->>'poiCount')::int FROM river_job`))
}

func TestPublishTx_SplitsAFileLargerThanTheJobLimit(t *testing.T) {
	t.Parallel()
	b := setupTx(t, &outbox.Config{MaxJobBytes: 4096})
	a := analysis("src/big.js", 100) // ~150 bytes a POI
	res, err := b.publish(t, a)
	require.NoError(t, err)
	require.Greater(t, len(res.JobIDs), 1)

	rows, err := b.q.Query(context.Background(), `SELECT args FROM river_job ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	seen := map[string]bool{}
	part := 0
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var args outbox.ResolveFileArgs
		require.NoError(t, json.Unmarshal(raw, &args))
		size := 0
		for _, p := range args.POIs {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, p))
			size += buf.Len()
		}
		require.LessOrEqual(t, size, 4096, "part %d carries more POI bytes than the limit", part+1)
		part++
		require.Equal(t, part, args.Part)
		require.Equal(t, len(res.JobIDs), args.Parts)
		for _, p := range args.POIs {
			var v struct{ ID string }
			require.NoError(t, json.Unmarshal(p, &v))
			require.False(t, seen[v.ID], "POI %s carried twice", v.ID)
			seen[v.ID] = true
		}
	}
	require.NoError(t, rows.Err())
	require.Len(t, seen, 100, "every POI carried exactly once")
}

func TestPublishManyTx_OneJobPerFileAndTheSameStateAsOneByOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	many, single := setup(t, nil), setup(t, nil)
	files := []outbox.Analysis{analysis("src/a.js", 3), analysis("src/b.js", 0), analysis("src/c.js", 5)}
	// b.js holds only an import and a malformed POI.
	files[1].POIs = append(files[1].POIs, json.RawMessage(`{"id":"b.i","type":"import","name":"f1","filePath":"src/b.js","lineNumber":1}`),
		json.RawMessage(`{"id":"b.bad","type":"function_definition","name":"bad","lineNumber":"x"}`))

	var results []*outbox.Result
	require.NoError(t, pgx.BeginFunc(ctx, many.q, func(tx pgx.Tx) error {
		var err error
		results, err = many.pub.PublishManyTx(ctx, tx, files)
		return err
	}))
	for _, a := range files {
		_, err := single.publish(t, a)
		require.NoError(t, err)
	}

	require.Len(t, results, 3)
	for i, r := range results {
		require.Equal(t, files[i].FileID, r.FileID)
		require.Equal(t, int64(1), r.Version)
		require.Equal(t, len(files[i].POIs), r.POIs)
		require.Len(t, r.JobIDs, 1, "file %s", r.FileID)
	}
	require.Equal(t, 2, results[1].POIs)
	require.Equal(t, 1, results[1].Symbols, "the malformed POI is not a symbol")
	for _, q := range []string{
		`SELECT string_agg(poi_id || ' ' || file_id || ' ' || name || ' ' || type || ' ' || line_number, ',' ORDER BY poi_id) FROM pois`,
		`SELECT string_agg(file_id || ' ' || version || ' ' || poi_count, ',' ORDER BY file_id) FROM files`,
		`SELECT string_agg(args->>'fileId' || ' ' || (args->>'poiCount')::int || ' ' || coalesce(args->>'changedNames', '-'), ',' ORDER BY args->>'fileId') FROM river_job`,
	} {
		var got, want string
		require.NoError(t, many.q.QueryRow(ctx, q).Scan(&got))
		require.NoError(t, single.q.QueryRow(ctx, q).Scan(&want))
		require.Equal(t, want, got, q)
	}

	// Re-publishing the three in one call bumps each version once.
	require.NoError(t, pgx.BeginFunc(ctx, many.q, func(tx pgx.Tx) error {
		var err error
		results, err = many.pub.PublishManyTx(ctx, tx, files)
		return err
	}))
	for _, r := range results {
		require.Equal(t, int64(2), r.Version)
	}
	require.Equal(t, 9, many.count(t, `SELECT count(*) FROM pois`))
}

func TestPublishManyTx_OneRejectedFilePublishesNoneAndLeavesTheTxUsable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	_, err := b.publish(t, outbox.Analysis{FileID: "src/owner.js", POIs: []json.RawMessage{poi("taken", "x", "src/owner.js", 1, "")}})
	require.NoError(t, err)
	before := b.count(t, `SELECT count(*) FROM river_job`)

	for _, tc := range []struct {
		name    string
		files   []outbox.Analysis
		wantErr []string
	}{
		{"id owned by a file outside the call", []outbox.Analysis{analysis("src/a.js", 2),
			{FileID: "src/b.js", POIs: []json.RawMessage{poi("taken", "x", "src/b.js", 1, "")}}},
			[]string{`poi "taken" (file "src/b.js")`, `belongs to a POI of file "src/owner.js"`}},
		{"id in two files of the call", []outbox.Analysis{
			{FileID: "src/a.js", POIs: []json.RawMessage{poi("same", "x", "src/a.js", 1, "")}},
			{FileID: "src/b.js", POIs: []json.RawMessage{poi("same", "y", "src/b.js", 1, "")}}},
			[]string{`poi "same" (file "src/b.js")`, `file "src/a.js" published with it`}},
		{"file twice", []outbox.Analysis{analysis("src/a.js", 1), analysis("src/c.js", 1), analysis("src/a.js", 2)},
			[]string{`file "src/a.js"`, "appears twice", "#0 and #2"}},
		{"bad POI in the last file", []outbox.Analysis{analysis("src/a.js", 1),
			{FileID: "src/b.js", POIs: []json.RawMessage{poi("p", "y", "src/elsewhere.js", 1, "")}}},
			[]string{`poi "p" (file "src/b.js")`, "does not match"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := b.q.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = b.pub.PublishManyTx(ctx, tx, tc.files)
			require.ErrorIs(t, err, outbox.ErrRejected)
			for _, s := range tc.wantErr {
				require.Contains(t, err.Error(), s)
			}
			_, err = b.pub.PublishTx(ctx, tx, analysis("src/ok.js", 1))
			require.NoError(t, err, "the caller's transaction must survive a rejection")
			require.NoError(t, tx.Commit(ctx))
		})
	}
	require.Equal(t, before+4, b.count(t, `SELECT count(*) FROM river_job`), "only the src/ok.js publishes enqueued")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM files WHERE file_id IN ('src/a.js', 'src/b.js', 'src/c.js')`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE poi_id = 'same'`))
}

func TestPublishTx_EmptyRepublishRemovesTheFilesSymbols(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.publish(t, analysis("src/gone.js", 3))
	require.NoError(t, err)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'src/gone.js'`))

	res, err := b.publish(t, outbox.Analysis{FileID: "src/gone.js", POIs: []json.RawMessage{}})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Version)
	require.Len(t, res.JobIDs, 1, "the removed names are re-resolved by the file's job")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'src/gone.js'`))
}

// Two files publishing the same POI id at the same time: the second upsert
// waits for the first publish and finds the id taken by the other file. It
// is rejected with an error that says so, and nothing of it is stored.
func TestPublishTx_RejectsAnIDAnotherFileTookConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	first, err := b.q.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	_, err = b.pub.PublishTx(ctx, first, outbox.Analysis{FileID: "src/a.js", POIs: []json.RawMessage{
		poi("shared-id", "fa", "src/a.js", 1, "function fa() {}")}})
	require.NoError(t, err)

	second := make(chan error, 1)
	go func() {
		_, err := b.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: []json.RawMessage{
			poi("b-own", "fb", "src/b.js", 1, "function fb() {}"),
			poi("shared-id", "fb2", "src/b.js", 2, "function fb2() {}")}})
		second <- err
	}()
	// The second publish is waiting for the first one's row.
	pid := first.Conn().PgConn().PID()
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid) > 0
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, first.Commit(ctx))

	err = <-second
	var rej *outbox.RejectError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "src/b.js", rej.FileID)
	require.Contains(t, rej.Error(), "published by another file at the same time")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'src/b.js'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE poi_id = 'shared-id' AND file_id = 'src/a.js'`))
}

// PublishTx runs in the caller's transaction under the caller's planner
// settings: it changes none of them, not even for its own statements. A
// trigger records the settings the publish's writes ran under.
func TestPublishTx_LeavesTheCallersPlannerSettingsAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	_, err := b.q.Exec(ctx, `
		CREATE TABLE seen (settings text);
		CREATE FUNCTION record_settings() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO seen SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
				WHERE name IN ('enable_seqscan', 'enable_hashjoin', 'enable_mergejoin', 'jit', 'plan_cache_mode');
			RETURN NULL;
		END $$;
		CREATE TRIGGER record_settings AFTER INSERT OR UPDATE ON files FOR EACH STATEMENT EXECUTE FUNCTION record_settings();
		CREATE TRIGGER record_settings AFTER INSERT OR UPDATE OR DELETE ON pois FOR EACH STATEMENT EXECUTE FUNCTION record_settings();`)
	require.NoError(t, err)

	const callers = "enable_hashjoin=on enable_mergejoin=on enable_seqscan=on jit=off plan_cache_mode=force_custom_plan"
	require.NoError(t, pgx.BeginFunc(ctx, b.q, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off; SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
			return err
		}
		for range 2 { // a first publish, then a re-publish
			if _, err := b.pub.PublishTx(ctx, tx, analysis("src/p.js", 3)); err != nil {
				return err
			}
		}
		return nil
	}))
	rows, err := b.q.Query(ctx, `SELECT DISTINCT settings FROM seen`)
	require.NoError(t, err)
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{callers}, seen)
}

// A publish leaves no prepared statement of its own on the caller's
// connection: each of its statements is planned for the call, with the
// tables as they are then. A cached generic plan made while the tables were
// small is kept as they grow, and one that looks a key up on another index
// beginning with the repository reads the whole repository per key.
func TestPublishTx_PreparesNoStatementOnTheCallersConnection(t *testing.T) {
	t.Parallel()
	b := setupTx(t, nil)
	for i := range 8 { // past the five custom plans after which PostgreSQL may switch to a generic one
		_, err := b.publish(t, analysis(fmt.Sprintf("src/prepared%d.js", i%3), 4))
		require.NoError(t, err)
	}
	var statements []string
	for _, st := range outbox.PublisherStatements {
		statements = append(statements, st.SQL)
	}
	rows, err := b.q.Query(context.Background(), `SELECT statement FROM pg_prepared_statements WHERE statement = ANY($1)`, statements)
	require.NoError(t, err)
	prepared, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, prepared, "the publisher's statements are prepared on the caller's connection")
}

// Every statement a publish reads or deletes by key with, planned as the
// publisher runs it (for the call, with the tables as they are), looks its
// keys up on an index that holds them: no sequential scan, and no index
// condition on the repository alone, which reads every row of the
// repository for each key. (On empty tables PostgreSQL may pick any index
// that begins with the repository: each reads nothing.)
func TestPublisherStatements_RunOnTheirKeysWhateverTheTablesSize(t *testing.T) {
	t.Parallel()
	tx := testdb.Tx(t)
	ctx := context.Background()
	explain := func(size string) {
		for name, st := range outbox.PublisherStatements {
			rows, err := tx.Query(ctx, `EXPLAIN `+st.SQL, append([]any{pgx.QueryExecModeExec}, st.Params...)...)
			require.NoError(t, err, name)
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err, name)
			text := strings.Join(plan, "\n")
			require.NotContains(t, text, "Seq Scan", "%s, %s:\n%s", name, size, text)
			for _, line := range plan {
				if strings.Contains(line, "Index Cond:") && strings.Contains(line, "repository =") {
					require.Contains(t, line, " AND ", "%s, %s: a key looked up by its repository alone:\n%s", name, size, text)
				}
			}
		}
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO files (file_id, version, poi_count) SELECT 'src/f' || k || '.js', 1, 50 FROM generate_series(0, 199) k;
		INSERT INTO pois (poi_id, file_id, name, type, line_number)
		SELECT 'f' || k || '.p' || i, 'src/f' || k || '.js', 'fn' || i, 'function', i
		FROM generate_series(0, 199) k, generate_series(0, 49) i;
		INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type)
		SELECT 'f' || k || '.p' || i, 'src/f' || k || '.js', 'fn' || (i + 1), 'fn' || (i + 1), 'CALLS'
		FROM generate_series(0, 199) k, generate_series(0, 49) i;
		INSERT INTO publish_queue (file_id, analysis, seq, queued_at)
		SELECT 'src/q' || k || '.js', '{}', k, now() FROM generate_series(0, 999) k`)
	require.NoError(t, err)
	explain("10,000 POIs")
}

// A republish finds the POIs a file no longer has as a set difference:
// even on a generic plan, which knows least of the parameters, no filter
// compares each of the file's rows with every id it still
// has, which takes time quadratic in the file's size.
func TestPublishTx_RemovedPOIsAreASetDifference(t *testing.T) {
	t.Parallel()
	text := testdb.GenericPlan(t, testdb.Tx(t), outbox.DeleteRemovedSQL, `'', '{src/a.js}', '{a1,a2}', '{src/a.js,src/a.js}'`)
	require.Contains(t, text, "Except", text)
	require.NotContains(t, text, "<> ALL", text)
}

// A publish that removes POIs deletes their references and every reference
// of its files, and clears the target of each reference, of any
// repository, that resolved to one of them, in its own transaction; a
// reference into a POI that stays keeps its target. A publish of files in
// several repositories does so in each.
func TestPublishManyTx_RemovedPOIsLoseTheirReferencesAndTheReferencesIntoThem(t *testing.T) {
	t.Parallel()
	b := setupTx(t, nil)
	ctx := context.Background()
	file := func(repo, id string, ids ...string) outbox.Analysis {
		a := outbox.Analysis{Repository: repo, FileID: id}
		for i, p := range ids {
			a.POIs = append(a.POIs, poi(p, "fn_"+p, id, i+1, ""))
		}
		return a
	}
	many := func(as ...outbox.Analysis) {
		t.Helper()
		require.NoError(t, pgx.BeginFunc(ctx, b.q, func(tx pgx.Tx) error {
			_, err := b.pub.PublishManyTx(ctx, tx, as)
			return err
		}))
	}
	many(file("rm/a", "a.go", "a1", "a2"), file("rm/b", "b.go", "b1", "b2"), file("rm/c", "c.go", "c1"))
	// ref inserts a reference of source (repository/POI) to target.
	ref := func(repo, source, file, name, targetRepo, target, targetFile string) {
		t.Helper()
		_, err := b.q.Exec(ctx, `
			INSERT INTO poi_references (repository, source_poi_id, source_file_id, name, key, type,
			                            target_repository, target_poi_id, target_file_id)
			VALUES ($1, $2, $3, $4, $4, 'CALLS', $5, $6, $7)`, repo, source, file, name, targetRepo, target, targetFile)
		require.NoError(t, err)
	}
	ref("rm/a", "a1", "a.go", "fn_b1", "rm/b", "b1", "b.go")
	ref("rm/a", "a2", "a.go", "fn_b2", "rm/b", "b2", "b.go")
	ref("rm/c", "c1", "c.go", "fn_a1", "rm/a", "a1", "a.go")
	ref("rm/c", "c1", "c.go", "fn_a2", "rm/a", "a2", "a.go")
	ref("rm/c", "c1", "c.go", "fn_b1", "rm/b", "b1", "b.go")
	ref("rm/c", "c1", "c.go", "fn_b2", "rm/b", "b2", "b.go")

	// a1 and b1 go; a2 and b2 stay.
	many(file("rm/b", "b.go", "b2"), file("rm/a", "a.go", "a2"))
	rows, err := b.q.Query(ctx, `
		SELECT repository || '/' || source_poi_id || ' ' || name || ' -> ' || coalesce(target_repository || '/' || target_poi_id, '-')
		FROM poi_references WHERE repository LIKE 'rm/%' ORDER BY 1`)
	require.NoError(t, err)
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"rm/c/c1 fn_a1 -> -",
		"rm/c/c1 fn_a2 -> rm/a/a2",
		"rm/c/c1 fn_b1 -> -",
		"rm/c/c1 fn_b2 -> rm/b/b2",
	}, refs, "the republished files' references go (their jobs recreate them); the targets into a1 and b1 are cleared")
	require.Zero(t, b.count(t, `SELECT count(*) FROM poi_references WHERE target_poi_id IS NULL AND target_file_id IS NOT NULL`))
}
