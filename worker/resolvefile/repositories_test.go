package resolvefile_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// twoRepositories returns two codebases with the same file ids, POI ids and
// names that resolve differently: in "acme/b" shared() is defined once
// (file 0) and late() nowhere, so a name that crossed repositories would
// change either one's relationships.
func twoRepositories() (a, b []outbox.Analysis) {
	a, b = corpus(12), corpus(12)
	for i := range a {
		a[i].Repository = "acme/a"
	}
	for i := range b {
		b[i].Repository = "acme/b"
		b[i].POIs = slices.DeleteFunc(slices.Clone(b[i].POIs), func(raw json.RawMessage) bool {
			var p struct{ ID string }
			_ = json.Unmarshal(raw, &p)
			return p.ID == "f01.s" || p.ID == "f11.l"
		})
	}
	return a, b
}

// repositoryRows returns every stored row of repo, as text, in key order:
// its files (without publish times), POIs, references (with their targets,
// rounds and times) and failed POIs.
func repositoryRows(t *testing.T, pool *pgxpool.Pool, repo string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT 'file ' || file_id || ' v' || version || ' n' || poi_count FROM files WHERE repository = $1
		UNION ALL SELECT 'poi ' || p::text FROM pois p WHERE repository = $1
		UNION ALL SELECT 'ref ' || r::text FROM poi_references r WHERE repository = $1
		UNION ALL SELECT 'failed ' || file_id || ' ' || coalesce(poi_id, '') || ' ' || error_signature FROM failed_pois WHERE repository = $1
		ORDER BY 1`, repo)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// relationshipsOf returns repo's relationships, as relationships does.
func relationshipsOf(t *testing.T, pool *pgxpool.Pool, repo string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT source_poi_id || ' ' || type || ' ' || target_poi_id || ' @' || target_repository
		FROM relationships WHERE repository = $1 ORDER BY 1`, repo)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// Two repositories with identical file ids, POI ids and names, published
// interleaved and concurrently with four workers (and one file re-published
// mid-run), resolve exactly as each does alone; a later publish in one
// rewrites no row of the other.
func TestEndToEnd_RepositoriesResolveAsEachDoesAlone(t *testing.T) {
	t.Parallel()
	a, b := twoRepositories()
	alone := map[string][]string{}
	failedAlone := map[string]int{}
	for repo, files := range map[string][]outbox.Analysis{"acme/a": a, "acme/b": b} {
		run, _ := referenceRun(t, files)
		alone[repo] = relationshipsOf(t, run.db.Pool, repo)
		failedAlone[repo] = testdb.Count(t, run.db.Pool, `SELECT count(DISTINCT (file_id, poi_id, error_signature)) FROM failed_pois`)
	}
	require.Contains(t, alone["acme/a"], "f03.a CALLS f11.l @acme/a", "late() resolves in acme/a")
	require.NotContains(t, alone["acme/a"], "f03.h CALLS f00.s @acme/a", "shared() is ambiguous in acme/a")
	require.Contains(t, alone["acme/b"], "f03.h CALLS f00.s @acme/b", "shared() is unique in acme/b")
	require.NotContains(t, alone["acme/b"], "f03.a CALLS f11.l @acme/b", "late() is unknown in acme/b")

	for _, tc := range orderCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupE2E(t, tc.concurrency)
			var both []outbox.Analysis
			for i := range a {
				both = append(both, a[i], b[i])
			}
			e.start(t)
			e.publishConcurrently(t, tc.order(both))
			trimmed := a[11]
			trimmed.POIs = trimmed.POIs[:len(trimmed.POIs)-2] // drops late() (and the bad POI)
			e.publish(t, trimmed)
			e.publish(t, a[11])
			waitDrained(t, e.db.Pool)
			for _, repo := range []string{"acme/a", "acme/b"} {
				require.Equal(t, alone[repo], relationshipsOf(t, e.db.Pool, repo), repo)
				// The distinct failures: the re-publish fails its bad POI again.
				require.Equal(t, failedAlone[repo], testdb.Count(t, e.db.Pool,
					`SELECT count(DISTINCT (file_id, poi_id, error_signature)) FROM failed_pois WHERE repository = $1`, repo), repo)
			}

			// acme/a changes the names acme/b's references look up: not one
			// of acme/b's rows is rewritten (none resolved again).
			before := repositoryRows(t, e.db.Pool, "acme/b")
			lastRound := testdb.Count(t, e.db.Pool, `SELECT coalesce(max(id), 0) FROM link_rounds`)
			e.publish(t, trimmed)
			waitDrained(t, e.db.Pool)
			require.Equal(t, before, repositoryRows(t, e.db.Pool, "acme/b"))
			// Only acme/a's references to late() were resolved again (acme/b
			// has as many).
			reresolved := testdb.Count(t, e.db.Pool, `SELECT coalesce(sum(reresolved), 0) FROM link_rounds WHERE id > $1`, lastRound)
			require.Positive(t, reresolved)
			require.LessOrEqual(t, reresolved, testdb.Count(t, e.db.Pool,
				`SELECT count(*) FROM poi_references WHERE repository = 'acme/a' AND key = 'late'`))
			require.NotContains(t, relationshipsOf(t, e.db.Pool, "acme/a"), "f03.a CALLS f11.l @acme/a")

			// Deleting acme/a leaves acme/b byte for byte the same.
			before = repositoryRows(t, e.db.Pool, "acme/b")
			del, err := repositories.New(e.db.Pool, e.client, testdb.Logger(t)).
				Delete(context.Background(), "acme/a", repositories.Options{PurgeFailed: true, Actor: "test"})
			require.NoError(t, err)
			require.EqualValues(t, 12, del.Files)
			waitDrained(t, e.db.Pool)
			require.Empty(t, repositoryRows(t, e.db.Pool, "acme/a"))
			require.Equal(t, before, repositoryRows(t, e.db.Pool, "acme/b"))
			require.Equal(t, alone["acme/b"], relationshipsOf(t, e.db.Pool, "acme/b"))
		})
	}
}

// A publish in one repository neither waits for nor locks another's: a
// file held by an uncommitted publish in acme/a does not hold up a publish
// of the same file id in acme/b.
func TestPublishTx_RepositoriesDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	e := setupE2E(t, 1)
	a, b := twoRepositories()
	ctx := context.Background()
	held, err := e.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	_, err = e.pub.PublishTx(ctx, held, a[0])
	require.NoError(t, err)

	tx, err := e.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`)
	require.NoError(t, err)
	start := time.Now()
	_, err = e.pub.PublishTx(ctx, tx, b[0])
	require.NoError(t, err, "the publish in acme/b waited for acme/a's lock")
	require.NoError(t, tx.Commit(ctx))
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, 1, testdb.Count(t, e.db.Pool, `SELECT count(*) FROM files WHERE repository = 'acme/b'`))
}
