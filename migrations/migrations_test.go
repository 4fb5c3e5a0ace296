package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
)

func TestMigrator_UpDownUpRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t) // already migrated up
	m, err := migrations.New(db.Pool, db.Schema, testdb.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })

	st, err := m.Status(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(st), 2)
	for _, s := range st {
		require.True(t, s.Applied, "migration %d (%s) not applied", s.Version, s.Source)
	}
	pending, err := m.Pending(ctx)
	require.NoError(t, err)
	require.False(t, pending)

	tables := func() int {
		return testdb.Count(t, db.Pool, `SELECT count(*) FROM information_schema.tables
			WHERE table_schema = $1 AND table_name IN ('river_job', 'failed_pois', 'pois', 'relationships', 'dead_lettered_items')`, db.Schema)
	}
	require.Equal(t, 5, tables())

	down, err := m.DownTo(ctx, 0)
	require.NoError(t, err)
	require.Len(t, down, len(st))
	require.Equal(t, 0, tables(), "down to 0 must remove River's tables and relay's")

	up, err := m.Up(ctx)
	require.NoError(t, err)
	require.Len(t, up, len(st))
	require.Equal(t, 5, tables())
}

// Migration 8 folds relationships into poi_references: every edge and
// every unresolved reference survives the way up, the view shows the same
// edges, grants on the table carry over to the view, and the way down
// gives the table back.
func TestMigrator_OneRowPerReferenceKeepsEveryEdge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := migratedTo(t, 7)

	role := "relay_reader_" + db.Name[len("relay_test_db_"):]
	_, err := db.Pool.Exec(ctx, `CREATE ROLE `+role+` NOLOGIN`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), `DROP OWNED BY `+role)
		_, _ = db.Pool.Exec(context.Background(), `DROP ROLE `+role)
	})
	for _, q := range []string{
		`INSERT INTO files (file_id) VALUES ('a.go'), ('b.go')`,
		`INSERT INTO pois (poi_id, file_id, name, type, line_number) VALUES
			('a1', 'a.go', 'A', 'function', 1), ('b1', 'b.go', 'B', 'function', 1), ('b2', 'b.go', 'C', 'function', 2)`,
		// a1 calls B (resolved) and Missing (unresolved); b2 calls A, an
		// edge someone wrote without its reference.
		`INSERT INTO poi_references (source_poi_id, source_file_id, name, type, resolved_xmin) VALUES
			('a1', 'a.go', 'B', 'CALLS', '42'), ('a1', 'a.go', 'Missing', 'CALLS', '42')`,
		`INSERT INTO relationships (source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id) VALUES
			('a1', 'b1', 'CALLS', 'B', 'a.go', 'b.go', 7), ('b2', 'a1', 'CALLS', 'A', 'b.go', 'a.go', 8)`,
		`GRANT SELECT ON relationships TO ` + role,
	} {
		_, err := db.Pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	_, err = m.Up(ctx)
	require.NoError(t, err)
	edges := func() []string {
		// Unprepared: the migrations change the relationships' result type
		// (a view, then a table, its columns' collation), which a prepared
		// statement must not see change.
		rows, err := db.Pool.Query(ctx, `SELECT source_poi_id || '>' || target_poi_id || ' ' || type || ' ' || name || ' ' || target_file_id || ' ' || job_id
			FROM relationships ORDER BY 1`, pgx.QueryExecModeExec)
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t, []string{"a1>b1 CALLS B b.go 7", "b2>a1 CALLS A a.go 8"}, edges())
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM poi_references`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM poi_references
		WHERE name = 'Missing' AND target_poi_id IS NULL`), "the unresolved reference stays")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM poi_references
		WHERE source_poi_id = 'a1' AND name = 'B' AND target_poi_id = 'b1'`), "the resolved reference stays")
	var granted bool
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT has_table_privilege($1, 'relationships', 'SELECT')`, role).Scan(&granted))
	require.True(t, granted, "the view keeps the table's grants")

	// Deleting a target keeps the reference, unresolved: relay's statements
	// that delete POIs clear the targets into them (migration 33 dropped
	// the trigger that did).
	_, err = db.Pool.Exec(ctx, `DELETE FROM pois WHERE poi_id = 'b1'`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `UPDATE poi_references SET target_poi_id = NULL, target_file_id = NULL
		WHERE target_repository = '' AND target_poi_id = ANY('{b1}') AND target_poi_id IS NOT NULL`)
	require.NoError(t, err)
	require.Equal(t, []string{"b2>a1 CALLS A a.go 8"}, edges())
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'a1' AND name = 'B' AND target_poi_id IS NULL`))

	_, err = m.DownTo(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, []string{"b2>a1 CALLS A a.go 8"}, edges())
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'relationships' AND table_type = 'BASE TABLE'`, db.Schema))
}
