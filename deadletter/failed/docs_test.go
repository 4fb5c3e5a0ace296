package failed_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter/failed"
)

// sqlBlocks returns the ```sql blocks of a Markdown file.
func sqlBlocks(t *testing.T, path string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	return out
}

// docsBundle is a schema with every status, a reprocessed POI with its
// relationship, a row needing manual review, a stuck row and a row
// superseded by a publish of its file.
func docsBundle(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	b.maxAttempts = 1
	b.publish(t, "src/a.js", poi("a1", "function_definition", "a", "src/a.js", 1, "function a() { nowhere(); }")) // an unresolved name
	b.publish(t, "src/m.js",
		poi("demo-math-bad-line", "function_definition", "cube", "src/m.js", "twelve", "function cube() { a(); }"),
		poi("m2", "function_definition", "sq", "src/m.js", "x", "function sq() {}"),
		poi("m3", "function_definition", "tri", "src/m.js", "y", "function tri() {}"))
	b.work(t)
	b.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '3') WHERE poi_id = 'demo-math-bad-line'`)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew}})
	b.work(t) // one reprocessed, two failed again and flagged for review
	_, err := b.store.Ignore(context.Background(), []int64{3}, "test", "tester")
	require.NoError(t, err)
	for range 2 {
		b.publish(t, "src/z.js", poi("z1", "function_definition", "z", "src/z.js", "nine", "function z() {}"))
		b.work(t)
	}
	b.seed(t, 5, 2, 2)
	b.run(t, failed.Selection{Filter: failed.Filter{Status: failed.StatusNew, FileID: "f1"}})
	b.exec(t, `UPDATE failed_pois SET reprocess_requested_at = now() - interval '2 hours' WHERE status = 'reprocessing'`)
	b.exec(t, `DELETE FROM river_job WHERE args->>'fileId' = 'f1'`)
	return b
}

func TestDocs_EveryQueryInFailedPOIsDocRuns(t *testing.T) {
	t.Parallel()
	b := docsBundle(t)
	blocks := sqlBlocks(t, "../../docs/failed_pois.md")
	require.GreaterOrEqual(t, len(blocks), 10, "the document promises ten example queries")
	nonEmpty := 0
	for _, q := range blocks {
		rows, err := b.db.Pool.Query(context.Background(), q)
		require.NoError(t, err, q)
		n := 0
		for rows.Next() {
			n++
		}
		require.NoError(t, rows.Err(), q)
		if n > 0 {
			nonEmpty++
		}
	}
	require.Equal(t, len(blocks), nonEmpty, "every example returns rows on a schema that has every case")
}

func TestDocs_AnalystRoleAppliesAndIsReadOnly(t *testing.T) {
	t.Parallel()
	b := docsBundle(t)
	ctx := context.Background()
	script, err := os.ReadFile("../../docs/sql/analyst_role.sql")
	require.NoError(t, err)
	for range 2 { // idempotent
		// Roles are cluster-wide: test binaries running at once must not
		// create and grant the same role concurrently.
		err = pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7238041)`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, string(script))
			return err
		})
		require.NoError(t, err)
	}
	err = pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE relay_analyst`); err != nil {
			return err
		}
		for _, q := range sqlBlocks(t, "../../docs/failed_pois.md") {
			if regexp.MustCompile(`river_job j`).MatchString(q) {
				continue // one example joins River's table, which the role does not read
			}
			rows, err := tx.Query(ctx, q)
			if err != nil {
				return err
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	for _, q := range []string{`DELETE FROM failed_pois`, `UPDATE failed_pois SET status = 'ignored'`, `SELECT count(*) FROM river_job`} {
		err := pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE relay_analyst`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, q)
			return err
		})
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", q, err)
		require.Equal(t, "42501", pgErr.Code, q) // insufficient_privilege
	}
	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM failed_pois`), "nothing was deleted")
}
