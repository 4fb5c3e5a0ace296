package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// scipFixtures is where the fixture projects and the pinned indexers
// (make scip-indexers) are.
const scipFixtures = "../scipindex/testdata"

// indexFixture runs the pinned indexer tool on fixture project fixture
// (copied to a temporary directory, which it returns with the index's
// path). A missing indexer fails the test: make scip-indexers installs it.
func indexFixture(t *testing.T, tool, fixture string, args ...string) (root, index string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(scipFixtures, "indexers/node_modules/.bin", tool))
	require.NoError(t, err)
	_, err = os.Stat(bin)
	require.NoError(t, err, "%s is not installed: run make scip-indexers", tool)
	root = t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join(scipFixtures, "fixtures", fixture))))
	index = filepath.Join(t.TempDir(), "index.scip")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"index"}, args...), "--output", index)...)
	cmd.Dir = root
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", tool, out)
	t.Logf("%s indexed %s in %.1fs", tool, fixture, time.Since(start).Seconds())
	return root, index
}

// requireEdges requires the edges got to be want, in any order.
func requireEdges(t *testing.T, want, got []string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	require.Equal(t, want, got)
}

// edges lists the repository's relationships as "source -TYPE-> target".
func edges(t *testing.T, db *testdb.DB, repository string) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT source_poi_id, type, target_poi_id FROM relationships
		WHERE repository = $1`, repository)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s, typ, tgt string
		require.NoError(t, rows.Scan(&s, &typ, &tgt))
		out = append(out, s+" -"+typ+"-> "+tgt)
	}
	require.NoError(t, rows.Err())
	slices.Sort(out) // byte order, whatever the database's collation
	return out
}

func TestAnalyzeSCIP_PythonFixtureWithScipPython(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root, index := indexFixture(t, "scip-python", "python", "--project-name", "shapes", "--project-version", "1.0")

	r := run(t, db, "", nil, "analyze", root, "--scip", index, "--repository", "shapes", "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, 3, sum.Files)
	require.Equal(t, 3, sum.Jobs) // one job per file
	require.Equal(t, "scip", sum.References)
	require.NotNil(t, sum.SCIP)
	require.Equal(t, 3, sum.SCIP.Documents)
	require.Equal(t, 1, sum.SCIP.Fallbacks) // self.registry.record_shape(: an untyped attribute

	requireEdges(t, []string{
		"shapes/__init__.py:1:Shape -IMPORTS-> shapes/base.py:4:Shape",
		"shapes/base.py:11:describe -CALLS-> shapes/base.py:8:area",
		"shapes/base.py:15:helper -CALLS-> shapes/base.py:17:inner",
		"shapes/circle.py:1:Shape -IMPORTS-> shapes/base.py:15:helper",
		"shapes/circle.py:1:Shape -IMPORTS-> shapes/base.py:4:Shape",
		"shapes/circle.py:15:area -CALLS-> shapes/base.py:15:helper",
		"shapes/circle.py:18:describe -CALLS-> shapes/base.py:11:describe",       // super().describe()
		"shapes/circle.py:18:describe -CALLS-> shapes/circle.py:24:record_shape", // the lexical rule's
		"shapes/circle.py:28:make -CALLS-> shapes/circle.py:18:describe",
		"shapes/circle.py:28:make -CALLS-> shapes/circle.py:9:__init__", // Circle(2, …)
		"shapes/circle.py:8:Circle -EXTENDS-> shapes/base.py:4:Shape",
		"shapes/circle.py:9:__init__ -CALLS-> shapes/base.py:5:__init__", // super().__init__
	}, edges(t, db, "shapes"))
	// Symbols are the indexer's.
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois
		WHERE poi_id = 'shapes/circle.py:18:describe' AND symbol = 'scip-python python shapes 1.0 `+"`shapes.circle`"+`/Circle#describe().'`))
}

func TestAnalyzeSCIP_TypeScriptFixtureWithScipTypescript(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root, index := indexFixture(t, "scip-typescript", "typescript")

	r := run(t, db, "", nil, "analyze", root, "--scip", index, "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, filepath.Base(root), sum.Repository) // DIR's base name by default
	require.Equal(t, 2, sum.Files)
	require.Equal(t, 2, sum.Jobs)

	requireEdges(t, []string{
		"src/base.ts:10:name -CALLS-> src/base.ts:9:area",
		"src/base.ts:15:helper -CALLS-> src/base.ts:19:twice", // nested functions: document-local symbols
		"src/base.ts:19:twice -CALLS-> src/base.ts:16:inner",
		"src/base.ts:7:Shape -IMPLEMENTS-> src/base.ts:1:Named",
		"src/circle.ts:1:Shape -IMPORTS-> src/base.ts:15:helper",
		"src/circle.ts:1:Shape -IMPORTS-> src/base.ts:7:Shape",
		"src/circle.ts:11:name -CALLS-> src/base.ts:10:name", // super.name()
		"src/circle.ts:16:make -CALLS-> src/circle.ts:11:name",
		"src/circle.ts:16:make -CALLS-> src/circle.ts:4:onClick",         // a class-field arrow function
		"src/circle.ts:16:make -CALLS-> src/circle.ts:5:constructor",     // new Circle(2)
		"src/circle.ts:5:constructor -CALLS-> src/base.ts:8:constructor", // super("circle")
		"src/circle.ts:3:Circle -EXTENDS-> src/base.ts:7:Shape",
		"src/circle.ts:4:onClick -CALLS-> src/circle.ts:8:area",
		"src/circle.ts:8:area -CALLS-> src/base.ts:15:helper",
	}, edges(t, db, sum.Repository))
}

func TestAnalyzeSCIP_TruncatedIndexPublishesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root, index := indexFixture(t, "scip-typescript", "typescript")
	data, err := os.ReadFile(index)
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.scip")
	require.NoError(t, os.WriteFile(cut, data[:len(data)-40], 0o600))

	r := run(t, db, "", nil, "analyze", root, "--scip", cut, "--files-per-tx", "1")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stderr, "(nothing was published)")
	require.Contains(t, r.stderr, "the index is truncated")
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job`))

	// A document whose source is missing names it; nothing is published
	// either, though the other document comes first in the index.
	require.NoError(t, os.Remove(filepath.Join(root, "src/circle.ts")))
	r = run(t, db, "", nil, "analyze", root, "--scip", index, "--files-per-tx", "1")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.True(t, strings.Contains(r.stderr, `document #2 "src/circle.ts": cannot read its source`), r.stderr)
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`))
}

// TestAnalyzeSCIP_BadInvocations: what relay analyze --scip refuses, and
// how (review): an error naming what is wrong, nothing published.
func TestAnalyzeSCIP_BadInvocations(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root := t.TempDir()
	empty := filepath.Join(t.TempDir(), "empty.scip")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "ReferencesDoesNotApply", args: []string{"--scip", empty, "--references", "lexical"}, code: cli.ExitUsage,
			want: "--references does not apply to --scip"},
		{name: "ReferencesTypedDoesNotApplyEither", args: []string{"--references", "typed", "--scip", empty}, code: cli.ExitUsage,
			want: "--references does not apply to --scip"},
		{name: "EmptyIndex", args: []string{"--scip", empty}, code: cli.ExitRuntime,
			want: "index " + empty + " holds no documents (nothing was published)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, db, "", nil, append([]string{"analyze", root}, tt.args...)...)
			require.Equal(t, tt.code, r.code, r.stderr)
			require.Contains(t, r.stderr, tt.want)
			require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`))
		})
	}
}
