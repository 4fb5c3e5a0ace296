package worker

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

// TestQueueReresolve_RestampsTheDerivedReferencesItReResolves checks the
// protocol's restamp rule: a changer writes each derived reference it
// re-resolves with a stamp no greater than its own (resolvedXmin), since
// the changers of the reference's other names are not serialized with it
// by a name lock and find the reference again only when it is stamped at
// or below their publish. Any other reference keeps its stamp.
func TestQueueReresolve_RestampsTheDerivedReferencesItReResolves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO files (file_id) VALUES ('db/db.go'), ('db/conn.go'), ('app/a.go');
		INSERT INTO pois (poi_id, file_id, name, type, line_number, receiver, result) VALUES
			('open', 'db/db.go', 'Open', 'function_definition', 1, '', 'Conn'),
			('close', 'db/conn.go', 'Close', 'method_definition', 1, 'Conn', ''),
			('a', 'app/a.go', 'a', 'function_definition', 1, '', '');
		INSERT INTO poi_references (source_poi_id, source_file_id, name, type, resolved_xmin, target_poi_id, target_file_id, depends) VALUES
			-- derived, stamped above the changer, target unchanged
			('a', 'app/a.go', '{db.Open}.Close', 'CALLS', '500', 'close', 'db/conn.go', '{Close,Open}'),
			-- not derived, stamped above the changer, target unchanged
			('a', 'app/a.go', '(db.Conn).Close', 'CALLS', '500', 'close', 'db/conn.go', NULL)`)
	require.NoError(t, err)

	cands := map[string][]resolver.Candidate{
		"Open":  {{POIID: "open", FileID: "db/db.go", Name: "Open", Type: resolver.TypeFunction, Result: "Conn"}},
		"Close": {{POIID: "close", FileID: "db/conn.go", Name: "Close", Type: resolver.TypeMethod, Receiver: "Conn"}},
	}
	refs := []storedRef{
		{"a", "app/a.go", "{db.Open}.Close", "CALLS"},
		{"a", "app/a.go", "(db.Conn).Close", "CALLS"},
	}
	var written int64
	b := &pgx.Batch{}
	require.Equal(t, 2, queueReresolve(b, 7, "db/db.go", "300", []string{"Open"}, cands, refs, &written))
	require.NoError(t, db.Pool.SendBatch(ctx, b).Close())

	stamps := map[string]string{}
	rows, err := db.Pool.Query(ctx, `SELECT name, resolved_xmin::text FROM poi_references`)
	require.NoError(t, err)
	for rows.Next() {
		var name, stamp string
		require.NoError(t, rows.Scan(&name, &stamp))
		stamps[name] = stamp
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"{db.Open}.Close": "300", "(db.Conn).Close": "500"}, stamps)
}
