package graph_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// TestWalkPlans_KeptIndexPlanOnceTheGraphIsLarge: relay_callers and
// relay_callees walk a graph of 12,000 POIs on plans made for each call while the tables have no
// statistics and while they say the graph is small, and on a kept index plan
// once they say it is large (migration 31: 1,000,000 relationships and
// 100,000 POIs; the test writes those statistics into pg_class, as
// ANALYZE of so many rows would); every way answers the same; the settings
// they use do not outlive the call, and no function of the schema other
// than the two walks can set them (migration 31 has no function of its own
// that a caller could run to leave them on in its transaction).
func TestWalkPlans_KeptIndexPlanOnceTheGraphIsLarge(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	// POI j of 1..1110 calls (j-1)/10: p0 has 1,110 callers to depth 3;
	// the others call three POIs each.
	for _, sql := range []string{
		`INSERT INTO files (repository, file_id) SELECT 'r', 'f' || f FROM generate_series(0, 239) AS f`,
		`INSERT INTO pois (repository, poi_id, file_id, name, type, line_number)
			SELECT 'r', 'p' || i, 'f' || i / 50, 'fn' || i, 'function_definition', i % 50 FROM generate_series(0, 11999) AS i`,
		`INSERT INTO poi_references (repository, source_poi_id, source_file_id, type, name, key, target_repository, target_poi_id, target_file_id)
			SELECT 'r', 'p' || j, 'f' || j / 50, 'CALLS', 'id:p' || (j - 1) / 10, 'id:p' || (j - 1) / 10, 'r', 'p' || (j - 1) / 10, 'f' || (j - 1) / 10 / 50
			FROM generate_series(1, 1110) AS j`,
		`INSERT INTO poi_references (repository, source_poi_id, source_file_id, type, name, key, target_repository, target_poi_id, target_file_id)
			SELECT 'r', 'p' || i, 'f' || i / 50, 'CALLS', 'id:p' || t, 'id:p' || t, 'r', 'p' || t, 'f' || t / 50
			FROM generate_series(1111, 11999) AS i CROSS JOIN generate_series(0, 2) AS k
			CROSS JOIN LATERAL (SELECT 1111 + abs(hashint8(i::bigint * 3 + k)::bigint) % 10889 AS t) x
			WHERE t <> i ON CONFLICT DO NOTHING`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}

	// walk runs fn (relay_callers or relay_callees) on a connection of its own that logs the
	// level query's plans (auto_explain), and returns its rows and those
	// plans.
	walk := func(fn, poi string, depth int) ([]string, []string) {
		t.Helper()
		var mu sync.Mutex
		var plans []string
		cfg, err := pgx.ParseConfig(db.URL)
		require.NoError(t, err)
		cfg.RuntimeParams["search_path"] = db.Schema
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(n.Message, "WITH edge AS") {
				plans = append(plans, n.Message)
			}
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		defer conn.Close(ctx)
		for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
			`SET auto_explain.log_nested_statements = on`, `SET auto_explain.log_level = notice`} {
			_, err := conn.Exec(ctx, s)
			require.NoError(t, err, s)
		}
		var rows []string
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			// Eight calls: PL/pgSQL would choose a generic plan on its own
			// after five, if it were cheaper.
			for range 8 {
				rows = nil
				r, err := tx.Query(ctx, `SELECT level, poi_id, via_poi_id, repeated FROM `+pgx.Identifier{fn}.Sanitize()+`($1, $2, 'r')`, poi, depth)
				if err != nil {
					return err
				}
				for r.Next() {
					var level int
					var id, via string
					var repeated bool
					if err := r.Scan(&level, &id, &via, &repeated); err != nil {
						return err
					}
					rows = append(rows, fmt.Sprint(level, id, via, repeated))
				}
				if err := r.Err(); err != nil {
					return err
				}
			}
			// The walk's settings ended with it.
			var mode, seqscan string
			require.NoError(t, tx.QueryRow(ctx, `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')`).Scan(&mode, &seqscan))
			require.Equal(t, []string{"auto", "on"}, []string{mode, seqscan})
			return nil
		})
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		return rows, plans
	}
	// A generic plan refers to the level's items as parameters ($20[f.i]);
	// a custom plan has their values. A generic plan has both directions'
	// branches (callees': f_1, on poi_references_pkey).
	generic := regexp.MustCompile(`Index Cond: \(\(target_repository = \(\(\$\d+\)\[f\.i\]\)`)
	genericCallees := regexp.MustCompile(`Index Cond: \(\(repository = \(\(\$\d+\)\[f(_\d+)?\.i\]\)::text\) AND \(source_poi_id = `)

	before, plans := walk("relay_callers", "p0", 3)
	require.Len(t, before, 1110)
	require.NotEmpty(t, plans)
	for _, p := range plans {
		require.NotRegexp(t, generic, p, "no statistics: planned for each call")
	}
	beforeCallees, plans := walk("relay_callees", "p5000", 3)
	require.NotEmpty(t, beforeCallees)
	require.NotEmpty(t, plans)
	for _, p := range plans {
		require.NotRegexp(t, genericCallees, p, "no statistics: planned for each call")
	}

	_, err := db.Pool.Exec(ctx, `ANALYZE pois, poi_references`)
	require.NoError(t, err)
	analyzed, plans := walk("relay_callers", "p0", 3)
	require.Equal(t, before, analyzed)
	require.NotEmpty(t, plans)
	for _, p := range plans {
		require.NotRegexp(t, generic, p, "a small graph: planned for each call")
	}
	analyzedCallees, plans := walk("relay_callees", "p5000", 3)
	require.Equal(t, beforeCallees, analyzedCallees)
	require.NotEmpty(t, plans)
	for _, p := range plans {
		require.NotRegexp(t, genericCallees, p, "a small graph: planned for each call")
	}

	// The statistics of a large graph (pg_class is the catalog; its update
	// makes every session plan again).
	_, err = db.Pool.Exec(ctx, `UPDATE pg_class SET reltuples = CASE relname WHEN 'pois' THEN 1000000 ELSE 3000000 END
		WHERE oid IN ('pois'::regclass, 'poi_references'::regclass)`)
	require.NoError(t, err)
	after, plans := walk("relay_callers", "p0", 3)
	require.Equal(t, before, after)
	require.Len(t, plans, 8*3)
	for _, p := range plans[3:] {
		require.Regexp(t, generic, p, "a large graph: the kept plan, on the index")
		require.Contains(t, p, "poi_references_target_poi_id_idx")
		require.NotContains(t, p, "Seq Scan")
	}
	afterCallees, plans := walk("relay_callees", "p5000", 3)
	require.Equal(t, beforeCallees, afterCallees)
	require.Len(t, plans, 8*3)
	for _, p := range plans[3:] {
		require.Regexp(t, genericCallees, p, "a large graph: the kept plan, on the index")
		require.Contains(t, p, "poi_references_pkey")
		require.NotContains(t, p, "Seq Scan")
	}
	one, _ := walk("relay_callers", "p5000", 1)
	require.NotEmpty(t, one)

	// Only the walks set the settings, and only under their own SET
	// clauses: no other function of the schema (in particular none that a
	// caller could run on its own) calls set_config.
	var setters []string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(p.proname::text ORDER BY p.proname), '{}')
		FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prosrc ILIKE '%set_config%'`).Scan(&setters))
	require.Equal(t, []string{"relay_callees", "relay_callers"}, setters)
	for _, fn := range setters {
		var config []string
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT proconfig FROM pg_proc
			WHERE pronamespace = current_schema()::regnamespace AND proname = $1`, fn).Scan(&config))
		require.Subset(t, config, []string{"plan_cache_mode=auto", "enable_seqscan=on"}, fn)
	}
}
