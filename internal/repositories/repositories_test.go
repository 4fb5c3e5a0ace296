package repositories_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
	"github.com/relay-dev/relay/worker/link"
)

type testBundle struct {
	db    *testdb.DB
	w     *worker.Worker
	pub   *outbox.Publisher
	store *repositories.Store
}

// setup gives the test its own database, a worker of relay's queues (not
// started: start) and a Store inserting jobs with its client.
func setup(t *testing.T) *testBundle {
	t.Helper()
	db := testdb.New(t)
	logger := testdb.Logger(t)
	w, err := worker.New(db.Pool, worker.ConfigFrom(db.Config()), logger)
	require.NoError(t, err)
	client := w.Client()
	return &testBundle{db: db, w: w, pub: outbox.New(client, nil, logger), store: repositories.New(db.Pool, client, logger)}
}

// start starts the worker, stopped when the test ends.
func (b *testBundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, b.w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, b.w.Stop(ctx))
	})
}

// drain waits until the started worker has no resolve_file or link job left
// (worker.WaitIdle): every reference is then resolved against the final
// symbol table.
func (b *testBundle) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, worker.WaitIdle(ctx, b.db.Pool, nil), "queue not drained")
}

func (b *testBundle) publish(t *testing.T, repo, file string, pois ...json.RawMessage) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), b.db.Pool, func(tx pgx.Tx) error {
		_, err := b.pub.PublishTx(context.Background(), tx, outbox.Analysis{Repository: repo, FileID: file, POIs: pois})
		return err
	})
	require.NoError(t, err)
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return testdb.Count(t, b.db.Pool, sql, args...)
}

// fn is a function POI of file with symbol (none when "") and supplied
// CALLS references to the symbols calls (an empty list: relay does not
// read rawCode).
func fn(id, file, symbol string, calls ...string) json.RawMessage {
	refs := make([]map[string]string, len(calls))
	for i, c := range calls {
		refs[i] = map[string]string{"type": "CALLS", "symbol": c}
	}
	p := map[string]any{"id": id, "type": "function_definition", "name": id, "filePath": file,
		"lineNumber": 1, "rawCode": "func " + id + "() {}", "references": refs}
	if symbol != "" {
		p["symbol"] = symbol
	}
	raw, _ := json.Marshal(p)
	return raw
}

// bad is a POI whose reference list is malformed: the worker dead-letters
// it into failed_pois.
func bad(id, file string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(
		`{"id":%q,"type":"function_definition","name":"bad","filePath":%q,"lineNumber":1,"references":[{"type":"CALLZ","symbol":"x"}]}`, id, file))
}

// target is where a1's reference by symbol m/S points: "repository/poi", or
// "" while it has none.
func (b *testBundle) target(t *testing.T) string {
	t.Helper()
	var target *string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `
		SELECT target_repository || '/' || target_poi_id FROM poi_references
		WHERE repository = 'acme/a' AND source_poi_id = 'a1' AND name = 'sym:m/S'`).Scan(&target))
	if target == nil {
		return ""
	}
	return *target
}

func TestList_CountsEachRepository(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t)

	rows, err := b.store.List(ctx)
	require.NoError(t, err)
	require.Empty(t, rows)
	require.NotNil(t, rows, "none is an empty list (JSON [])")

	b.publish(t, "", "d.go", fn("d1", "d.go", "m/d.main"))
	b.publish(t, "acme/a", "a.go", fn("a1", "a.go", "m/a.run", "m/S", "m/a.helper"), fn("a2", "a.go", "m/a.helper"))
	b.publish(t, "acme/b", "b.go", fn("b1", "b.go", "m/S"), bad("b2", "b.go"), bad("b3", "b.go"))
	b.publish(t, "acme/b", "c.go", fn("c1", "c.go", "m/b.c1"))
	b.drain(t)
	_, err = b.db.Pool.Exec(ctx, `UPDATE failed_pois SET status = 'ignored' WHERE poi_id = 'b3'`)
	require.NoError(t, err)
	// A repository whose files are gone but whose failed POIs stay.
	_, err = b.db.Pool.Exec(ctx, `
		INSERT INTO failed_pois (repository, original_job_id, file_id, poi_id, poi_index, error_message, error_class,
		                         error_signature, original_poi_data)
		VALUES ('acme/old', 1, 'x.go', 'x1', 0, 'boom', 'resolver', 'boom', '{}')`)
	require.NoError(t, err)

	rows, err = b.store.List(ctx)
	require.NoError(t, err)
	require.Equal(t, []repositories.Summary{
		{Repository: "", Files: 1, POIs: 1},
		// a1 calls a2 in its repository and m/S, which only acme/b defines.
		{Repository: "acme/a", Files: 1, POIs: 2, Relationships: 2},
		{Repository: "acme/b", Files: 2, POIs: 2, NewFailed: 1},
		{Repository: "acme/old", NewFailed: 1},
	}, rows)
}

