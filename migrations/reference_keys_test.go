package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/resolver"
)

// Migration 21 keeps the keys migration 19's SQL function computed, and
// they are resolver.ReferenceKey's, which the worker writes from then on:
// the rule has one definition, and the rows stored before it agree with it.
func TestMigrator_ReferenceKeysStoredInSQLAreReferenceKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := migratedTo(t, 19)

	names := []string{"Close", ".Close", "().Close", "(.).Close", "store.Close", "(store).Close", "^.Close",
		"(.Conn).Close", "(store.Conn).Close", "(^.Conn).Close", "(.conn).Close", "{newDB}.Query", "{q.F}.m",
		"sym:github.com/x/db.Open", "id:f1#open", "render", "a.b.c", "(a.b).c.d", "(x).", "()", "(", ".", ""}
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (file_id) VALUES ('a.go');
		INSERT INTO pois (poi_id, file_id, name, type, line_number) VALUES ('a1', 'a.go', 'A', 'function', 1)`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO poi_references (source_poi_id, source_file_id, name, type)
		SELECT 'a1', 'a.go', n, 'CALLS' FROM unnest($1::text[]) AS n`, names)
	require.NoError(t, err)

	_, err = m.Up(ctx)
	require.NoError(t, err)
	rows, err := db.Pool.Query(ctx, `SELECT name, key FROM poi_references`, pgx.QueryExecModeExec)
	require.NoError(t, err)
	got := map[string]string{}
	for rows.Next() {
		var name, key string
		require.NoError(t, rows.Scan(&name, &key))
		got[name] = key
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, len(names))
	for name, key := range got {
		require.Equal(t, resolver.ReferenceKey(name), key, "the key of %q", name)
	}
	var fn int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE proname = 'relay_reference_key'`).Scan(&fn))
	require.Zero(t, fn, "the SQL definition of the key is gone")
}
