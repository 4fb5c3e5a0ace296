package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/pgbouncer"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// sqlPublish calls relay_publish(analysis) in a savepoint of tx, returning
// PostgreSQL's error, if any, and leaving tx usable.
func sqlPublish(t *testing.T, tx pgx.Tx, analysis string) *pgconn.PgError {
	t.Helper()
	ctx := context.Background()
	sp, err := tx.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = sp.Rollback(ctx) }()
	_, err = sp.Exec(ctx, `SELECT relay_publish($1::jsonb)`, analysis)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "not a PostgreSQL error: %v", err)
	return pgErr
}

// goPublish publishes analysis with the Go publisher in a savepoint of tx,
// rolled back: its verdict alone.
func goPublish(t *testing.T, tx pgx.Tx, pub *outbox.Publisher, analysis string) error {
	t.Helper()
	a, err := outbox.DecodeAnalysis([]byte(analysis))
	if err != nil {
		return err
	}
	ctx := context.Background()
	sp, err := tx.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = sp.Rollback(ctx) }()
	_, err = pub.PublishTx(ctx, sp, a)
	return err
}

// TestSQLPublish_ChecksAsTheGoPublisher holds relay_publish_check (migration
// 22) to the Go publisher: what SQL rejects at once, Go rejects with the
// same message; what it accepts, Go accepts, except what only the publish
// can find (later), which the drain moves to rejected_analyses.
func TestSQLPublish_ChecksAsTheGoPublisher(t *testing.T) {
	t.Parallel()
	tx := testdb.Tx(t)
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{Schema: testdb.Schema})
	require.NoError(t, err)
	pub := outbox.New(client, &outbox.Config{MaxPOIBytes: 4096}, testdb.Logger(t))

	long := strings.Repeat("x", 1100)
	p := func(fields string) string { return `{"type":"function_definition","lineNumber":1,` + fields + `}` }
	cases := []struct {
		name     string
		analysis string
		code     string // "" accepted
		later    bool   // accepted by SQL, rejected by the Go publisher
		quoted   bool   // Go's message quotes with escapes (%q), SQL's as is
	}{
		{"valid", `{"fileId":"sqlchk/a.py","pois":[` + p(`"id":"a1","name":"f","filePath":"sqlchk/a.py"`) + `]}`, "", false, false},
		{"no POIs", `{"fileId":"sqlchk/b.py","pois":[]}`, "", false, false},
		{"a POI that is not an object travels to failed_pois", `{"fileId":"sqlchk/c.py","pois":[42, "x"]}`, "", false, false},
		{"a POI without a type travels to failed_pois", `{"fileId":"sqlchk/d.py","pois":[{"id":"d1","name":"f"}]}`, "", false, false},
		{"extra top-level fields", `{"fileId":"sqlchk/e.py","pois":[],"tool":"x"}`, "", false, false},
		{"not an object", `[1,2]`, "RL001", false, false},
		{"a string", `"sqlchk/f.py"`, "RL001", false, false},
		{"no fileId", `{"pois":[]}`, "RL001", false, false},
		{"null fileId", `{"fileId":null,"pois":[]}`, "RL001", false, false},
		{"numeric fileId", `{"fileId":42,"pois":[]}`, "RL001", false, false},
		{"empty fileId", `{"fileId":"","pois":[]}`, "RL001", false, false},
		{"blank fileId", `{"fileId":"   ","pois":[]}`, "RL001", false, false},
		{"blank fileId, Unicode spaces", `{"fileId":" \t\u00a0\u3000","pois":[]}`, "RL001", false, true},
		{"fileId too long", `{"fileId":"` + long + `","pois":[]}`, "RL001", false, false},
		{"no pois", `{"fileId":"sqlchk/g.py"}`, "RL001", false, false},
		{"null pois", `{"fileId":"sqlchk/g.py","pois":null}`, "RL001", false, false},
		{"pois not an array", `{"fileId":"sqlchk/g.py","pois":"nope"}`, "RL001", false, false},
		{"pois an object", `{"fileId":"sqlchk/g.py","pois":{"id":"x"}}`, "RL001", false, true},
		{"id too long", `{"fileId":"sqlchk/h.py","pois":[` + p(`"id":"`+long+`","name":"f"`) + `]}`, "RL002", false, false},
		{"name too long", `{"fileId":"sqlchk/h.py","pois":[` + p(`"id":"h1","name":"`+long+`"`) + `]}`, "RL002", false, false},
		{"name too long on an otherwise invalid POI", `{"fileId":"sqlchk/h.py","pois":[{"id":"h1","name":"` + long + `"}]}`, "RL002", false, false},
		{"filePath differs", `{"fileId":"sqlchk/i.py","pois":[` + p(`"id":"i1","name":"f","filePath":"other.py"`) + `]}`, "RL002", false, false},
		{"filePath differs on a POI without an id", `{"fileId":"sqlchk/i.py","pois":[` + p(`"id":"i1","name":"f"`) + `,{"filePath":"x.py"}]}`, "RL002", false, false},
		{"duplicate id", `{"fileId":"sqlchk/j.py","pois":[` + p(`"id":"j1","name":"f"`) + `,` + p(`"id":"j2","name":"g"`) + `,` + p(`"id":"j1","name":"h"`) + `]}`, "RL002", false, false},
		{"the first fault in array order", `{"fileId":"sqlchk/k.py","pois":[` + p(`"id":"k1","name":"f","filePath":"z.py"`) + `,` + p(`"id":"`+long+`","name":"g"`) + `]}`, "RL002", false, false},
		{"a POI above max_poi_bytes", `{"fileId":"sqlchk/l.py","pois":[` + p(`"id":"l1","name":"f","rawCode":"`+strings.Repeat("y", 5000)+`"`) + `]}`, "", true, false},
	}
	for _, c := range cases {
		sqlErr := sqlPublish(t, tx, c.analysis)
		goErr := goPublish(t, tx, pub, c.analysis)
		switch {
		case c.code == "" && !c.later:
			require.Nil(t, sqlErr, c.name)
			require.NoError(t, goErr, c.name)
		case c.later:
			require.Nil(t, sqlErr, c.name)
			require.ErrorIs(t, goErr, outbox.ErrRejected, c.name)
		default:
			require.NotNil(t, sqlErr, c.name)
			require.Equal(t, c.code, sqlErr.Code, c.name)
			require.ErrorIs(t, goErr, outbox.ErrRejected, c.name)
			if !c.quoted {
				require.Equal(t, goErr.Error(), sqlErr.Message, c.name)
			}
			require.Contains(t, sqlErr.Detail, `"fileId"`, c.name)
		}
	}

	// A NUL cannot enter jsonb: PostgreSQL refuses the argument in the
	// caller's transaction, before relay_publish runs, and its context line
	// shows the text just before the NUL.
	sqlErr := sqlPublish(t, tx, `{"fileId":"sqlchk/m.py","pois":[{"id":"m1","name":"a\u0000b"}]}`)
	require.NotNil(t, sqlErr)
	require.Equal(t, "22P05", sqlErr.Code)
	require.Contains(t, sqlErr.Where, `{"id":"m1","name":"a\u0000`)
	require.Error(t, goPublish(t, tx, pub, `{"fileId":"sqlchk/m.py","pois":[{"id":"m1","name":"a\u0000b"}]}`))

	// relay_publish_many names the analysis at fault.
	sp, err := tx.Begin(context.Background())
	require.NoError(t, err)
	_, err = sp.Exec(context.Background(), `SELECT relay_publish_many($1::jsonb)`,
		`[{"fileId":"sqlchk/n.py","pois":[]},{"fileId":"sqlchk/o.py","pois":{}}]`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "RL001", pgErr.Code)
	require.Equal(t, `analysis #1: file "sqlchk/o.py": pois must be an array, got {}`, pgErr.Message)
	require.NoError(t, sp.Rollback(context.Background()))
}

