package migrations_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// Migration 29 gives the actionable failed_pois rows already there their
// file's version, supersedes those of an older version, of a file that is
// gone and all but the newest of each POI, saying why, and leaves closed
// rows alone; its rollback turns superseded rows into ignored ones.
func TestMigrator_FailedPOIsFollowFileVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := migratedTo(t, 26)

	_, err := db.Pool.Exec(ctx, `
		INSERT INTO files (repository, file_id, version, published_at) VALUES
			('', 'a.py', 2, now() - interval '1 hour'), ('', 'b.py', 1, now() - interval '3 hours');
		INSERT INTO failed_pois (repository, original_job_id, file_id, poi_id, poi_index, failed_at, error_message,
		                         error_class, error_signature, original_poi_data, status)
		VALUES ('', 1, 'a.py', 'a1', 0, now() - interval '2 hours', 'm', 'validation', 's', '{}', 'new'),
		       ('', 2, 'a.py', 'a1', 0, now() - interval '30 minutes', 'm', 'validation', 's', '{}', 'new'),
		       ('', 3, 'a.py', 'a1', 0, now() - interval '20 minutes', 'm', 'validation', 's', '{}', 'ignored'),
		       ('', 4, 'a.py', NULL, 1, now() - interval '20 minutes', 'm', 'validation', 's', '{}', 'new'),
		       ('gone', 5, 'g.py', 'g1', 0, now(), 'm', 'validation', 's', '{}', 'new'),
		       ('', 6, 'b.py', 'b1', 0, now() - interval '4 hours', 'm', 'validation', 's', '{}', 'reprocessed')`)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)

	rows, err := db.Pool.Query(ctx, `SELECT original_job_id, status, coalesce(file_version, 0), coalesce(superseded_reason, '')
		FROM failed_pois ORDER BY original_job_id`)
	require.NoError(t, err)
	type row struct {
		job     int64
		status  string
		version int64
		reason  string
	}
	var got []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.job, &r.status, &r.version, &r.reason))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	newest := testdb.Count(t, db.Pool, `SELECT id FROM failed_pois WHERE original_job_id = 3`)
	require.Equal(t, []row{
		{1, "superseded", 0, "the file was published again after this failure"},
		{2, "superseded", 2, fmt.Sprintf("row %d is a newer failure of the same POI", newest)},
		{3, "ignored", 2, ""},
		{4, "new", 2, ""},
		{5, "superseded", 0, `repository "gone" was deleted: reprocessing would recreate it`},
		{6, "reprocessed", 0, ""},
	}, got)
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT sum(superseded)::int FROM failed_pois_by_file`))

	_, err = m.DownTo(ctx, 26)
	require.NoError(t, err)
	require.Equal(t, 4, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'ignored'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois
		WHERE ignored_reason = 'superseded: the file was published again after this failure'`))
	_, err = m.Up(ctx)
	require.NoError(t, err)
}
