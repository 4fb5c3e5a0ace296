package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestAnalyze_PublishesOneJobPerGoFileAndResolvesCalls(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root := writeTree(t, map[string]string{
		"calc/add.go":           "package calc\n\nimport \"fmt\"\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Show(a int) { fmt.Println(Twice(a)) }\n",
		"calc/twice.go":         "package calc\n\ntype Pair struct{ A, B int }\n\nfunc Twice(a int) int { return Add(a, a) }\n",
		"calc/broken.go":        "package calc\n\nfunc {\n",
		"calc/testdata/skip.go": "package skip\n\nfunc Skip() {}\n",
	})

	r := run(t, db, "", nil, "analyze", root, "--json", "--work", "--files-per-tx", "1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "skipped calc/broken.go:3: ")

	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, 2, sum.Files)
	require.Equal(t, 5, sum.POIs) // import fmt, Add, Show, Pair, Twice
	require.Equal(t, 2, sum.Jobs)
	require.Len(t, sum.Skipped, 1)
	require.Equal(t, 3, sum.Skipped[0].Line)
	require.True(t, sum.Worked)
	require.EqualValues(t, 2, sum.Relationships) // Show->Twice and Twice->Add; fmt and Println are not in the corpus
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships
		WHERE source_poi_id = 'calc/twice.go:5:Twice' AND target_poi_id = 'calc/add.go:5:Add' AND type = 'CALLS'`))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file'`))

	// Analysing again republishes the same files: nothing is duplicated.
	r = run(t, db, "", nil, "analyze", root)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "published 2 files, 5 POIs in 2 jobs")
	require.Equal(t, 5, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`))
}

func TestAnalyze_RejectsAMissingDirectory(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "", nil, "analyze", filepath.Join(t.TempDir(), "nope"))
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "is not a directory")
}

func TestAnalyze_ARejectedFileDoesNotStopTheOthersOfItsTransaction(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root := writeTree(t, map[string]string{
		"p/a.go": "package p\n\nfunc A() { B() }\n",
		// A name over the outbox's 1,024-byte limit: the file is rejected.
		"p/dup.go": "package p\n\nfunc " + strings.Repeat("Long", 300) + "() {}\n",
		"p/b.go":   "package p\n\nfunc B() {}\n",
	})
	r := run(t, db, "", nil, "analyze", root, "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, 2, sum.Files)
	require.Len(t, sum.Rejected, 1)
	require.Equal(t, "p/dup.go", sum.Rejected[0].File)
	require.Contains(t, sum.Rejected[0].Error, "1024-byte limit")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships WHERE source_poi_id = 'p/a.go:3:A'`))
	require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE file_id = 'p/dup.go'`))
}

// writeTree writes files (slash-separated paths relative to the root) into a
// new temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, src := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	}
	return root
}