// sqlBundle is a database of the test's own with a publisher and a drainer.
type sqlBundle struct {
	db    *testdb.DB
	pub   *outbox.Publisher
	drain *outbox.Drainer
}

func setupSQL(t *testing.T) *sqlBundle {
	t.Helper()
	db := testdb.New(t)
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: db.Schema})
	require.NoError(t, err)
	pub := outbox.New(client, nil, testdb.Logger(t))
	_, err = db.Pool.Exec(context.Background(), `CREATE TABLE callers_own (note text)`)
	require.NoError(t, err)
	return &sqlBundle{db: db, pub: pub, drain: outbox.NewDrainer(db.Pool, pub, outbox.DrainConfig{Batch: 10}, testdb.Logger(t))}
}

func (b *sqlBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return testdb.Count(t, b.db.Pool, sql, args...)
}

// drainAll drains until the queue is empty.
func (b *sqlBundle) drainAll(t *testing.T) outbox.DrainResult {
	t.Helper()
	var total outbox.DrainResult
	for {
		res, err := b.drain.Drain(context.Background())
		require.NoError(t, err)
		total.Published += res.Published
		total.Rejected += res.Rejected
		if res.Published+res.Rejected == 0 {
			return total
		}
	}
}

func sqlAnalysis(file string, ids ...string) string {
	var pois []string
	for i, id := range ids {
		pois = append(pois, fmt.Sprintf(`{"id":%q,"type":"function_definition","name":"f%d","lineNumber":%d,"filePath":%q}`, id, i, i+1, file))
	}
	return fmt.Sprintf(`{"fileId":%q,"pois":[%s]}`, file, strings.Join(pois, ","))
}

