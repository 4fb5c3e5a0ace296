package outbox_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// nameOf returns the name of POI id in the default repository.
func (b *sqlBundle) nameOf(t *testing.T, id string) string {
	t.Helper()
	var name string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT name FROM pois WHERE repository = '' AND poi_id = $1`, id).Scan(&name))
	return name
}

// committedOrBlocked runs fn in a transaction of its own in the
// background, and waits until it either committed or waits for a lock of
// the backend holder: it reports which. done receives fn's outcome.
func committedOrBlocked(t *testing.T, b *sqlBundle, holder uint32, fn func(pgx.Tx) error) (committed bool, done <-chan error) {
	t.Helper()
	ch := make(chan error, 1)
	go func() {
		ch <- pgx.BeginFunc(context.Background(), b.db.Pool, fn)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-ch:
			require.NoError(t, err)
			closed := make(chan error)
			close(closed)
			return true, closed
		default:
		}
		if b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, int(holder)) > 0 {
			return false, ch
		}
		require.False(t, time.Now().After(deadline), "the second publish neither committed nor waited within a minute")
		time.Sleep(2 * time.Millisecond) // polling a condition, not ordering a race
	}
}

// The last committed publish of a file wins across publish paths: a SQL
// publish (relay_publish) and a Go publish of one file, the Go publish's
// transaction open while the SQL one runs. Whichever commits last is the
// file's version once the queue is drained. Before every publish of a file
// held the file's publish lock, the SQL publish committed while the Go one
// was open, and the drain then applied it over the later commit.
func TestPublish_LastCommittedWinsBetweenGoAndSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSQL(t)
	require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		_, err := b.pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/x.js", POIs: []json.RawMessage{poi("x1", "v1", "src/x.js", 1, "function v1() {}")}})
		return err
	}))

	held, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	_, err = b.pub.PublishTx(ctx, held, outbox.Analysis{FileID: "src/x.js", POIs: []json.RawMessage{poi("x1", "v2_go", "src/x.js", 1, "function v2_go() {}")}})
	require.NoError(t, err)

	sqlFirst, done := committedOrBlocked(t, b, held.Conn().PgConn().PID(), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`,
			`{"fileId":"src/x.js","pois":[{"id":"x1","type":"function_definition","name":"v3_sql","lineNumber":1,"filePath":"src/x.js"}]}`)
		return err
	})
	require.NoError(t, held.Commit(ctx))
	require.NoError(t, <-done)
	b.drainAll(t)

	want := "v3_sql"
	if sqlFirst {
		want = "v2_go"
	}
	require.Equal(t, want, b.nameOf(t, "x1"), "the SQL publish committed first: %v", sqlFirst)
	require.False(t, sqlFirst, "a SQL publish of a file committed while a Go publish of it was open")
}

