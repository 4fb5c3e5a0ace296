package resolvefile

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

// The load of references that may need resolving again reads, per changed
// name, only the index range of its key up to the publish: references
// resolved after the publish are neither returned nor read from the heap:
// the generic plan, as an index scan (the test's tables are too small for
// the planner to pick one unprompted), is an index range on (key,
// resolved_xmin).
func TestQueueStaleRefs_ReadsOnlyUpToThePublish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO files (file_id) VALUES ('a.go'), ('b.go'), ('c.go');
		INSERT INTO pois (poi_id, file_id, name, type, line_number) VALUES
			('a1', 'a.go', 'fa', 'function', 1), ('b1', 'b.go', 'fb', 'function', 1), ('c1', 'c.go', 'fc', 'function', 1);
		INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type, resolved_xmin) VALUES
			('a1', 'a.go', 'fc', 'fc', 'CALLS', '90'),   -- resolved before the publish (xid 100)
			('b1', 'b.go', 'fc', 'fc', 'CALLS', '100'),  -- its xmin is the publish: may not have seen it
			('a1', 'a.go', 'fb', 'fb', 'CALLS', '101'),  -- resolved after it
			('c1', 'c.go', 'fc', 'fc', 'CALLS', '5'),    -- the publishing file's own
			('b1', 'b.go', 'other.fc', 'fc', 'CALLS', '90'), -- fc's key: another package's fc may be it
			('b1', 'b.go', 'fd', 'fd', 'CALLS', '90')    -- another key`)
	require.NoError(t, err)

	load := func(publishXID int64) []storedRef {
		var refs []storedRef
		b := &pgx.Batch{}
		queueStaleRefs(b, "c.go", []string{"fc", "fb"}, publishXID, &refs)
		require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
		return refs
	}
	require.ElementsMatch(t, []storedRef{{"a1", "a.go", "fc", "CALLS"}, {"b1", "b.go", "fc", "CALLS"}, {"b1", "b.go", "other.fc", "CALLS"}}, load(100))
	require.ElementsMatch(t, []storedRef{{"a1", "a.go", "fc", "CALLS"}, {"b1", "b.go", "fc", "CALLS"}, {"b1", "b.go", "other.fc", "CALLS"},
		{"a1", "a.go", "fb", "CALLS"}}, load(0), "publish unknown: every other file's reference")

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off`)
	require.NoError(t, err)
	b := &pgx.Batch{}
	queueStaleRefs(b, "c.go", nil, 100, new([]storedRef))
	text := testdb.GenericPlan(t, tx, b.QueuedQueries[0].SQL, `'{fc}', 'c.go', '100'`)
	require.Contains(t, text, "poi_references_key_resolved_xmin_idx", text)
	require.Contains(t, text, "resolved_xmin <= ", text)
	require.NotContains(t, text, "Filter: (resolved_xmin", text)
}

// A publish that changed more names than one read of depends looks up
// (dependsChunk) still finds every derived reference that depends on any of
// them, wherever the name falls among the changed ones; one found through
// two of its names is re-resolved once.
func TestQueueStaleRefs_ReadsDependsOfManyChangedNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO files (file_id) VALUES ('db/db.go'), ('app/a.go');
		INSERT INTO pois (poi_id, file_id, name, type, line_number, receiver, result) VALUES
			('open', 'db/db.go', 'Open', 'function_definition', 1, '', 'Conn'),
			('close', 'db/db.go', 'Close', 'method_definition', 2, 'Conn', ''),
			('a', 'app/a.go', 'a', 'function_definition', 1, '', '');
		INSERT INTO poi_references (source_poi_id, source_file_id, name, key, type, resolved_xmin, depends) VALUES
			('a', 'app/a.go', '{db.Open}.Close', '{db.Open}.Close', 'CALLS', '90', '{Close,Open}')`)
	require.NoError(t, err)

	changed := make([]string, 0, 2*dependsChunk+10)
	for i := range cap(changed) {
		changed = append(changed, fmt.Sprintf("filler%05d", i))
	}
	changed[dependsChunk+7] = "Open"    // in the second read
	changed[2*dependsChunk+3] = "Close" // in the third
	var refs []storedRef
	b := &pgx.Batch{}
	queueStaleRefs(b, "db/db.go", changed, 100, &refs)
	require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
	want := storedRef{"a", "app/a.go", "{db.Open}.Close", "CALLS"}
	require.Contains(t, refs, want)
	for _, r := range refs {
		require.Equal(t, want, r)
	}

	cands := map[string][]resolver.Candidate{
		"Open":  {{POIID: "open", FileID: "db/db.go", Name: "Open", Type: resolver.TypeFunction, Result: "Conn"}},
		"Close": {{POIID: "close", FileID: "db/db.go", Name: "Close", Type: resolver.TypeMethod, Receiver: "Conn"}},
	}
	var written int64
	b = &pgx.Batch{}
	require.Equal(t, 1, queueReresolve(b, 7, "db/db.go", "100", []string{"Open", "Close"}, cands, refs, &written))
	require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
	require.Equal(t, int64(1), written)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'a' AND target_poi_id = 'close'`))
}
