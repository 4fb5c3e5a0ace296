package migrations_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
)

// downSQLEffect is what a Down section's statements drop and delete, read
// from the SQL with regular expressions: enough for relay's migrations, and
// TestParseDownSQL pins what it understands.
type downSQLEffect struct {
	tables, columns, deletes []string
}

var (
	dollarQuoted = regexp.MustCompile(`(?s)\$([A-Za-z_]*)\$.*?\$([A-Za-z_]*)\$`)
	lineComment  = regexp.MustCompile(`--[^\n]*`)
	dropTable    = regexp.MustCompile(`(?is)^DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(.+?)(?:\s+(?:CASCADE|RESTRICT))?$`)
	alterTable   = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?("?[\w.]+"?)\s+(.*)$`)
	dropColumn   = regexp.MustCompile(`(?i)\bDROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?("?\w+"?)`)
	deleteFrom   = regexp.MustCompile(`(?is)^DELETE\s+FROM\s+(?:ONLY\s+)?("?[\w.]+"?)`)
	truncate     = regexp.MustCompile(`(?is)^TRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?(.+?)(?:\s+(?:RESTART|CONTINUE|CASCADE|RESTRICT).*)?$`)
)

func unquote(name string) string { return strings.Trim(strings.TrimSpace(name), `"`) }

// parseDownSQL reads the statements after "-- +goose Down".
func parseDownSQL(sql string) downSQLEffect {
	_, down, _ := strings.Cut(sql, "-- +goose Down")
	down = dollarQuoted.ReplaceAllString(down, "''") // function bodies run later, not now
	down = lineComment.ReplaceAllString(down, "")
	var e downSQLEffect
	for stmt := range strings.SplitSeq(down, ";") {
		stmt = strings.TrimSpace(stmt)
		if m := dropTable.FindStringSubmatch(stmt); m != nil {
			for t := range strings.SplitSeq(m[1], ",") {
				e.tables = append(e.tables, unquote(t))
			}
		}
		if m := alterTable.FindStringSubmatch(stmt); m != nil {
			for _, c := range dropColumn.FindAllStringSubmatch(m[2], -1) {
				switch strings.ToUpper(c[1]) {
				case "CONSTRAINT", "DEFAULT", "NOT", "IDENTITY", "EXPRESSION":
					continue // DROP CONSTRAINT, ALTER COLUMN c DROP DEFAULT and the like
				}
				e.columns = append(e.columns, unquote(m[1])+"."+unquote(c[1]))
			}
		}
		if m := deleteFrom.FindStringSubmatch(stmt); m != nil {
			e.deletes = append(e.deletes, unquote(m[1]))
		}
		if m := truncate.FindStringSubmatch(stmt); m != nil {
			for t := range strings.SplitSeq(m[1], ",") {
				e.deletes = append(e.deletes, unquote(t))
			}
		}
	}
	return e
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func TestParseDownSQL(t *testing.T) {
	t.Parallel()
	e := parseDownSQL(`-- +goose Up
DROP TABLE up_only;
-- +goose Down
-- DROP TABLE in_a_comment;
-- +goose StatementBegin
CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM in_a_body;
END
$$;
-- +goose StatementEnd
DROP TABLE a, "b";
drop table if exists c cascade;
ALTER TABLE d
    DROP COLUMN x,
    DROP COLUMN IF EXISTS y,
    DROP CONSTRAINT d_fkey,
    ALTER COLUMN z DROP NOT NULL;
ALTER TABLE e DROP w;
DELETE FROM f WHERE true;
TRUNCATE g, h RESTART IDENTITY;
DROP INDEX i;
DROP VIEW v;`)
	require.Equal(t, []string{"a", "b", "c"}, e.tables)
	require.Equal(t, []string{"d.x", "d.y", "e.w"}, e.columns)
	require.Equal(t, []string{"f", "g", "h"}, e.deletes)
}

// Every SQL migration's Down section drops exactly the tables and columns,
// and deletes from exactly the tables, that DownEffects says; every
// migration has an entry and no entry is left without a migration.
func TestDownEffects_MatchDownSQL(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	versions := []int64{1} // River's, a Go migration: TestDownEffects_MatchDatabase checks it
	for _, f := range files {
		prefix, _, _ := strings.Cut(f, "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		require.NoError(t, err, f)
		versions = append(versions, v)
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		got := parseDownSQL(string(b))
		want, ok := migrations.DownEffects[v]
		require.True(t, ok, "migrations.DownEffects has no entry for %s: say what its Down destroys", f)
		require.Equal(t, sorted(append(slices.Clone(want.DropsTables), want.DropsDerivedTables...)), sorted(got.tables), "%s: DROP TABLE", f)
		require.Equal(t, sorted(slices.Concat(want.DropsColumns, want.DropsDerivedColumns)), sorted(got.columns), "%s: DROP COLUMN", f)
		require.Equal(t, sorted(slices.Concat(want.DeletesFrom, want.MergesRowsOf)), sorted(got.deletes), "%s: DELETE/TRUNCATE", f)
		require.Equal(t, len(got.tables) > len(want.DropsDerivedTables) || len(got.columns) > len(want.DropsDerivedColumns) || len(got.deletes) > len(want.MergesRowsOf),
			want.LosesData(), "%s: LosesData", f)
		require.Equal(t, !want.LosesData(), strings.HasSuffix(want.Note, "no data lost"), "%s: the note says whether data is lost", f)
	}
	for v := range migrations.DownEffects {
		require.Contains(t, versions, v, "migrations.DownEffects has an entry for version %d, which has no migration", v)
	}
	require.True(t, migrations.DownEffectOf(1<<40).LosesData(), "an unknown version is assumed to lose data")
}

type schemaShape struct {
	tables  []string
	columns []string
}

func shapeOf(t *testing.T, db *testdb.DB) schemaShape {
	t.Helper()
	ctx := context.Background()
	names := func(sql string) []string {
		rows, err := db.Pool.Query(ctx, sql, db.Schema)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	var s schemaShape
	s.tables = names(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1`)
	s.columns = names(`SELECT c.table_name || '.' || c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE' ORDER BY 1`)
	return s
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// Rolling back each migration in turn drops exactly the tables and
// columns DownEffects lists (River's, migration 1, included), and rolling
// back everything and dropping the version table leaves the schema empty.
func TestDownEffects_MatchDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := newMigrator(t)

	plan, err := m.PlanDown(ctx, 0)
	require.NoError(t, err)
	require.Len(t, plan, int(m.Latest()))
	for i, r := range plan {
		require.Equal(t, m.Latest()-int64(i), r.Version, "newest first")
	}
	for v := m.Latest(); v >= 1; v-- {
		before := shapeOf(t, db)
		res, err := m.DownTo(ctx, v-1)
		require.NoError(t, err)
		require.Len(t, res, 1)
		after := shapeOf(t, db)
		e := migrations.DownEffects[v]
		droppedTables := minus(before.tables, after.tables)
		require.Equal(t, sorted(append(slices.Clone(e.DropsTables), e.DropsDerivedTables...)), sorted(droppedTables), "version %d: tables dropped", v)
		var droppedColumns []string
		for _, c := range minus(before.columns, after.columns) {
			if table, _, _ := strings.Cut(c, "."); !slices.Contains(droppedTables, table) {
				droppedColumns = append(droppedColumns, c)
			}
		}
		want := slices.DeleteFunc(slices.Concat(e.DropsColumns, e.DropsDerivedColumns), func(c string) bool {
			return slices.Contains(e.RebuildsColumns, c)
		})
		require.ElementsMatch(t, want, droppedColumns, "version %d: columns dropped", v)
	}
	require.Equal(t, []string{migrations.TableName}, shapeOf(t, db).tables)

	require.NoError(t, m.DropVersionTable(ctx))
	require.NoError(t, m.DropVersionTable(ctx), "dropping it again does nothing")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1`, db.Schema), "no table, view, index or sequence is left")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1`, db.Schema), "no function is left")
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE n.nspname = $1`, db.Schema), "no type is left")

	_, err = m.Up(ctx)
	require.NoError(t, err, "migrating up again recreates everything")
	v, err := m.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, m.Latest(), v)
}

// DropVersionTable refuses while any migration is applied.
func TestMigrator_DropVersionTableRefusesWhileApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := newMigrator(t)
	require.ErrorContains(t, m.DropVersionTable(ctx), "still applied")
	require.Contains(t, shapeOf(t, db).tables, migrations.TableName)
}

// RowCounts counts up to its limit and leaves out relations that are neither
// tables nor views.
func TestMigrator_RowCountsStopAtTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := newMigrator(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (file_id) SELECT 'f' || i FROM generate_series(1, 7) i`)
	require.NoError(t, err)
	counts, err := m.RowCounts(ctx, []string{"files", "pois", "no_such_table", "relationships", "files_pkey"}, 5)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"files": 5, "pois": 0, "relationships": 0}, counts, "views count; missing tables and indexes are left out")
}
