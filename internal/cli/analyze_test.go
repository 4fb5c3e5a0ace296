package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
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

// moduleTree is a tiny Go module that type-checks: typed references find
// T's embedding of Base and Get's call of helper.
var moduleTree = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.22\n",
	"p/p.go": "package p\n\nimport \"strings\"\n\ntype Base struct{}\n\ntype T struct{ Base }\n\n" +
		"func (T) Get() string { return strings.ToUpper(helper()) }\n\nfunc helper() string { return \"\" }\n",
}

// publishedPOIs reads the POIs relay analyze published, as JSON objects by
// POI id, from the resolve_file jobs' args.
func publishedPOIs(t *testing.T, db *testdb.DB) map[string]map[string]json.RawMessage {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT args FROM river_job WHERE kind = 'resolve_file'`)
	require.NoError(t, err)
	defer rows.Close()
	pois := map[string]map[string]json.RawMessage{}
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var args outbox.ResolveFileArgs
		require.NoError(t, json.Unmarshal(raw, &args))
		for _, rawPOI := range args.POIs {
			var p map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(rawPOI, &p))
			var id string
			require.NoError(t, json.Unmarshal(p["id"], &id))
			pois[id] = p
		}
	}
	require.NoError(t, rows.Err())
	return pois
}

func TestAnalyze_ReferencesTypedSuppliesSymbolsAndReferencesLexicalNone(t *testing.T) {
	t.Parallel()
	root := writeTree(t, moduleTree)
	decls := []string{"p/p.go:5:Base", "p/p.go:7:T", "p/p.go:9:Get", "p/p.go:11:helper"}

	// typed is the default.
	typedDB := testdb.New(t)
	r := run(t, typedDB, "", nil, "analyze", root, "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, "typed", sum.References)
	require.Empty(t, sum.Warnings, "the module type-checks")
	require.Equal(t, 5, sum.POIs) // import strings, Base, T, Get, helper
	pois := publishedPOIs(t, typedDB)
	require.Len(t, pois, 5)
	for _, id := range decls {
		require.Contains(t, pois[id], "symbol", id)
		require.Contains(t, pois[id], "references", id)
	}
	require.JSONEq(t, `"example.com/m/p.T.Get"`, string(pois["p/p.go:9:Get"]["symbol"]))
	require.JSONEq(t, `[{"type":"CALLS","symbol":"example.com/m/p.helper"}]`, string(pois["p/p.go:9:Get"]["references"]))
	require.JSONEq(t, `[{"type":"EXTENDS","symbol":"example.com/m/p.Base"}]`, string(pois["p/p.go:7:T"]["references"]))
	require.JSONEq(t, `[]`, string(pois["p/p.go:11:helper"]["references"]))
	require.NotContains(t, pois["p/p.go:3:strings"], "symbol", "an import has no symbol")
	require.JSONEq(t, `[]`, string(pois["p/p.go:3:strings"]["references"]), "strings is outside the tree")
	require.Equal(t, 4, testdb.Count(t, typedDB.Pool, `SELECT count(*) FROM pois WHERE symbol IS NOT NULL`))
	require.Equal(t, 1, testdb.Count(t, typedDB.Pool, `SELECT count(*) FROM relationships
		WHERE source_poi_id = 'p/p.go:9:Get' AND target_poi_id = 'p/p.go:11:helper' AND type = 'CALLS'`))

	// The same module with --references lexical: no POI carries a symbol
	// or supplied references, and no warning is given.
	lexicalDB := testdb.New(t)
	r = run(t, lexicalDB, "", nil, "analyze", root, "--references", "lexical", "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	sum = cli.AnalyzeSummary{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, "lexical", sum.References)
	require.Empty(t, sum.Warnings)
	pois = publishedPOIs(t, lexicalDB)
	require.Len(t, pois, 5)
	for id, p := range pois {
		require.NotContains(t, p, "symbol", id)
		require.NotContains(t, p, "references", id)
	}
	require.Equal(t, 0, testdb.Count(t, lexicalDB.Pool, `SELECT count(*) FROM pois WHERE symbol IS NOT NULL`))
	// The lexical resolver still finds the call by reading rawCode.
	require.Equal(t, 1, testdb.Count(t, lexicalDB.Pool, `SELECT count(*) FROM relationships
		WHERE source_poi_id = 'p/p.go:9:Get' AND target_poi_id = 'p/p.go:11:helper' AND type = 'CALLS'`))

	r = run(t, lexicalDB, "", nil, "analyze", root, "--references", "lexical")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "published 1 file, 5 POIs in 1 job")
	require.Contains(t, r.stdout, "; lexical references, 0 warnings")
	require.NotContains(t, r.stderr, "warning")
}

// TestAnalyze_GoImportsLinkToTheDeclarationsTheFileUses: with typed
// references, a Go import POI IMPORTS the functions and types of the
// imported package of the tree that its file uses through the import's
// name (issue 40: cobra's 186 imports made no IMPORTS edge); variables,
// constants, packages outside the tree and other files' uses give none.
// With lexical references a Go import names a package, which is no POI:
// no edge.
func TestAnalyze_GoImportsLinkToTheDeclarationsTheFileUses(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"q/q.go": "package q\n\ntype T struct{}\n\nfunc (T) M() {}\n\nfunc F() T { return T{} }\n\n" +
			"func Unused() {}\n\nvar V = 1\n\nconst C = 2\n",
		"q/r.go": "package q\n\ntype R interface{ M() }\n",
		"p/p.go": "package p\n\nimport (\n\t\"strings\"\n\n\t\"example.com/m/q\"\n\tqq \"example.com/m/q\"\n\t_ \"example.com/m/q\"\n)\n\n" +
			"func A() string {\n\tvar r q.R = q.F()\n\tq.T.M(q.T{})\n\t_ = r\n\treturn strings.Repeat(\"x\", q.V+q.C)\n}\n\n" +
			"func B() qq.T { return qq.F() }\n",
		"p/s.go": "package p\n\nimport \"example.com/m/q\"\n\nfunc S() { q.Unused() }\n",
	})
	imports := func(db *testdb.DB) []string {
		rows, err := db.Pool.Query(context.Background(), `SELECT source_poi_id || ' -> ' || target_poi_id
			FROM relationships WHERE type = 'IMPORTS' ORDER BY 1`)
		require.NoError(t, err)
		edges, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return edges
	}

	typedDB := testdb.New(t)
	r := run(t, typedDB, "", nil, "analyze", root, "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, []string{
		"p/p.go:6:q -> q/q.go:3:T",
		"p/p.go:6:q -> q/q.go:7:F",
		"p/p.go:6:q -> q/r.go:3:R",
		"p/p.go:7:qq -> q/q.go:3:T",
		"p/p.go:7:qq -> q/q.go:7:F",
		"p/s.go:3:q -> q/q.go:9:Unused",
	}, imports(typedDB))
	require.Equal(t, 0, testdb.Count(t, typedDB.Pool, `SELECT count(*) FROM poi_references
		WHERE source_poi_id = 'p/p.go:4:strings'`), "an import of a package outside the tree has no reference")

	lexicalDB := testdb.New(t)
	r = run(t, lexicalDB, "", nil, "analyze", root, "--references", "lexical", "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Empty(t, imports(lexicalDB))
}

func TestAnalyze_ReferencesRejectsAnUnknownModeAsAUsageError(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "", nil, "analyze", t.TempDir(), "--references", "exact")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `relay: --references "exact" is not one of typed, lexical`)
	require.Contains(t, r.stderr, "Run 'relay --help' for usage.")
}

func TestAnalyze_HelpDescribesBothReferenceModesAndTheFallback(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "", nil, "analyze", "--help")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	for _, want := range []string{
		"--references says where the POIs' references come from:",
		"  typed (the default)",
		"type-checked with go/types",
		"A package that does not type-check keeps",
		"load DIR at all (no go.mod, or no go command), every package does,",
		"  lexical\n      No type checking: POIs carry no symbol and no references",
		"Every warning is printed to standard error",
		`--references string`,
		`(default "typed")`,
		"--scip INDEX reads a SCIP index",
		"is an error naming the document and\nthe occurrence, and nothing is published",
	} {
		require.Contains(t, r.stdout, want)
	}
	r = run(t, nil, "", nil, "--help") // lists each command's Short
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "(typed or lexical references), or from a SCIP index of DIR (--scip), and publish one analysis per file")
}

func TestAnalyze_OutsideAGoModuleSaysItFellBackToLexical(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	// A copied tree without go.mod: typed references fall back to lexical
	// for every package, and relay says so in a sentence naming the
	// directory and what to do, not in the go command's words.
	files := map[string]string{}
	for name, src := range moduleTree {
		if name != "go.mod" {
			files[name] = src
		}
	}
	root := writeTree(t, files)
	warning := "relay analyze: warning: " + root + " is not in a Go module (no go.mod in it or in a directory above it), " +
		"so every package fell back to lexical references. For typed references, run 'go mod init MODULE_PATH' in " + root

	r := run(t, db, "", nil, "analyze", root)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "; lexical references (fell back from typed: see the warning), 1 warning\n")
	require.Contains(t, r.stderr, warning)
	require.Contains(t, r.stderr, "pass --references lexical to choose lexical references")
	require.NotContains(t, r.stderr, "directory prefix", "the go command's text is translated")
	require.Equal(t, 1, strings.Count(r.stderr, "warning:"), r.stderr)

	// --json lists it too (and stderr still carries it); the exit code is
	// the same.
	r = run(t, db, "", nil, "analyze", root, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, warning)
	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, "typed", sum.References, "what was asked for")
	require.Equal(t, "lexical", sum.ReferencesUsed, "what the POIs got")
	require.Len(t, sum.Warnings, 1)
	require.Contains(t, r.stderr, "relay analyze: warning: "+sum.Warnings[0]+"\n", "the whole warning")
	for id, p := range publishedPOIs(t, db) {
		require.NotContains(t, p, "references", "fell back to lexical: %s", id)
	}

	// In a module, one package that does not type-check: typed references
	// for the others, and the summary says how many fell back.
	files = map[string]string{"q/q.go": "package q\n\nfunc Q() int { return undefined }\n"}
	for name, src := range moduleTree {
		files[name] = src
	}
	r = run(t, db, "", nil, "analyze", writeTree(t, files))
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "; typed references (1 package fell back to lexical), 1 warning\n")
	require.Contains(t, r.stderr, "relay analyze: warning: package example.com/m/q: lexical references (does not type-check: ")
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

func TestAnalyze_PublishesToTheRepositoryOfTheFlagElseTheModuleElseTheDirectory(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	root := writeTree(t, moduleTree)
	// Every resolve_file job of the analyses names the repository too.
	jobRepos := func() map[string]int {
		rows, err := db.Pool.Query(context.Background(), `SELECT args FROM river_job WHERE kind = 'resolve_file'`)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var raw []byte
			require.NoError(t, rows.Scan(&raw))
			var args outbox.ResolveFileArgs
			require.NoError(t, json.Unmarshal(raw, &args))
			out[args.Repository]++
		}
		require.NoError(t, rows.Err())
		return out
	}

	// Without --repository, a directory inside a module publishes to the
	// module's path (its file ids stay relative to the directory).
	r := run(t, db, "", nil, "analyze", filepath.Join(root, "p"), "--references", "lexical", "--json", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var sum cli.AnalyzeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, "example.com/m", sum.Repository)
	require.Contains(t, r.stdout, `"repository": "example.com/m"`)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE repository = 'example.com/m' AND file_id = 'p.go'`))
	require.Equal(t, map[string]int{"example.com/m": 1}, jobRepos())
	require.EqualValues(t, 2, sum.Relationships, "Get calls helper, T embeds Base")

	// --repository names another; --repository "" is the default
	// repository. The text output says which.
	r = run(t, db, "", nil, "analyze", root, "--references", "lexical", "--repository", "other", "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `published 1 file, 5 POIs in 1 job to repository "other" in `)
	require.Contains(t, r.stdout, `: 2 relationships, 0 failed POIs in repository "other"`, "the repository's, not the database's 4")
	r = run(t, db, "", nil, "analyze", root, "--references", "lexical", "--repository", "")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "published 1 file, 5 POIs in 1 job to the default repository in ")
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE repository = 'other' AND file_id = 'p/p.go'`))
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE repository = '' AND file_id = 'p/p.go'`))
	require.Equal(t, map[string]int{"example.com/m": 1, "other": 1, "": 1}, jobRepos())
	// The same POI ids in three repositories, each its own.
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE poi_id LIKE '%:helper'`))

	// Outside a module: the directory's base name.
	files := map[string]string{}
	for name, src := range moduleTree {
		if name != "go.mod" {
			files[name] = src
		}
	}
	plain := writeTree(t, files)
	r = run(t, db, "", nil, "analyze", plain, "--references", "lexical", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	sum = cli.AnalyzeSummary{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, filepath.Base(plain), sum.Repository)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE repository = $1`, filepath.Base(plain)))

	r = run(t, nil, "", nil, "analyze", "--help")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "--repository name")
	require.Contains(t, r.stdout, `--repository "" publishes to the default repository`)
}