// Repository acme/a calls symbol m/S, which acme/b and acme/c both define:
// ambiguous. Deleting acme/c deletes exactly its files, POIs and references
// (its failed POIs stay), and once the worker drains, acme/a's reference
// resolves to acme/b's POI.
func TestDelete_ResolvesOtherRepositoriesReferencesAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t)
	b.publish(t, "acme/a", "a.go", fn("a1", "a.go", "m/a.run", "m/S"))
	b.publish(t, "acme/b", "s.go", fn("b1", "s.go", "m/S"))
	// acme/c: the same file and POI ids as acme/b's (ids are per
	// repository), a call to its own m/S, a failed POI.
	b.publish(t, "acme/c", "s.go", fn("b1", "s.go", "m/S"), bad("bad", "s.go"))
	b.publish(t, "acme/c", "t.go", fn("c2", "t.go", "m/c.t", "m/S"))
	b.drain(t)
	require.Equal(t, "", b.target(t), "m/S is ambiguous between acme/b and acme/c")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM relationships WHERE repository = 'acme/c' AND source_poi_id = 'c2' AND target_repository = 'acme/c'`))
	other := func() []string {
		rows, err := b.db.Pool.Query(ctx, `
			SELECT 'file ' || repository || ' ' || file_id || ' v' || version FROM files WHERE repository <> 'acme/c'
			UNION ALL SELECT 'poi ' || p::text FROM pois p WHERE repository <> 'acme/c'
			UNION ALL SELECT 'ref ' || r.repository || ' ' || r.source_poi_id || ' ' || r.name FROM poi_references r WHERE repository <> 'acme/c'
			ORDER BY 1`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	before := other()

	want := repositories.Deleted{Repository: "acme/c", Files: 2, POIs: 2, References: 1, FailedPOIsKept: 1, ReferencesRequeued: 1}
	preview, err := b.store.Preview(ctx, "acme/c", repositories.Options{})
	require.NoError(t, err)
	require.Equal(t, want, *preview)

	d, err := b.store.Delete(ctx, "acme/c", repositories.Options{Actor: "alice"})
	require.NoError(t, err)
	require.Positive(t, d.EventID)
	want.EventID = d.EventID
	require.Equal(t, want, *d)

	for _, table := range []string{"files", "pois", "poi_references", "publish_queue", "rejected_analyses"} {
		require.Zero(t, b.count(t, `SELECT count(*) FROM `+table+` WHERE repository = 'acme/c'`), table)
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/c'`), "failed POIs stay without PurgeFailed")
	require.Equal(t, 1, b.count(t, `
		SELECT count(*) FROM dead_letter_events WHERE action = 'repository_delete' AND target = 'failed_pois' AND actor = 'alice'
		AND item_count = 0 AND details->>'repository' = 'acme/c' AND details->>'files' = '2' AND details->>'pois' = '2'
		AND details->>'references' = '1' AND details->>'references_requeued' = '1' AND details->>'purge_failed' = 'false'`))

	b.drain(t)
	require.Equal(t, "acme/b/b1", b.target(t), "the symbol is defined once now: acme/b's")
	require.Zero(t, b.count(t, `SELECT count(*) FROM link_queue`))
	after := other()
	require.Len(t, after, len(before))
	require.Equal(t, before, after, "no other row changed (but a1's target)")
}

// A reference that resolved into the deleted repository loses its target
// at once (no dangling target) and resolves to the next repository that
// defines the symbol.
func TestDelete_ClearsReferencesThatResolvedIntoIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t)
	b.publish(t, "acme/a", "a.go", fn("a1", "a.go", "m/a.run", "m/S"))
	b.publish(t, "acme/c", "s.go", fn("c1", "s.go", "m/S"))
	b.drain(t)
	require.Equal(t, "acme/c/c1", b.target(t))

	d, err := b.store.Delete(ctx, "acme/c", repositories.Options{})
	require.NoError(t, err)
	require.Equal(t, int64(1), d.ReferencesCleared)
	require.Equal(t, int64(1), d.ReferencesRequeued)
	require.Equal(t, "", b.target(t), "cleared in the delete's transaction")
	b.drain(t)
	require.Equal(t, "", b.target(t), "no repository defines m/S")
	require.Zero(t, b.count(t, `SELECT count(*) FROM poi_references WHERE target_repository = 'acme/c' AND target_poi_id IS NOT NULL`))

	b.publish(t, "acme/b", "s.go", fn("b1", "s.go", "m/S"))
	b.drain(t)
	require.Equal(t, "acme/b/b1", b.target(t))
}