func TestSQLPublish_RollbackLeavesNothingCommitGivesOneJobPerFile(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx := context.Background()

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO callers_own VALUES ('rolled back')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("a.py", "a1", "a2"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM publish_queue`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM callers_own`))
	require.Equal(t, outbox.DrainResult{}, b.drainAll(t))

	require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO callers_own VALUES ('committed')`); err != nil {
			return err
		}
		var n int
		err := tx.QueryRow(ctx, `SELECT relay_publish_many($1::jsonb)`,
			"["+sqlAnalysis("a.py", "a1", "a2")+","+sqlAnalysis("b.py", "b1")+"]").Scan(&n)
		require.Equal(t, 2, n)
		return err
	}))
	// A re-publish before the drain replaces the queued analysis.
	_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("a.py", "a1", "a2", "a3"))
	require.NoError(t, err)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM publish_queue`))

	require.Equal(t, outbox.DrainResult{Published: 2}, b.drainAll(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM callers_own`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM publish_queue`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND args->>'fileId' = 'a.py'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND args->>'fileId' = 'b.py'`))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'a.py'`))
	require.Equal(t, 1, b.count(t, `SELECT version FROM files WHERE file_id = 'a.py'`), "one publish of a.py")
}

// waitBlocked waits until the backend pid waits for a lock.
func waitBlocked(t *testing.T, b *sqlBundle, pid uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var waiting bool
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)`, int32(pid)).Scan(&waiting))
		if waiting {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backend %d never waited for a lock", pid)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestSQLPublish_TheLastCommittedPublishWins(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx := context.Background()

	// Two concurrent SQL publishes of one file: the second waits for the
	// first, and the one that commits last is the one published.
	first, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = first.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("c.py", "first"))
	require.NoError(t, err)
	second, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer second.Release()
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, second, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("c.py", "second"))
			return err
		})
	}()
	waitBlocked(t, b, second.Conn().PgConn().PID())
	require.NoError(t, first.Commit(ctx))
	require.NoError(t, <-done)
	require.Equal(t, outbox.DrainResult{Published: 1}, b.drainAll(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'c.py' AND poi_id = 'second'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'c.py'`))

	// A Go publish committed after a queued SQL publish of the file
	// supersedes it: the drain publishes nothing older over it.
	_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("c.py", "sql"))
	require.NoError(t, err)
	a, err := outbox.DecodeAnalysis([]byte(sqlAnalysis("c.py", "go")))
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		_, err := b.pub.PublishTx(ctx, tx, a)
		return err
	}))
	require.Equal(t, outbox.DrainResult{}, b.drainAll(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'c.py' AND poi_id = 'go'`))

	// A Go publish that waits for a drain holding the queued row publishes
	// after it: the drain's publish, committed first, is replaced.
	_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("c.py", "sql2"))
	require.NoError(t, err)
	drainTx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = drainTx.Exec(ctx, `SELECT 1 FROM publish_queue WHERE file_id = 'c.py' FOR UPDATE`)
	require.NoError(t, err)
	goConn, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer goConn.Release()
	a, err = outbox.DecodeAnalysis([]byte(sqlAnalysis("c.py", "go2")))
	require.NoError(t, err)
	go func() {
		done <- pgx.BeginFunc(ctx, goConn, func(tx pgx.Tx) error {
			_, err := b.pub.PublishTx(ctx, tx, a)
			return err
		})
	}()
	waitBlocked(t, b, goConn.Conn().PgConn().PID())
	require.NoError(t, drainTx.Rollback(ctx))
	require.NoError(t, <-done)
	require.Equal(t, outbox.DrainResult{}, b.drainAll(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'c.py' AND poi_id = 'go2'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'c.py'`))
}

