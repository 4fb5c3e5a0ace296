package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// Migration 32 copies each link_queue row queued before lanes to every
// lane (each lane links its own keys of it); its rollback merges a job's
// rows back into one, each reference once, the changed names of its
// lowest lane.
func TestMigrator_LinkQueueRowsFollowLanes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := migratedTo(t, 31)

	_, err := db.Pool.Exec(ctx, `
		INSERT INTO link_queue (job_id, file_id, file_version, publish_xid, replace, published_at, changed, ref_sources, ref_names,
		                        ref_types, repository)
		VALUES (7, 'a.js', 1, 0, true, now(), '{a,b}', '{s1,s2}', '{a,zz}', '{CALLS,CALLS}', 'r'),
		       (8, 'b.js', NULL, 0, true, now(), '{}', '{}', '{}', '{}', 'r')`)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, 16, testdb.Count(t, db.Pool, `SELECT count(*) FROM link_queue`), "each row in all 8 lanes")
	require.Equal(t, 8, testdb.Count(t, db.Pool, `
		SELECT count(DISTINCT lane) FROM link_queue WHERE job_id = 7 AND ref_names = '{a,zz}' AND changed = '{a,b}'`))

	// A job queued by lanes: its references split, lane 0 with every changed name.
	_, err = db.Pool.Exec(ctx, `
		INSERT INTO link_queue (job_id, file_id, file_version, publish_xid, replace, published_at, changed, ref_sources, ref_names,
		                        ref_types, repository, lane)
		VALUES (9, 'c.js', 1, 0, true, now(), '{k,m}', '{c1}', '{x}', '{CALLS}', 'r', 0),
		       (9, 'c.js', 1, 0, true, now(), '{m}', '{c2}', '{y}', '{CALLS}', 'r', 5)`)
	require.NoError(t, err)
	_, err = m.DownTo(ctx, 31)
	require.NoError(t, err)
	type row struct {
		job                  int64
		srcs, names, changed []string
	}
	rows, err := db.Pool.Query(ctx, `SELECT job_id, ref_sources, ref_names, changed FROM link_queue ORDER BY job_id`)
	require.NoError(t, err)
	var got []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.job, &r.srcs, &r.names, &r.changed))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []row{
		{7, []string{"s1", "s2"}, []string{"a", "zz"}, []string{"a", "b"}},
		{8, []string{}, []string{}, []string{}},
		{9, []string{"c1", "c2"}, []string{"x", "y"}, []string{"k", "m"}},
	}, got)
	_, err = m.Up(ctx)
	require.NoError(t, err)
}