// A delete with PurgeFailed deletes the repository's failed POIs but those
// in reprocessing, and no other repository's; the audit event counts them.
func TestDelete_PurgeFailedKeepsReprocessingRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t)
	b.publish(t, "acme/c", "s.go", fn("c1", "s.go", "m/S"), bad("x1", "s.go"), bad("x2", "s.go"), bad("x3", "s.go"))
	b.publish(t, "acme/d", "s.go", fn("c1", "s.go", "m/S"), bad("x1", "s.go"))
	b.drain(t)
	_, err := b.db.Pool.Exec(ctx, `UPDATE failed_pois SET status = 'reprocessing' WHERE repository = 'acme/c' AND poi_id = 'x3'`)
	require.NoError(t, err)

	preview, err := b.store.Preview(ctx, "acme/c", repositories.Options{PurgeFailed: true})
	require.NoError(t, err)
	require.Equal(t, int64(2), preview.FailedPOIs)
	require.Equal(t, int64(1), preview.FailedPOIsKept)

	d, err := b.store.Delete(ctx, "acme/c", repositories.Options{PurgeFailed: true, Actor: "bob"})
	require.NoError(t, err)
	require.Equal(t, int64(2), d.FailedPOIs)
	require.Equal(t, int64(1), d.FailedPOIsKept)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/c' AND status = 'reprocessing'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM failed_pois WHERE repository = 'acme/d'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events
		WHERE action = 'repository_delete' AND actor = 'bob' AND item_count = 2 AND details->>'purge_failed' = 'true'`))
	b.drain(t)
}

// The repository's link_queue rows not yet linked are deleted; the symbols
// they changed are queued with the delete's own row (other repositories'
// references by them may not have been resolved again yet), their other
// names are not. The row's job id is minus the transaction id.
func TestDelete_KeepsTheSymbolsOfQueuedLinkRows(t *testing.T) {
	t.Parallel()
	b := setup(t) // not started: the queue stays as the delete leaves it
	ctx := context.Background()
	b.publish(t, "acme/c", "s.go", fn("c1", "s.go", "m/S"), fn("c2", "s.go", ""))
	_, err := b.db.Pool.Exec(ctx, `
		INSERT INTO link_queue (job_id, repository, file_id, file_version, replace, published_at, changed, ref_sources, ref_names,
		                        ref_types, publish_xid, lane)
		SELECT j, r, f, NULL, false, now(), c, '{}', '{}', '{}', 0, l
		FROM (VALUES (424242, 'acme/c', 'gone.go', '{sym:m/T,T,id:x}'::text[]), (424243, 'acme/other', 'o.go', '{sym:m/U}'))
			AS q(j, r, f, c), generate_series(0, $1 - 1) AS l`, link.Lanes)
	require.NoError(t, err)

	d, err := b.store.Delete(ctx, "acme/c", repositories.Options{})
	require.NoError(t, err)
	require.Equal(t, int64(1), d.LinkQueue)
	var jobID, xid int64
	var changed []string
	require.Equal(t, link.Lanes, b.count(t, `SELECT count(*) FROM link_queue WHERE repository = 'acme/c'`), "the delete's row, in every lane")
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT job_id, publish_xid, changed FROM link_queue WHERE repository = 'acme/c' AND lane = 0`).
		Scan(&jobID, &xid, &changed))
	require.Equal(t, -xid, jobID)
	require.Positive(t, xid)
	require.ElementsMatch(t, []string{"sym:m/S", "sym:m/T"}, changed)
	require.Equal(t, link.Lanes, b.count(t, `SELECT count(*) FROM link_queue WHERE repository = 'acme/other'`))
	require.Equal(t, link.Lanes, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'link' AND state = 'available'`), "a link job per lane")

	b.start(t)
	b.drain(t)
	require.Zero(t, b.count(t, `SELECT count(*) FROM link_queue`))
}

// A repository without data deletes nothing, queues nothing and inserts
// no link job; it is still audited.
func TestDelete_NothingToDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	preview, err := b.store.Preview(ctx, "nope", repositories.Options{PurgeFailed: true})
	require.NoError(t, err)
	require.True(t, preview.Empty())
	d, err := b.store.Delete(ctx, "nope", repositories.Options{PurgeFailed: true})
	require.NoError(t, err)
	require.True(t, d.Empty())
	require.Zero(t, b.count(t, `SELECT count(*) FROM link_queue`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'link'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dead_letter_events WHERE action = 'repository_delete'`))
}
