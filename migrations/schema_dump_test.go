package migrations_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/migrations"
)

// dumpSchema renders the objects in schema as SQL for a person to read:
// each table with its columns, constraints, indexes, triggers and the
// trigger functions only it uses; then views and the other functions;
// relay's objects first, River's and goose's after them. Everything is in
// name order and unqualified (search_path is schema alone), read from the
// catalog with PostgreSQL's own pg_get_* functions, so the output depends on
// the migrations and the server's major version, not on the database's name,
// OIDs or the order objects were created in. Owners and privileges are left
// out, as pg_dump --no-owner --no-privileges leaves them out. Objects it
// cannot render yet (a policy, a rule, a partitioned table) are an error, not
// a silent omission.
func dumpSchema(ctx context.Context, tx pgx.Tx, schema string) (string, error) {
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", fmt.Errorf("error setting search_path: %w", err)
	}
	d := &dumper{ctx: ctx, tx: tx, schema: schema}
	if err := tx.QueryRow(ctx, `SELECT current_setting('server_version_num')::int / 10000`).Scan(&d.major); err != nil {
		return "", fmt.Errorf("error reading the server's version: %w", err)
	}
	if err := d.load(); err != nil {
		return "", err
	}
	return d.render(), nil
}

// An owner is who creates an object: relay's migrations, River's (goose
// migration 1 runs them) or goose itself (its version table).
type owner int

const (
	ownerRelay owner = iota
	ownerRiver
	ownerGoose
	owners = iota // how many there are
)

var ownerHeadings = [...]string{
	ownerRelay: "relay's objects",
	ownerRiver: fmt.Sprintf("River's objects (River's migrations to its version %d, which relay's migration 1 runs)", migrations.RiverVersion),
	ownerGoose: "goose's version table (which of relay's migrations are applied)",
}

func ownerOf(name string) owner {
	switch {
	case strings.HasPrefix(name, "river_"):
		return ownerRiver
	case strings.HasPrefix(name, migrations.TableName):
		return ownerGoose
	}
	return ownerRelay
}

// relation is a table or a view and what hangs off it.
type relation struct {
	oid      uint32
	name     string
	def      string // CREATE TABLE or CREATE VIEW, with its ;
	after    []stmt // what follows the definition: a sequence, column settings, indexes, triggers, comments, trigger functions
	triggers map[uint32]bool
}

// A stmt is one statement after a relation's definition, of a kind: a run
// of single-line statements of one kind (indexes, triggers) is written
// without blank lines between them.
type stmt struct {
	kind int
	text string
}

// The kinds of stmt, in the order they follow a definition; loadRelationExtras'
// query numbers them the same.
const (
	kindSequence = iota
	kindStatistics
	kindStorage
	kindReplicaIdentity
	kindIndex
	kindTrigger
	kindComment
	kindColumnComment
	kindFunction
)

type function struct {
	oid       uint32
	name      string
	def       string
	isTrigger bool
}

type dumper struct {
	ctx    context.Context
	tx     pgx.Tx
	schema string
	nsp    uint32
	major  int    // the server's major version, whose pg_get_* functions wrote the definitions
	quoted string // schema as quote_ident writes it, the prefix pg_get_* functions put on some names

	types     [owners][]string
	sequences [owners][]string
	tables    [owners][]*relation
	views     [owners][]*relation
	functions []*function
}

