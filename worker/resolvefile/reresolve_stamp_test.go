package resolvefile

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

// TestQueueReresolve_RestampsTheDerivedReferencesItReResolves checks the
// protocol's restamp rule: a changer leaves each derived reference it
// re-resolves with a stamp no greater than its own (resolvedXmin), since
// the changers of the reference's other names are not serialized with it
// by a name lock and find the reference again only when it is stamped at
// or below their publish. A reference whose target and stamp need no
// change is not written (a lower stamp is kept: it only makes more
// changers read the reference again); any other reference keeps its
// stamp.
func TestQueueReresolve_RestampsTheDerivedReferencesItReResolves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO files (file_id) VALUES ('db/db.go'), ('db/conn.go'), ('app/a.go'), ('app/b.go'), ('app/c.go');
		INSERT INTO pois (poi_id, file_id, name, type, line_number, receiver, result) VALUES
			('open', 'db/db.go', 'Open', 'function_definition', 1, '', 'Conn'),
			('close', 'db/conn.go', 'Close', 'method_definition', 1, 'Conn', ''),
			('a', 'app/a.go', 'a', 'function_definition', 1, '', ''),
			('b', 'app/b.go', 'b', 'function_definition', 1, '', ''),
			('c', 'app/c.go', 'c', 'function_definition', 1, '', '');
		INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type, resolved_xmin, target_poi_id, target_file_id, job_id, depends) VALUES
			-- derived, stamped above the changer, target unchanged: restamped
			('a', 'app/a.go', '{db.Open}.Close', '{db.Open}.Close', 'CALLS', '500', 'close', 'db/conn.go', 1, '{Close,Open}'),
			-- not derived, stamped above the changer, target unchanged
			('a', 'app/a.go', '(db.Conn).Close', 'Conn.Close', 'CALLS', '500', 'close', 'db/conn.go', 1, NULL),
			-- derived, stamped below the changer, target unchanged: not written
			('b', 'app/b.go', '{db.Open}.Close', '{db.Open}.Close', 'CALLS', '200', 'close', 'db/conn.go', 1, '{Close,Open}'),
			-- derived, stamped below the changer, target changed
			('c', 'app/c.go', '{db.Open}.Close', '{db.Open}.Close', 'CALLS', '200', NULL, NULL, 1, '{Close,Open}')`)
	require.NoError(t, err)

	cands := map[string][]resolver.Candidate{
		"Open":  {{POIID: "open", FileID: "db/db.go", Name: "Open", Type: resolver.TypeFunction, Result: "Conn"}},
		"Close": {{POIID: "close", FileID: "db/conn.go", Name: "Close", Type: resolver.TypeMethod, Receiver: "Conn"}},
	}
	refs := []storedRef{
		{"a", "app/a.go", "{db.Open}.Close", "CALLS"},
		{"a", "app/a.go", "(db.Conn).Close", "CALLS"},
		{"b", "app/b.go", "{db.Open}.Close", "CALLS"},
		{"c", "app/c.go", "{db.Open}.Close", "CALLS"},
	}
	var written int64
	b := &pgx.Batch{}
	require.Equal(t, 4, queueReresolve(b, 7, "db/db.go", "300", []string{"Open"}, cands, refs, &written))
	require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
	require.Equal(t, int64(2), written, "the rows written: a's and c's derived references")

	rows, err := db.Pool.Query(ctx, `SELECT source_poi_id || ' ' || name || ' ' || resolved_xmin::text || ' ' ||
		coalesce(target_poi_id, '-') || ' job ' || job_id FROM poi_references ORDER BY 1`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"a (db.Conn).Close 500 close job 1",
		"a {db.Open}.Close 300 close job 7",
		"b {db.Open}.Close 200 close job 1",
		"c {db.Open}.Close 300 close job 7",
	}, got)
}
