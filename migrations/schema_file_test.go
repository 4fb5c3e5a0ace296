package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// schemaFile is the schema after every migration, which the docs link to
// instead of to the migrations that shaped each table.
const schemaFile = "../docs/schema.sql"

const regenerate = "make schema   # UPDATE_DOCS=1 go test ./migrations -run TestSchemaFile"

// docs/schema.sql cannot drift from the migrations: this test migrates a
// database of its own, renders its schema and fails when the file differs;
// with UPDATE_DOCS=1 it rewrites the file instead.
func TestSchemaFile_MatchesMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := newMigrator(t)
	pending, err := m.Pending(ctx)
	require.NoError(t, err)
	require.False(t, pending, "the test database has migrations left to apply")

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	got, err := dumpSchema(ctx, tx, db.Schema)
	require.NoError(t, err)

	want, err := os.ReadFile(schemaFile)
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err != nil || string(want) != got {
			require.NoError(t, os.WriteFile(schemaFile, []byte(got), 0o644))
			t.Logf("wrote %s", schemaFile)
		}
		return
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is missing: generate it with\n\n    %s", schemaFile, regenerate)
	}
	require.NoError(t, err)
	if diff := schemaDiff(string(want), got); diff != "" {
		t.Fatalf("docs/schema.sql is stale: a freshly migrated database's schema differs from it. Regenerate it with\n\n"+
			"    %s\n\nand commit it with the migration.%s\n\n%s", regenerate, versionNote(string(want), got), diff)
	}
}

// schemaDiff shows where want and got differ as one hunk: the lines between
// their common beginning and common end, a few of each side at most, with
// line numbers in want. It returns "" when they are equal.
func schemaDiff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := splitLines(want), splitLines(got)
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	const around, most = 3, 15
	var b strings.Builder
	fmt.Fprintf(&b, "--- docs/schema.sql (committed)\n+++ the migrated database\n@@ line %d @@\n", pre+1)
	for _, l := range w[max(0, pre-around):pre] {
		b.WriteString("  " + l)
	}
	lines := func(prefix string, ls []string) {
		for i, l := range ls {
			if i == most {
				fmt.Fprintf(&b, "%s… %d lines more\n", prefix, len(ls)-most)
				break
			}
			b.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
		}
	}
	lines("- ", w[pre:len(w)-suf])
	lines("+ ", g[pre:len(g)-suf])
	for _, l := range w[len(w)-suf : min(len(w), len(w)-suf+around)] {
		b.WriteString("  " + l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// splitLines splits s after each newline, with no empty last line.
func splitLines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

var renderedBy = regexp.MustCompile(`PostgreSQL (\d+)'s pg_get_\* functions`)

// versionNote explains a difference that comes from the server, not the
// migrations: pg_get_viewdef and the like lay definitions out differently
// in another major version.
func versionNote(want, got string) string {
	w, g := renderedBy.FindStringSubmatch(want), renderedBy.FindStringSubmatch(got)
	if w == nil || g == nil || w[1] == g[1] {
		return ""
	}
	return fmt.Sprintf("\nThe file was rendered by PostgreSQL %s and this server is PostgreSQL %s: compare against PostgreSQL %s "+
		"(TEST_DATABASE_URL, or unset it for testcontainers' postgres:15) before regenerating.", w[1], g[1], w[1])
}

func TestSchemaDiff_ShowsTheChangedLinesWithContext(t *testing.T) {
	t.Parallel()
	require.Empty(t, schemaDiff("a\nb\n", "a\nb\n"))

	want := "1\n2\n3\n4\n5\n6\n7\n8\n"
	got := "1\n2\n3\n4\nfour and a half\n5\n6\n7\n8\n"
	require.Equal(t, `--- docs/schema.sql (committed)
+++ the migrated database
@@ line 5 @@
  2
  3
  4
+ four and a half
  5
  6
  7`, schemaDiff(want, got))

	long := strings.Repeat("x\n", 20)
	require.Equal(t, `--- docs/schema.sql (committed)
+++ the migrated database
@@ line 2 @@
  a
- b
`+strings.Repeat("+ x\n", 15)+`+ … 5 lines more
  c`, schemaDiff("a\nb\nc\n", "a\n"+long+"c\n"))
}