func TestSQLPublish_WhatThePublishRejectsLaterLandsInRejectedAnalyses(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, sqlAnalysis("owner.py", "shared"))
	require.NoError(t, err)
	require.Equal(t, outbox.DrainResult{Published: 1}, b.drainAll(t))

	_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish_many($1::jsonb)`,
		"["+sqlAnalysis("thief.py", "mine", "shared")+","+sqlAnalysis("fine.py", "f1")+"]")
	require.NoError(t, err)
	require.Equal(t, outbox.DrainResult{Published: 1, Rejected: 1}, b.drainAll(t))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM publish_queue`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'fine.py'`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'thief.py'`))

	var file, poiID, reason string
	var version int64
	var analysis []byte
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT file_id, poi_id, reason, file_version, analysis::text FROM rejected_analyses`).
		Scan(&file, &poiID, &reason, &version, &analysis))
	require.Equal(t, "thief.py", file)
	require.Equal(t, "shared", poiID)
	require.Contains(t, reason, `id already belongs to a POI of file "owner.py"`)
	require.Equal(t, int64(0), version)
	require.JSONEq(t, sqlAnalysis("thief.py", "mine", "shared"), string(analysis), "the analysis is kept whole")
}

// overlapRecorder is a Beginner that counts the transactions open at once,
// and holds the commit of every transaction but the first until two have
// been open together (or until done ends), so that a test knows whether
// drains ran side by side.
type overlapRecorder struct {
	db   outbox.Beginner
	done <-chan struct{}

	overlap chan struct{} // closed once two transactions were open at once

	mu                sync.Mutex
	begun, open, most int
}

func newOverlapRecorder(db outbox.Beginner, done <-chan struct{}) *overlapRecorder {
	return &overlapRecorder{db: db, done: done, overlap: make(chan struct{})}
}

func (r *overlapRecorder) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := r.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun++
	r.open++
	if r.open == 2 && r.most < 2 {
		close(r.overlap)
	}
	r.most = max(r.most, r.open)
	return &recordedTx{Tx: tx, r: r, first: r.begun == 1}, nil
}

// mostOpen is the most transactions that were open at once.
func (r *overlapRecorder) mostOpen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most
}

type recordedTx struct {
	pgx.Tx
	r     *overlapRecorder
	first bool
	ended sync.Once
}

func (tx *recordedTx) Commit(ctx context.Context) error {
	if !tx.first {
		select {
		case <-tx.r.overlap:
		case <-tx.r.done:
		}
	}
	defer tx.end()
	return tx.Tx.Commit(ctx)
}

func (tx *recordedTx) Rollback(ctx context.Context) error {
	defer tx.end()
	return tx.Tx.Rollback(ctx)
}

func (tx *recordedTx) end() {
	tx.ended.Do(func() {
		tx.r.mu.Lock()
		tx.r.open--
		tx.r.mu.Unlock()
	})
}

// TestDrainer_SeveralLoopsPublishEachQueuedAnalysisOnce runs a Drainer of
// several loops over a backlog of many files: the loops drain side by side,
// and each analysis is published exactly once, with one resolve_file job.
func TestDrainer_SeveralLoopsPublishEachQueuedAnalysisOnce(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const files, batch, loops = 200, 10, 4
	var as []string
	for i := range files {
		f := fmt.Sprintf("loops/%03d.py", i)
		as = append(as, sqlAnalysis(f, f+"#1", f+"#2"))
	}
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT relay_publish_many($1::jsonb)`, "["+strings.Join(as, ",")+"]").Scan(&n))
	require.Equal(t, files, n)

	rec := newOverlapRecorder(b.db.Pool, ctx.Done())
	// Interval: an hour, so that only full batches (a backlog) start drains
	// after the first.
	d := outbox.NewDrainer(rec, b.pub, outbox.DrainConfig{Batch: batch, Loops: loops, Interval: time.Hour}, testdb.Logger(t))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- d.Run(runCtx) }()
	for b.count(t, `SELECT count(*) FROM publish_queue`) > 0 {
		select {
		case <-ctx.Done():
			stop()
			<-ran
			t.Fatalf("the queue still holds %d analyses; at most %d drains ran at once", b.count(t, `SELECT count(*) FROM publish_queue`), rec.mostOpen())
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	require.NoError(t, <-ran)

	require.GreaterOrEqual(t, rec.mostOpen(), 2, "drains ran side by side")
	require.LessOrEqual(t, rec.mostOpen(), loops)
	require.Equal(t, files, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file'`))
	require.Equal(t, files, b.count(t, `SELECT count(DISTINCT args->>'fileId') FROM river_job WHERE kind = 'resolve_file'`),
		"one resolve_file job per file")
	require.Equal(t, files, b.count(t, `SELECT count(*) FROM files WHERE version = 1`), "each file published once")
	require.Equal(t, files, b.count(t, `SELECT count(*) FROM files`))
	require.Equal(t, 2*files, b.count(t, `SELECT count(*) FROM pois`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM rejected_analyses`))
}

// publisherRoleSQL is docs/sql/publisher_role.sql: what the README tells
// an operator to run.
func publisherRoleSQL(t *testing.T, role string) string {
	t.Helper()
	sql, err := os.ReadFile("../docs/sql/publisher_role.sql")
	require.NoError(t, err)
	return strings.ReplaceAll(string(sql), "relay_publisher", role)
}

func TestSQLPublish_APublisherRoleMayOnlyPublish(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx := context.Background()
	role := "relay_publisher_" + strings.ToLower(strings.TrimPrefix(b.db.Name, "relay_test_"))
	_, err := b.db.Pool.Exec(ctx, publisherRoleSQL(t, role))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = b.db.Pool.Exec(context.Background(), fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE %[1]s`, pgx.Identifier{role}.Sanitize()))
	})

	as := func(sql string, args ...any) error {
		return pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, sql, args...)
			return err
		})
	}
	require.NoError(t, as(`SELECT relay_publish($1::jsonb)`, sqlAnalysis("d.py", "d1")))
	require.NoError(t, as(`SELECT relay_publish_many($1::jsonb)`, "["+sqlAnalysis("e.py", "e1")+"]"))
	// A search_path of the caller's own cannot redirect the functions.
	require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL search_path = pg_catalog`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT relay.relay_publish($1::jsonb)`, sqlAnalysis("f.py", "f1"))
		return err
	}))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM publish_queue`))
	for _, sql := range []string{
		`SELECT count(*) FROM pois`, `SELECT count(*) FROM publish_queue`, `DELETE FROM publish_queue`,
		`INSERT INTO publish_queue VALUES ('x', '{}', 1, now())`, `SELECT count(*) FROM river_job`,
		`SELECT relay_publish_check('{}')`,
	} {
		err := as(sql)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, sql)
		require.Equal(t, "42501", pgErr.Code, "%s: %v", sql, err)
	}
}

func TestSQLPublish_ThroughATransactionPooler(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx := context.Background()
	bouncer := pgbouncer.ForTest(t, b.db.URL)
	conn, err := pgx.Connect(ctx, bouncer.URL(b.db.URL))
	require.NoError(t, err)
	defer conn.Close(ctx)

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO relay.callers_own VALUES ('rolled back')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT relay.relay_publish($1::jsonb)`, sqlAnalysis("g.py", "g0"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))

	require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO relay.callers_own VALUES ('committed')`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT relay.relay_publish($1::jsonb)`, sqlAnalysis("g.py", "g1"))
		return err
	}))
	_, err = conn.Exec(ctx, `SELECT relay.relay_publish($1::jsonb)`, `{"fileId":"g.py","pois":"nope"}`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "RL001", pgErr.Code)

	require.Equal(t, outbox.DrainResult{Published: 1}, b.drainAll(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM callers_own`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE poi_id = 'g1'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE args->>'fileId' = 'g.py'`))
}

