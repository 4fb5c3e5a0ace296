package resolvefile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// A publish that removes a POI (here its file's, published empty) removes
// the references that start at it, as the source-side foreign keys' ON
// DELETE CASCADE did before migration 00006 replaced them with a statement
// trigger, itself replaced by the publisher's statements in migration
// 00033, and the relationships that end at it (their targets cleared).
func TestRemovingAPOIRemovesItsReferencesAndEdgesBothWays(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	e := newE2E(t, db, resolveQueue(db))
	e.publish(t, outbox.Analysis{FileID: "src/a.js", POIs: pois(fn("a.a", "a", "src/a.js", "function a() { b(); missing(); }"))})
	e.publish(t, outbox.Analysis{FileID: "src/b.js", POIs: pois(fn("b.b", "b", "src/b.js", "function b() { c(); }"))})
	e.publish(t, outbox.Analysis{FileID: "src/c.js", POIs: pois(fn("c.c", "c", "src/c.js", "function c() { a(); }"))})
	e.start(t)
	waitDrained(t, db.Pool)
	require.ElementsMatch(t, []string{"a.a CALLS b.b", "b.b CALLS c.c", "c.c CALLS a.a"}, relationships(t, db.Pool))

	ctx := context.Background()
	countRefs := func(src string) (n int) {
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM poi_references WHERE source_poi_id = $1`, src).Scan(&n))
		return n
	}
	require.Equal(t, 2, countRefs("a.a"), "a.a refers to b and missing")

	e.publish(t, outbox.Analysis{FileID: "src/a.js"})
	require.Zero(t, countRefs("a.a"), "the deleted POI's references stayed")
	require.Equal(t, []string{"b.b CALLS c.c"}, relationships(t, db.Pool),
		"edges from (a.a CALLS b.b) or to (c.c CALLS a.a) the deleted POI stayed")
	require.Equal(t, 1, countRefs("c.c"), "another file's reference to the deleted name must stay, to resolve a later publish of it")
}
