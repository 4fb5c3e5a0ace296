package indexplan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/indexplan"
	"github.com/relay-dev/relay/internal/testdb"
)

// runLookups runs stmt (an EXECUTE) seven times, enough for PostgreSQL to settle
// on a cached generic plan, with or without Begin and End around it.
func runLookups(t *testing.T, tx pgx.Tx, stmt string, wrap bool) {
	t.Helper()
	b := &pgx.Batch{}
	if wrap {
		indexplan.Begin(b)
	}
	for range 7 {
		b.Queue(stmt)
	}
	if wrap {
		indexplan.End(b)
	}
	require.NoError(t, tx.SendBatch(context.Background(), b).Close())
}

func explain(t *testing.T, tx pgx.Tx, stmt string, wrap bool) string {
	t.Helper()
	b := &pgx.Batch{}
	if wrap {
		indexplan.Begin(b)
	}
	var lines []string
	b.Queue("EXPLAIN " + stmt).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				return err
			}
			lines = append(lines, l)
		}
		return rows.Err()
	})
	if wrap {
		indexplan.End(b)
	}
	require.NoError(t, tx.SendBatch(context.Background(), b).Close())
	return strings.Join(lines, "\n")
}

// A lookup by name first planned while pois is small keeps a sequential
// scan once the table has grown; between Begin and End it is planned (and
// cached) as index probes.
func TestBegin_CachesIndexPlansWhileATableIsSmall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()

	fill := func(from, to int) {
		_, err := tx.Exec(ctx, `INSERT INTO files (file_id) SELECT DISTINCT 'f' || (g / 50) FROM generate_series($1::int, $2::int) g
			ON CONFLICT DO NOTHING`, from, to)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO pois (poi_id, file_id, name, type, line_number)
			SELECT 'p' || g, 'f' || (g / 50), 'name' || g, 'function', 1 FROM generate_series($1::int, $2::int) g`, from, to)
		require.NoError(t, err)
	}
	fill(1, 2000)

	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("name%d", i*7+1)
	}
	arg := "'{" + strings.Join(names, ",") + "}'"
	for _, s := range []string{"plain", "wrapped"} {
		_, err := tx.Exec(ctx, "PREPARE lookup_"+s+"(text[]) AS SELECT poi_id, file_id FROM pois WHERE name = ANY($1) AND type <> 'import'")
		require.NoError(t, err)
	}
	runLookups(t, tx, "EXECUTE lookup_plain("+arg+")", false)
	runLookups(t, tx, "EXECUTE lookup_wrapped("+arg+")", true)

	fill(2001, 60000)
	plain := explain(t, tx, "EXECUTE lookup_plain("+arg+")", false)
	require.Contains(t, plain, "Seq Scan",
		"the hazard this package exists for: a plan cached while the table was small scans it whole once it has grown")
	wrapped := explain(t, tx, "EXECUTE lookup_wrapped("+arg+")", true)
	require.NotContains(t, wrapped, "Seq Scan", "between Begin and End, plans are index probes:\n%s", wrapped)
	require.Contains(t, wrapped, "pois_name_idx")
}

// settingsSQL reads the settings indexplan makes, in scanSettings' order.
const settingsSQL = `SELECT current_setting('enable_seqscan'), current_setting('enable_hashjoin'),
	current_setting('enable_mergejoin'), current_setting('jit'), current_setting('plan_cache_mode')`

func scanSettings(row pgx.Row) (got [5]string, err error) {
	err = row.Scan(&got[0], &got[1], &got[2], &got[3], &got[4])
	return got, err
}

// End puts back what Begin found, not the server's defaults: the caller's
// transaction (a publish runs in the caller's) keeps its own settings.
func TestEnd_RestoresTheTransactionsSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL enable_hashjoin = off; SET LOCAL jit = off; SET LOCAL enable_seqscan = on;
		SET LOCAL enable_mergejoin = on; SET LOCAL plan_cache_mode = force_custom_plan`)
	require.NoError(t, err)

	var inside, after [5]string
	b := &pgx.Batch{}
	indexplan.Begin(b)
	b.Queue(settingsSQL).QueryRow(func(r pgx.Row) (err error) { inside, err = scanSettings(r); return err })
	indexplan.End(b)
	b.Queue(settingsSQL).QueryRow(func(r pgx.Row) (err error) { after, err = scanSettings(r); return err })
	require.NoError(t, tx.SendBatch(ctx, b).Close())

	require.Equal(t, [5]string{"off", "off", "off", "off", "force_generic_plan"}, inside)
	require.Equal(t, [5]string{"on", "off", "on", "off", "force_custom_plan"}, after)
}

// A statement PostgreSQL would plan afresh on every execution (a custom
// plan: River's completion of a job was planned on each Bind, 0.38 ms of
// the 0.6 ms it cost) is planned once between Begin and End.
func TestBegin_PlansEachStatementOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `CREATE TABLE jobs (id bigint PRIMARY KEY, state text NOT NULL);
		INSERT INTO jobs SELECT g, 'running' FROM generate_series(1, 1000) g; ANALYZE jobs`)
	require.NoError(t, err)

	// A join of the table to an array parameter, like River's
	// JobSetStateIfRunningMany, with the caller asking for custom plans.
	const update = `UPDATE jobs j SET state = 'completed' FROM unnest($1::bigint[]) AS u(id) WHERE j.id = u.id`
	plans := func(wrap bool) (generic, custom int64) {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`)
		require.NoError(t, err)
		name := fmt.Sprintf("complete_%t", wrap)
		_, err = tx.Prepare(ctx, name, update)
		require.NoError(t, err)
		b := &pgx.Batch{}
		if wrap {
			indexplan.Begin(b)
		}
		for i := range 8 {
			b.Queue(name, []int64{int64(i + 1)})
		}
		require.NoError(t, tx.SendBatch(ctx, b).Close())
		require.NoError(t, tx.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1`, name).
			Scan(&generic, &custom))
		return generic, custom
	}
	generic, custom := plans(false)
	require.Equal(t, [2]int64{0, 8}, [2]int64{generic, custom}, "without Begin: planned on every execution")
	generic, custom = plans(true)
	require.Equal(t, [2]int64{8, 0}, [2]int64{generic, custom}, "with Begin: one generic plan, reused")
}

// TxSQL and TxSetSQL make the same settings as Begin, for the rest of the
// transaction.
func TestTxSQL_MakesBeginsSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	read := func(setup func(tx pgx.Tx)) [5]string {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		setup(tx)
		got, err := scanSettings(tx.QueryRow(ctx, settingsSQL))
		require.NoError(t, err)
		return got
	}
	viaBegin := read(func(tx pgx.Tx) {
		b := &pgx.Batch{}
		indexplan.Begin(b)
		require.NoError(t, tx.SendBatch(ctx, b).Close())
	})
	viaTxSQL := read(func(tx pgx.Tx) {
		_, err := tx.Exec(ctx, indexplan.TxSQL)
		require.NoError(t, err)
	})
	viaTxSetSQL := read(func(tx pgx.Tx) {
		_, err := tx.Exec(ctx, indexplan.TxSetSQL)
		require.NoError(t, err)
	})
	require.Equal(t, [5]string{"off", "off", "off", "off", "force_generic_plan"}, viaTxSQL)
	require.Equal(t, viaBegin, viaTxSQL)
	require.Equal(t, viaBegin, viaTxSetSQL)
}