// The SQL API takes the analysis's repository: the same file in two
// repositories is queued, published and rejected in each on its own, and a
// repository that is not a string is refused at once.
func TestSQLPublish_TakesTheRepository(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	ctx := context.Background()
	inRepo := func(repo, analysis string) string {
		return `{"repository": "` + repo + `", ` + strings.TrimPrefix(analysis, "{")
	}
	_, err := b.db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, inRepo("acme/a", sqlAnalysis("a.py", "a1")))
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish_many($1::jsonb)`,
		"["+inRepo("acme/b", sqlAnalysis("a.py", "a1", "a2"))+","+inRepo("acme/b", sqlAnalysis("b.py", "a1"))+"]")
	require.NoError(t, err)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM publish_queue`))
	require.Equal(t, outbox.DrainResult{Published: 2, Rejected: 1}, b.drainAll(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE repository = 'acme/a' AND file_id = 'a.py'`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM pois WHERE repository = 'acme/b' AND file_id = 'a.py'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE args->>'repository' = 'acme/b'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM rejected_analyses
		WHERE repository = 'acme/b' AND file_id = 'b.py' AND poi_id = 'a1' AND reason LIKE '%unique within a repository%'`))

	_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish($1::jsonb)`, `{"repository": 7, `+strings.TrimPrefix(sqlAnalysis("c.py"), "{"))
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "RL001", pgErr.Code)
	require.Contains(t, pgErr.Message, `file "c.py": repository must be a string`)
}
