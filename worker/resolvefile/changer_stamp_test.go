package resolvefile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/outbox"
)

// TestResolveFileWorker_ChangerThatRefersToNothingHoldsItsStampLock checks
// the protocol's rule that every changer holds its stamp lock (taken after
// its barrier, before it reads the symbol table), whether it refers to
// names or not: the derived references it re-resolves look up names of
// which other jobs are the changers, and a changer of one of them whose
// publish its reading missed must wait for it in its barrier.
//
// J1 (Open's result becomes *Conn; db/db.go calls nothing) re-resolves
// {db.Open}.Ping and {db.Open}.Close and is held at its first write (a row
// lock on {db.Open}.Ping) after reading the symbol table; a second Close
// method on Conn is then published; J2 (changer of Close) must wait for J1
// in its barrier and then resolve {db.Open}.Close again (ambiguous).
// Without J1's stamp lock, J2 finishes first and J1 then writes the Close
// it read before the second one existed.
func TestResolveFileWorker_ChangerThatRefersToNothingHoldsItsStampLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const fn, method, class = "function_definition", "method_definition", "class_declaration"
	dbFile := func(result string) outbox.Analysis {
		return goFile("db/db.go",
			[3]string{fn, "Open", "func Open() *" + result + " {\n\treturn nil\n}"},
			[3]string{class, "DB", "type DB struct{}"},
			[3]string{method, "Close", "func (d *DB) Close() error {\n\treturn nil\n}"})
	}
	connFile := goFile("db/conn.go",
		[3]string{class, "Conn", "type Conn struct{}"},
		[3]string{method, "Close", "func (c *Conn) Close() error {\n\treturn nil\n}"},
		[3]string{method, "Ping", "func (c *Conn) Ping() error {\n\treturn nil\n}"})
	conn2File := goFile("db/conn2.go",
		[3]string{method, "Close", "func (c *Conn) Close() error {\n\treturn nil\n}"})
	aFile := goFile("app/a.go", [3]string{fn, "a", "func a() {\n\tx := db.Open()\n\tx.Ping()\n}"})
	mainFile := goFile("app/main.go", [3]string{fn, "main", "func main() {\n\td := db.Open()\n\td.Close()\n}"})

	e := setupE2E(t, 4)
	e.start(t)
	for _, a := range []outbox.Analysis{dbFile("DB"), connFile, aFile, mainFile} {
		e.publish(t, a)
	}
	waitDrained(t, e.db.Pool)
	require.Contains(t, relationships(t, e.db.Pool), "app/main.go:main CALLS db/db.go:Close")

	// Hold J1 at its first write: {db.Open}.Ping of app/a.go sorts first.
	hold, err := e.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }()
	_, err = hold.Exec(ctx, `SELECT 1 FROM poi_references WHERE source_poi_id = 'app/a.go:a' AND name = '{db.Open}.Ping' FOR UPDATE`)
	require.NoError(t, err)
	e.publish(t, dbFile("Conn"))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`).Scan(&n))
		return n > 0
	}, 30*time.Second, 10*time.Millisecond, "J1 never reached its write")

	e.publish(t, conn2File)
	// J2 either waits in its barrier (for a stamp lock: a one-bigint
	// advisory key at or above 2^62, in this test's database) or finishes.
	require.Eventually(t, func() bool {
		var waiting, done bool
		require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND mode = 'ExclusiveLock'
			        AND objsubid = 1 AND (classid::bigint << 32) | objid::bigint >= 1::bigint << 62
			        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
			EXISTS (SELECT 1 FROM river_job WHERE args->>'fileId' = 'db/conn2.go' AND state = 'completed')`).Scan(&waiting, &done))
		return waiting || done
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, hold.Rollback(ctx))
	waitDrained(t, e.db.Pool)
	rels := relationships(t, e.db.Pool)
	require.NotContains(t, rels, "app/main.go:main CALLS db/conn.go:Close", "%v", rels)
	require.NotContains(t, rels, "app/main.go:main CALLS db/conn2.go:Close", "%v", rels)
	require.Contains(t, rels, "app/a.go:a CALLS db/conn.go:Ping", "%v", rels)
}
