package resolvefile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// The race the resolution protocol exists for, forced: the linker resolves
// a reference from a snapshot that misses a concurrent publish of its
// target (the publish is still open while the caller is linked), and the
// target's publish then commits. The reference must end up resolved: the
// linker stamped it with a snapshot xmin at or below the open publish's
// xid, so the publish's changed name has it resolved again. Without the
// stamp taken before the symbol table is read, or without resolving again
// the references to changed names, the call stays unresolved.
func TestLinker_ReferenceLinkedWithoutAConcurrentPublishOfItsTargetIsResolvedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	newClient := func() *e2e {
		return newE2E(t, db, worker.ConfigFrom(db.Config()))
	}
	e := newClient()
	e.publish(t, outbox.Analysis{FileID: "src/caller.js", POIs: pois(fn("c1", "caller", "src/caller.js", "function caller() { target(); }"))})

	// The target's publish stays open while the caller is worked and linked.
	open, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = open.Rollback(ctx) }()
	_, err = e.pub.PublishTx(ctx, open, outbox.Analysis{FileID: "src/target.js", POIs: pois(fn("t1", "target", "src/target.js", "function target() {}"))})
	require.NoError(t, err)
	require.NoError(t, e.w.RunUntilIdle(ctx, nil))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM poi_references WHERE source_poi_id = 'c1' AND target_poi_id IS NULL`),
		"the caller was linked without the open publish")

	require.NoError(t, open.Commit(ctx))
	e = newClient()
	require.NoError(t, e.w.RunUntilIdle(ctx, nil))
	require.Contains(t, relationships(t, db.Pool), "c1 CALLS t1", "the reference linked without its target's publish was not resolved again")
}