// The same with the Go publish held up by a worker's share lock on the
// file's row (a batch checking the file's version): the SQL publish that
// runs meanwhile must not commit ahead of it and then be applied over it.
func TestPublish_LastCommittedWinsWhenTheGoPublishWaitsForAWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSQL(t)
	require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		_, err := b.pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/x.js", POIs: []json.RawMessage{poi("x1", "v1", "src/x.js", 1, "function v1() {}")}})
		return err
	}))

	worker, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = worker.Rollback(ctx) }()
	_, err = worker.Exec(ctx, `SELECT 1 FROM files WHERE repository = '' AND file_id = 'src/x.js' FOR SHARE`)
	require.NoError(t, err)

	goPub, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = goPub.Rollback(ctx) }()
	goDone := make(chan error, 1)
	go func() {
		_, err := b.pub.PublishTx(ctx, goPub, outbox.Analysis{FileID: "src/x.js", POIs: []json.RawMessage{poi("x1", "v2_go", "src/x.js", 1, "function v2_go() {}")}})
		goDone <- err
	}()
	testdb.WaitBlockedBy(t, b.db.Pool, worker.Conn().PgConn().PID())

	sqlFirst, done := committedOrBlocked(t, b, goPub.Conn().PgConn().PID(), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`,
			`{"fileId":"src/x.js","pois":[{"id":"x1","type":"function_definition","name":"v3_sql","lineNumber":1,"filePath":"src/x.js"}]}`)
		return err
	})
	require.NoError(t, worker.Rollback(ctx))
	require.NoError(t, <-goDone)
	require.NoError(t, goPub.Commit(ctx))
	require.NoError(t, <-done)
	b.drainAll(t)

	want := "v3_sql"
	if sqlFirst {
		want = "v2_go"
	}
	require.Equal(t, want, b.nameOf(t, "x1"), "the SQL publish committed first: %v", sqlFirst)
	require.False(t, sqlFirst, "a SQL publish of a file committed while a Go publish of it waited for a worker")
}

// A POI id moves between files published together: relay_publish_many
// and PublishManyTx publish the files as one, in either order of the
// array, and the id ends up in the file that now has it. Before, the SQL
// queue kept the files in file_id order and the drain published them one by
// one, rejecting the file that took the id (still the other file's).
func TestPublish_APOIMovesBetweenFilesPublishedTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, sqlPath := range []bool{true, false} {
		for _, order := range []string{"releasing file first", "taking file first"} {
			b := setupSQL(t)
			require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
				_, err := b.pub.PublishManyTx(ctx, tx, []outbox.Analysis{
					{FileID: "a.js", POIs: []json.RawMessage{poi("a1", "fa", "a.js", 1, "function fa() {}")}},
					{FileID: "b.js", POIs: []json.RawMessage{poi("m", "fm", "b.js", 1, "function fm() {}")}}})
				return err
			}))
			release := outbox.Analysis{FileID: "b.js", POIs: []json.RawMessage{}}
			take := outbox.Analysis{FileID: "a.js", POIs: []json.RawMessage{
				poi("a1", "fa", "a.js", 1, "function fa() {}"), poi("m", "fm", "a.js", 2, "function fm() {}")}}
			as := []outbox.Analysis{release, take}
			if order == "taking file first" {
				as = []outbox.Analysis{take, release}
			}
			if sqlPath {
				raw, err := json.Marshal(as)
				require.NoError(t, err)
				_, err = b.db.Pool.Exec(ctx, `SELECT relay_publish_many($1::jsonb)`, string(raw))
				require.NoError(t, err)
				require.Equal(t, outbox.DrainResult{Published: 2}, b.drainAll(t), "sql, %s", order)
			} else {
				require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
					_, err := b.pub.PublishManyTx(ctx, tx, as)
					return err
				}), order)
			}
			require.Equal(t, 0, b.count(t, `SELECT count(*) FROM rejected_analyses`), "sql %v, %s", sqlPath, order)
			require.Equal(t, 2, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'a.js' AND poi_id IN ('a1', 'm')`), "sql %v, %s", sqlPath, order)
			require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'b.js'`), "sql %v, %s", sqlPath, order)
		}
	}
}

// publishMany queues analyses with relay_publish_many in a transaction of
// its own.
func (b *sqlBundle) publishMany(t *testing.T, as ...outbox.Analysis) {
	t.Helper()
	raw, err := json.Marshal(as)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(context.Background(), `SELECT relay_publish_many($1::jsonb)`, string(raw))
	require.NoError(t, err)
}

// A POI id moving between the files of one relay_publish_many reaches the
// file that takes it even when the drains take the files apart: with one
// analysis per drain, and with the releasing file's queued row held by
// another transaction (a SQL publish of it, open) when the taking file is
// drained.
func TestDrain_APOIMovingBetweenFilesDrainedApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, held := range []bool{false, true} {
		b := setupSQL(t)
		b.drain = outbox.NewDrainer(b.db.Pool, b.pub, outbox.DrainConfig{Batch: 1}, testdb.Logger(t))
		require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
			_, err := b.pub.PublishManyTx(ctx, tx, []outbox.Analysis{
				{FileID: "a.js", POIs: []json.RawMessage{poi("a1", "fa", "a.js", 1, "function fa() {}")}},
				{FileID: "b.js", POIs: []json.RawMessage{poi("m", "fm", "b.js", 1, "function fm() {}")}}})
			return err
		}))
		b.publishMany(t,
			outbox.Analysis{FileID: "a.js", POIs: []json.RawMessage{poi("a1", "fa", "a.js", 1, "function fa() {}"), poi("m", "fm", "a.js", 2, "function fm() {}")}},
			outbox.Analysis{FileID: "b.js", POIs: []json.RawMessage{}})
		if held {
			// b.js queued again (still without m) by a transaction left open.
			tx, err := b.db.Pool.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, `SELECT relay_publish($1::jsonb)`, `{"fileId":"b.js","pois":[]}`)
			require.NoError(t, err)
			res, err := b.drain.Drain(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.DrainResult{Deferred: 1}, res, "a.js waits for b.js")
			require.NoError(t, tx.Commit(ctx))
		}
		b.drainAll(t)
		require.Equal(t, 0, b.count(t, `SELECT count(*) FROM rejected_analyses`), "held %v", held)
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'a.js' AND poi_id IN ('a1', 'm')`), "held %v", held)
		require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'b.js'`), "held %v", held)
		require.Equal(t, 0, b.count(t, `SELECT count(*) FROM publish_queue`), "held %v", held)
	}
}

// An analysis rejected for a POI id that another file holds is published
// once more, not rejected, when that file's queued analysis, which
// releases the id, is published by another drain between the rejection
// and the drain's look for it (relay-torture seeds 1065 and 1344 met this
// unforced). The other drain commits inside the rejection hook.
func TestDrain_RejectedForAnIDAnotherDrainReleasesMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSQL(t)
	require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		_, err := b.pub.PublishManyTx(ctx, tx, []outbox.Analysis{
			{FileID: "a.js", POIs: []json.RawMessage{poi("a1", "fa", "a.js", 1, "function fa() {}")}},
			{FileID: "b.js", POIs: []json.RawMessage{poi("m", "fm", "b.js", 1, "function fm() {}")}}})
		return err
	}))
	// a.js takes m; b.js, queued after it, releases m.
	b.publishMany(t, outbox.Analysis{FileID: "a.js", POIs: []json.RawMessage{poi("a1", "fa", "a.js", 1, "function fa() {}"), poi("m", "fm", "a.js", 2, "function fm() {}")}})
	b.publishMany(t, outbox.Analysis{FileID: "b.js", POIs: []json.RawMessage{}})

	first := outbox.NewDrainer(b.db.Pool, b.pub, outbox.DrainConfig{Batch: 1}, testdb.Logger(t))
	other := outbox.NewDrainer(b.db.Pool, b.pub, outbox.DrainConfig{Batch: 1}, testdb.Logger(t))
	hooked := 0
	outbox.SetRejectedHook(first, func(rej *outbox.RejectError) {
		hooked++
		if hooked > 1 {
			return
		}
		require.Equal(t, "b.js", rej.OwnerFileID)
		res, err := other.Drain(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.DrainResult{Published: 1}, res, "the other drain publishes b.js, skipping a.js's row")
	})
	res, err := first.Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, hooked, "a.js was rejected once, before b.js's publish was seen")
	require.Equal(t, outbox.DrainResult{Published: 1}, res)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM rejected_analyses`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'a.js' AND poi_id IN ('a1', 'm')`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois WHERE file_id = 'b.js'`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM publish_queue`))
}

// A drain is not held up by queued files being published elsewhere: with
// the oldest Batch queued files' publish locks held by an open
// relay_publish_many, a drain still publishes the file queued after them.
func TestDrain_FilesBeingPublishedHoldUpNoOtherFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSQL(t)
	b.drain = outbox.NewDrainer(b.db.Pool, b.pub, outbox.DrainConfig{Batch: 3}, testdb.Logger(t))
	var first []outbox.Analysis
	for _, f := range []string{"f0.js", "f1.js", "f2.js"} {
		first = append(first, outbox.Analysis{FileID: f, POIs: []json.RawMessage{}})
	}
	b.publishMany(t, first...)
	b.publishMany(t, outbox.Analysis{FileID: "z.js", POIs: []json.RawMessage{poi("z1", "fz", "z.js", 1, "function fz() {}")}})

	open, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = open.Rollback(ctx) }()
	_, err = open.Exec(ctx, `SELECT relay_lock_files($1, $2)`, []string{"", "", ""}, []string{"f0.js", "f1.js", "f2.js"})
	require.NoError(t, err)

	res, err := b.drain.Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.DrainResult{Published: 1}, res)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM pois WHERE poi_id = 'z1'`))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM publish_queue`))
}

// A publish in a REPEATABLE READ transaction is refused: its snapshot,
// taken before it waited for its files' publish locks, would not see a SQL
// publish of the file that committed meanwhile, which the drain would then
// apply over it.
func TestPublishTx_RefusesATransactionThatIsNotReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSQL(t)
	for _, level := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		tx, err := b.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
		require.NoError(t, err)
		_, err = b.pub.PublishTx(ctx, tx, outbox.Analysis{FileID: "src/x.js", POIs: []json.RawMessage{poi("x1", "f", "src/x.js", 1, "function f() {}")}})
		require.ErrorIs(t, err, outbox.ErrIsolation, level)
		require.ErrorContains(t, err, string(level), level)
		_, err = tx.Exec(ctx, `SELECT 1`)
		require.NoError(t, err, "the caller's transaction stays usable")
		require.NoError(t, tx.Rollback(ctx))
	}
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM pois`))
}