func (d *dumper) load() error {
	if err := d.tx.QueryRow(d.ctx, `SELECT oid, quote_ident(nspname) FROM pg_namespace WHERE nspname = $1`, d.schema).
		Scan(&d.nsp, &d.quoted); err != nil {
		return fmt.Errorf("error finding schema %q: %w", d.schema, err)
	}
	for _, step := range []func() error{d.unsupported, d.loadTypes, d.loadRelations, d.loadSequences, d.loadFunctions} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// unsupported fails on objects render does not show, so that a migration
// that adds one makes the test fail instead of leaving it out of the file.
func (d *dumper) unsupported() error {
	var found []string
	err := collect(d.ctx, d.tx, &found, `
		SELECT what FROM (
		SELECT format('%s %s', CASE relkind WHEN 'm' THEN 'materialized view' WHEN 'p' THEN 'partitioned table'
		                                    WHEN 'f' THEN 'foreign table' END, relname) AS what
		FROM pg_class WHERE relnamespace = $1 AND relkind IN ('m', 'p', 'f')
		UNION ALL SELECT 'row-level security on ' || relname FROM pg_class WHERE relnamespace = $1 AND relrowsecurity
		UNION ALL SELECT 'policy ' || polname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE c.relnamespace = $1
		UNION ALL SELECT 'rule ' || rulename FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
		          WHERE c.relnamespace = $1 AND r.rulename <> '_RETURN'
		UNION ALL SELECT 'statistics object ' || stxname FROM pg_statistic_ext WHERE stxnamespace = $1
		UNION ALL SELECT 'aggregate or window function ' || proname FROM pg_proc WHERE pronamespace = $1 AND prokind IN ('a', 'w')
		UNION ALL SELECT 'range type ' || typname FROM pg_type WHERE typnamespace = $1 AND typtype IN ('r', 'm')
		UNION ALL SELECT 'operator ' || oprname FROM pg_operator WHERE oprnamespace = $1
		UNION ALL SELECT 'collation ' || collname FROM pg_collation WHERE collnamespace = $1
		) u ORDER BY what COLLATE "C"`, d.nsp)
	if err != nil {
		return fmt.Errorf("error looking for objects the schema file does not show: %w", err)
	}
	if len(found) > 0 {
		return fmt.Errorf("schema %s has objects dumpSchema does not render (teach it, in migrations/schema_dump_test.go): %s",
			d.schema, strings.Join(found, ", "))
	}
	return nil
}

func (d *dumper) loadTypes() error {
	rows, err := d.tx.Query(d.ctx, `
		SELECT t.typname, t.typtype,
		       CASE t.typtype
		         WHEN 'e' THEN format('CREATE TYPE %s AS ENUM (%s);', quote_ident(t.typname),
		              (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
		         WHEN 'd' THEN format('CREATE DOMAIN %s AS %s%s%s%s;', quote_ident(t.typname), format_type(t.typbasetype, t.typtypmod),
		              CASE WHEN t.typcollation <> (SELECT b.typcollation FROM pg_type b WHERE b.oid = t.typbasetype)
		                   THEN ' COLLATE ' || t.typcollation::regcollation::text ELSE '' END,
		              CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END,
		              coalesce(' DEFAULT ' || t.typdefault, ''),
		              coalesce((SELECT string_agg(format(E'\n    CONSTRAINT %s %s', quote_ident(k.conname), pg_get_constraintdef(k.oid, true)), '' ORDER BY k.conname)
		                        FROM pg_constraint k WHERE k.contypid = t.oid), ''))
		         WHEN 'c' THEN format(E'CREATE TYPE %s AS (\n%s\n);', quote_ident(t.typname),
		              (SELECT string_agg(format('    %s %s', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod)), E',\n' ORDER BY a.attnum)
		               FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped))
		       END || coalesce(E'\nCOMMENT ON TYPE ' || quote_ident(t.typname) || ' IS ' || quote_literal(obj_description(t.oid, 'pg_type')) || ';', '')
		FROM pg_type t
		WHERE t.typnamespace = $1 AND t.typtype IN ('e', 'd', 'c')
		  AND (t.typtype <> 'c' OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c')
		ORDER BY t.typname`, d.nsp)
	if err != nil {
		return fmt.Errorf("error reading types: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, kind, def string
		if err := rows.Scan(&name, &kind, &def); err != nil {
			return fmt.Errorf("error reading types: %w", err)
		}
		o := ownerOf(name)
		d.types[o] = append(d.types[o], def)
	}
	return rows.Err()
}

// seqOptions is the part of CREATE SEQUENCE s that differs from the
// defaults for its type, as pg_dump would write it. An identity column's
// sequence has the column's type, so identityOptions leaves the type out.
const (
	seqOptions      = `concat_ws(' ', CASE WHEN s.seqtypid <> 'bigint'::regtype THEN 'AS ' || format_type(s.seqtypid, NULL) END, ` + identityOptions + `)`
	identityOptions = `concat_ws(' ',
	CASE WHEN s.seqincrement <> 1 THEN 'INCREMENT BY ' || s.seqincrement END,
	CASE WHEN s.seqmin <> CASE WHEN s.seqincrement > 0 THEN 1 ELSE CASE s.seqtypid WHEN 'smallint'::regtype THEN -32768
	     WHEN 'integer'::regtype THEN -2147483648 ELSE -9223372036854775808 END END THEN 'MINVALUE ' || s.seqmin END,
	CASE WHEN s.seqmax <> CASE WHEN s.seqincrement < 0 THEN -1 ELSE CASE s.seqtypid WHEN 'smallint'::regtype THEN 32767
	     WHEN 'integer'::regtype THEN 2147483647 ELSE 9223372036854775807 END END THEN 'MAXVALUE ' || s.seqmax END,
	CASE WHEN s.seqstart <> CASE WHEN s.seqincrement > 0 THEN s.seqmin ELSE s.seqmax END THEN 'START WITH ' || s.seqstart END,
	CASE WHEN s.seqcache <> 1 THEN 'CACHE ' || s.seqcache END,
	CASE WHEN s.seqcycle THEN 'CYCLE' END)`
)

func (d *dumper) loadRelations() error {
	var rels []*relation
	rows, err := d.tx.Query(d.ctx, `
		SELECT c.oid, c.relname, c.relkind = 'v',
		       CASE c.relkind
		         WHEN 'v' THEN format(E'CREATE VIEW %s%s AS\n%s', quote_ident(c.relname),
		              ' WITH (' || array_to_string(c.reloptions, ', ') || ')', pg_get_viewdef(c.oid, true))
		         ELSE format(E'CREATE %sTABLE %s (\n%s\n)%s;', CASE c.relpersistence WHEN 'u' THEN 'UNLOGGED ' ELSE '' END,
		              quote_ident(c.relname),
		              concat_ws(E',\n',
		                (SELECT string_agg(concat('    ', quote_ident(a.attname), ' ', format_type(a.atttypid, a.atttypmod),
		                          CASE WHEN a.attcollation <> t.typcollation THEN ' COLLATE ' || a.attcollation::regcollation::text END,
		                          CASE a.attidentity WHEN '' THEN '' ELSE
		                            format(' GENERATED %s AS IDENTITY', CASE a.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END) ||
		                            coalesce((SELECT ' (' || nullif(`+identityOptions+`, '') || ')' FROM pg_sequence s
		                                      WHERE s.seqrelid = pg_get_serial_sequence(quote_ident(c.relname), a.attname)::regclass), '') END,
		                          CASE WHEN a.attnotnull AND a.attidentity = '' THEN ' NOT NULL' END,
		                          CASE a.attgenerated WHEN 's' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(ad.adbin, ad.adrelid) || ') STORED'
		                               ELSE ' DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid) END),
		                          E',\n' ORDER BY a.attnum)
		                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		                 LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
		                (SELECT string_agg(format('    CONSTRAINT %s %s', quote_ident(k.conname), pg_get_constraintdef(k.oid, true)), E',\n'
		                          ORDER BY position(k.contype IN 'puxcf'), k.conname)
		                 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype <> 't')),
		              ' WITH (' || array_to_string(c.reloptions, ', ') || ')')
		       END
		FROM pg_class c WHERE c.relnamespace = $1 AND c.relkind IN ('r', 'v')
		ORDER BY c.relname`, d.nsp)
	if err != nil {
		return fmt.Errorf("error reading tables and views: %w", err)
	}
	for rows.Next() {
		r := &relation{triggers: map[uint32]bool{}}
		var view bool
		if err := rows.Scan(&r.oid, &r.name, &view, &r.def); err != nil {
			rows.Close()
			return fmt.Errorf("error reading tables and views: %w", err)
		}
		rels = append(rels, r)
		o := ownerOf(r.name)
		if view {
			d.views[o] = append(d.views[o], r)
		} else {
			d.tables[o] = append(d.tables[o], r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading tables and views: %w", err)
	}
	for _, r := range rels {
		if err := d.loadRelationExtras(r); err != nil {
			return err
		}
	}
	return nil
}

// loadRelationExtras reads what follows a table's or view's definition:
// column settings, indexes, triggers and comments.
func (d *dumper) loadRelationExtras(r *relation) error {
	q := pgx.Identifier{r.name}.Sanitize()
	rows, err := d.tx.Query(d.ctx, `
		SELECT k, stmt FROM (
		  SELECT 1 AS k, a.attnum AS n, '' AS name, format('ALTER TABLE %s ALTER COLUMN %s SET STATISTICS %s;',
		         quote_ident(c.relname), quote_ident(a.attname), a.attstattarget) AS stmt
		  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		  WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND coalesce(a.attstattarget, -1) >= 0
		  UNION ALL
		  SELECT 2, a.attnum, '', format('ALTER TABLE %s ALTER COLUMN %s SET STORAGE %s;', quote_ident(c.relname), quote_ident(a.attname),
		         CASE a.attstorage WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL' WHEN 'm' THEN 'MAIN' ELSE 'EXTENDED' END)
		  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid
		  WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attstorage <> t.typstorage
		  UNION ALL
		  SELECT 3, 0, '', format('ALTER TABLE %s REPLICA IDENTITY %s;', quote_ident(c.relname),
		         CASE c.relreplident WHEN 'n' THEN 'NOTHING' WHEN 'f' THEN 'FULL' ELSE 'USING INDEX ' ||
		           (SELECT quote_ident(ic.relname) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
		            WHERE i.indrelid = c.oid AND i.indisreplident) END)
		  FROM pg_class c WHERE c.oid = $1 AND c.relkind = 'r' AND c.relreplident <> 'd'
		  UNION ALL
		  SELECT 4, 0, ic.relname, pg_get_indexdef(i.indexrelid) || ';' ||
		         CASE WHEN i.indisclustered THEN format(E'\nALTER TABLE %s CLUSTER ON %s;', quote_ident(c.relname), quote_ident(ic.relname)) ELSE '' END ||
		         coalesce(E'\nCOMMENT ON INDEX ' || quote_ident(ic.relname) || ' IS ' || quote_literal(obj_description(ic.oid, 'pg_class')) || ';', '')
		  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid
		  WHERE i.indrelid = $1 AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = i.indrelid
		                                         AND k.conindid = i.indexrelid AND k.contype IN ('p', 'u', 'x'))
		  UNION ALL
		  SELECT 5, 0, g.tgname, pg_get_triggerdef(g.oid) || ';' ||
		         CASE g.tgenabled WHEN 'D' THEN format(E'\nALTER TABLE %s DISABLE TRIGGER %s;', quote_ident(c.relname), quote_ident(g.tgname))
		                          WHEN 'R' THEN format(E'\nALTER TABLE %s ENABLE REPLICA TRIGGER %s;', quote_ident(c.relname), quote_ident(g.tgname))
		                          WHEN 'A' THEN format(E'\nALTER TABLE %s ENABLE ALWAYS TRIGGER %s;', quote_ident(c.relname), quote_ident(g.tgname))
		                          ELSE '' END
		  FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid WHERE g.tgrelid = $1 AND NOT g.tgisinternal
		  UNION ALL
		  SELECT 6, 0, '', format('COMMENT ON %s %s IS %s;', CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END,
		         quote_ident(c.relname), quote_literal(obj_description(c.oid, 'pg_class')))
		  FROM pg_class c WHERE c.oid = $1 AND obj_description(c.oid, 'pg_class') IS NOT NULL
		  UNION ALL
		  SELECT 7, a.attnum, '', format('COMMENT ON COLUMN %s.%s IS %s;', quote_ident(c.relname), quote_ident(a.attname),
		         quote_literal(col_description(c.oid, a.attnum)))
		  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		  WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND col_description(c.oid, a.attnum) IS NOT NULL
		) s ORDER BY k, n, name COLLATE "C"`, r.oid)
	if err != nil {
		return fmt.Errorf("error reading the indexes and triggers of %s: %w", q, err)
	}
	// pg_get_indexdef and pg_get_triggerdef qualify the table whatever the
	// search_path; everything here is in one schema.
	for rows.Next() {
		var s stmt
		if err := rows.Scan(&s.kind, &s.text); err != nil {
			rows.Close()
			return fmt.Errorf("error reading the indexes and triggers of %s: %w", q, err)
		}
		s.text = strings.Replace(s.text, " ON "+d.quoted+".", " ON ", 1)
		r.after = append(r.after, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading the indexes and triggers of %s: %w", q, err)
	}
	var fns []uint32
	if err := collect(d.ctx, d.tx, &fns, `SELECT tgfoid FROM pg_trigger WHERE tgrelid = $1 AND NOT tgisinternal`, r.oid); err != nil {
		return fmt.Errorf("error reading the triggers of %s: %w", q, err)
	}
	for _, f := range fns {
		r.triggers[f] = true
	}
	return nil
}

func (d *dumper) loadSequences() error {
	rows, err := d.tx.Query(d.ctx, `
		SELECT c.relname, owner.relname,
		       format('CREATE SEQUENCE %s%s%s;', quote_ident(c.relname), ' ' || nullif(`+seqOptions+`, ''),
		              CASE WHEN owner.oid IS NOT NULL THEN format(' OWNED BY %s.%s', quote_ident(owner.relname), quote_ident(a.attname)) END)
		FROM pg_class c JOIN pg_sequence s ON s.seqrelid = c.oid
		LEFT JOIN pg_depend dep ON dep.classid = 'pg_class'::regclass AND dep.objid = c.oid
		     AND dep.refclassid = 'pg_class'::regclass AND dep.deptype IN ('a', 'i')
		LEFT JOIN pg_class owner ON owner.oid = dep.refobjid
		LEFT JOIN pg_attribute a ON a.attrelid = dep.refobjid AND a.attnum = dep.refobjsubid
		WHERE c.relnamespace = $1 AND c.relkind = 'S' AND dep.deptype IS DISTINCT FROM 'i'
		ORDER BY c.relname`, d.nsp)
	if err != nil {
		return fmt.Errorf("error reading sequences: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, def string
		var table *string
		if err := rows.Scan(&name, &table, &def); err != nil {
			return fmt.Errorf("error reading sequences: %w", err)
		}
		if table == nil {
			o := ownerOf(name)
			d.sequences[o] = append(d.sequences[o], def)
			continue
		}
		// A serial column's sequence goes with its table, before the
		// indexes.
		for _, ts := range d.tables {
			for _, t := range ts {
				if t.name == *table {
					t.after = append([]stmt{{kindSequence, def}}, t.after...)
				}
			}
		}
	}
	return rows.Err()
}

func (d *dumper) loadFunctions() error {
	rows, err := d.tx.Query(d.ctx, `
		SELECT p.oid, p.proname, p.prorettype = 'trigger'::regtype,
		       pg_get_functiondef(p.oid),
		       coalesce(E'\nCOMMENT ON ' || CASE p.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END || ' ' || quote_ident(p.proname) ||
		                '(' || pg_get_function_identity_arguments(p.oid) || ') IS ' || quote_literal(obj_description(p.oid, 'pg_proc')) || ';', '')
		FROM pg_proc p WHERE p.pronamespace = $1
		ORDER BY p.proname, pg_get_function_identity_arguments(p.oid) COLLATE "C"`, d.nsp)
	if err != nil {
		return fmt.Errorf("error reading functions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		f := &function{}
		var comment string
		if err := rows.Scan(&f.oid, &f.name, &f.isTrigger, &f.def, &comment); err != nil {
			return fmt.Errorf("error reading functions: %w", err)
		}
		// pg_get_functiondef qualifies the name and ends with the body's
		// closing quote and a newline.
		for _, kind := range []string{"FUNCTION", "PROCEDURE"} {
			f.def = strings.Replace(f.def, "CREATE OR REPLACE "+kind+" "+d.quoted+".", "CREATE "+kind+" ", 1)
		}
		f.def = strings.TrimRight(f.def, "\n") + ";" + comment
		d.functions = append(d.functions, f)
	}
	return rows.Err()
}

// collect appends each row's single column to dst.
func collect[T any](ctx context.Context, tx pgx.Tx, dst *[]T, sql string, args ...any) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[T])
	*dst = append(*dst, got...)
	return err
}

func (d *dumper) render() string {
	// A trigger function goes with its table when that table's triggers
	// are its only use.
	usedBy := map[uint32][]*relation{}
	for _, rs := range append(d.tables[:], d.views[:]...) {
		for _, r := range rs {
			for f := range r.triggers {
				usedBy[f] = append(usedBy[f], r)
			}
		}
	}
	var free [owners][]string
	for _, f := range d.functions {
		if users := usedBy[f.oid]; f.isTrigger && len(users) == 1 {
			users[0].after = append(users[0].after, stmt{kindFunction, f.def})
			continue
		}
		free[ownerOf(f.name)] = append(free[ownerOf(f.name)], f.def)
	}

	var b strings.Builder
	fmt.Fprintf(&b, header, d.major)
	b.WriteString("--\n-- Contents:\n")
	for o := range ownerHeadings {
		fmt.Fprintf(&b, "--   %s\n", ownerHeadings[o])
		for _, group := range []struct {
			kind string
			rels []*relation
		}{{"table", d.tables[o]}, {"view", d.views[o]}} {
			for _, r := range group.rels {
				fmt.Fprintf(&b, "--     %s %s\n", group.kind, r.name)
			}
		}
	}
	for o := range ownerHeadings {
		banner(&b, "=", ownerHeadings[o])
		if len(d.types[o]) > 0 {
			subhead(&b, "Types")
			b.WriteString(strings.Join(d.types[o], "\n\n") + "\n")
		}
		if len(d.sequences[o]) > 0 {
			subhead(&b, "Sequences")
			b.WriteString(strings.Join(d.sequences[o], "\n") + "\n")
		}
		for _, r := range d.tables[o] {
			subhead(&b, "Table "+r.name)
			writeRelation(&b, r)
		}
		for _, r := range d.views[o] {
			subhead(&b, "View "+r.name)
			writeRelation(&b, r)
		}
		if len(free[o]) > 0 {
			subhead(&b, "Functions")
			b.WriteString(strings.Join(free[o], "\n\n") + "\n")
		}
	}
	return b.String()
}

const header = `-- The schema relay's migrations leave a database in, for reading: each table
-- with its columns, constraints, indexes, triggers and the trigger functions
-- only it uses, then views and the other functions, in name order; relay's
-- objects first, then River's and goose's.
--
-- Generated, do not edit. TestSchemaFile_MatchesMigrations fails while this
-- file differs from a freshly migrated database; after changing a migration,
-- regenerate it with
--
--   make schema
--
-- (UPDATE_DOCS=1 go test ./migrations -run TestSchemaFile) and commit it with
-- the migration.
--
-- This is not a script to run: relay migrate up creates and upgrades a
-- database. Names are unqualified: relay's and River's objects share one
-- schema, database_schema's or else the first in search_path (a function's
-- pinned search_path shows the test database's, relay). Owners and
-- privileges are left out: docs/sql/ has the roles. Definitions are as
-- PostgreSQL %d's pg_get_* functions write them.
`

func writeRelation(b *strings.Builder, r *relation) {
	b.WriteString(r.def)
	for i, s := range r.after {
		if i > 0 && s.kind == r.after[i-1].kind && s.kind != kindFunction {
			b.WriteString("\n")
		} else {
			b.WriteString("\n\n")
		}
		b.WriteString(s.text)
	}
	b.WriteString("\n")
}

const rule = "--------------------------------------------------------------------------------"

func banner(b *strings.Builder, fill, title string) {
	line := "-- " + strings.Repeat(fill, len(rule)-3)
	fmt.Fprintf(b, "\n\n%s\n-- %s\n%s\n", line, title, line)
}

func subhead(b *strings.Builder, title string) {
	fmt.Fprintf(b, "\n%s\n-- %s\n%s\n\n", rule, title, rule)
}
