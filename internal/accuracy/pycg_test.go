package accuracy

import (
	"context"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

const pycgTestdata = "testdata/pycg"

// TestRunPyCG_RepositoriesEqualOwnDatabases publishes three small cases
// with the same file names (main.py, util.py) and function names (main,
// helper) through relay's outbox and worker: each in a database of its
// own, all in one database with ids prefixed by case, and all in one
// database with a repository each. A repository per case must give each
// case exactly the relationships of its own database; prefixed ids do not:
// from_util's helper() finds three helpers and links none, and
// from_util_too's info(), an import from logging, links to direct/local's
// info.
func TestRunPyCG_RepositoriesEqualOwnDatabases(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not on PATH: it runs the POI extractor; install Python 3 (Debian: apt-get install -y python3)")
	}
	for _, modules := range []bool{false, true} {
		name := "extract.py"
		if modules {
			name = "module POIs"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cases, err := LoadPyCG(ctx, pycgTestdata, PyCGExtract{ModulePOIs: modules})
			require.NoError(t, err)
			require.Len(t, cases, 3)
			require.Equal(t, "imports/from_util", cases[1].Name)
			require.Empty(t, cases[1].Skipped)

			runs := runEveryLayout(t, cases)
			own, prefixed, repos := runs[PyCGOwnDatabase], runs[PyCGPrefixedIDs], runs[PyCGRepositories]
			require.Equal(t, 3, own.Databases)
			require.Equal(t, 1, repos.Databases)
			for _, c := range cases {
				require.Equal(t, own.Edges[c.Name], repos.Edges[c.Name], c.Name)
			}

			edges := func(run *pycgRun, name string) []string {
				var out []string
				for _, e := range run.Edges[name] {
					if modules && e.Source == "main.py:1:" {
						continue // checked by the scores below
					}
					out = append(out, e.String())
				}
				return out
			}
			require.Equal(t, []string{
				"main.py:5:helper CALLS main.py:1:info",
				"main.py:9:main CALLS main.py:5:helper",
			}, edges(own, "direct/local"))
			require.Equal(t, []string{"main.py:4:main CALLS util.py:1:helper"}, edges(own, "imports/from_util"))
			require.Equal(t, []string{"main.py:6:main CALLS util.py:1:helper"}, edges(own, "imports/from_util_too"))

			require.Equal(t, edges(own, "direct/local"), edges(prefixed, "direct/local"), "calls within a file resolve")
			require.Empty(t, edges(prefixed, "imports/from_util"), "helper() is ambiguous across cases")
			require.Equal(t, []string{"main.py:6:main CALLS direct/local: main.py:1:info"}, edges(prefixed, "imports/from_util_too"))

			scores := map[PyCGLayout]*PyCGScore{}
			for layout, run := range runs {
				scores[layout], err = scorePyCG(cases, run, own)
				require.NoError(t, err)
			}
			// Of the 9 edges of the call graphs, print and logging.info
			// have no POI, and without module POIs neither have the three
			// module-level calls of main().
			want := Counts{TP: 4, FP: 0, FN: 5, Precision: 1, Recall: 4.0 / 9}
			if modules {
				want = Counts{TP: 7, FP: 0, FN: 2, Precision: 1, Recall: 7.0 / 9}
			}
			require.Equal(t, want, scores[PyCGOwnDatabase].Calls)
			require.Equal(t, want, scores[PyCGRepositories].Calls)
			require.Zero(t, scores[PyCGRepositories].DifferFromOwn)
			require.Equal(t, []string{"imports/from_util", "imports/from_util_too"}, scores[PyCGPrefixedIDs].Differing)
			require.Equal(t, 1, scores[PyCGPrefixedIDs].CrossCase)
			require.Equal(t, want.TP-2, scores[PyCGPrefixedIDs].Calls.TP)
			require.Equal(t, 1, scores[PyCGPrefixedIDs].Calls.FP)
		})
	}
}

func TestPyCGName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ id, file, want string }{
		{"main.py:3:func", "main.py", "main.func"},
		{"main.py:5:A.B.f", "main.py", "main.A.B.f"},
		{"pkg/mod.py:1:f", "pkg/mod.py", "pkg.mod.f"},
		{"pkg/__init__.py:1:f", "pkg/__init__.py", "pkg.f"},
		{"__init__.py:1:f", "__init__.py", "f"},
		{"pkg/mod.py:1:", "pkg/mod.py", "pkg.mod"},
		{"nest/imported.js:1:", "nest/imported.js", "nest.imported"},
		{"main.js:3:func", "main.js", "main.func"},
	} {
		require.Equal(t, tc.want, PyCGName(resolver.POI{ID: tc.id, FilePath: tc.file}), tc.id)
	}
}

func TestSplitCase(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{"imports/a": true, "imports/a/b": true}
	c, id := splitCase(cases, "imports/a/nested/mod.py:1:f")
	require.Equal(t, "imports/a", c)
	require.Equal(t, "nested/mod.py:1:f", id)
	c, id = splitCase(cases, "imports/a/b/main.py:1:f")
	require.Equal(t, "imports/a/b", c)
	require.Equal(t, "main.py:1:f", id)
	c, _ = splitCase(cases, "other/main.py:1:f")
	require.Empty(t, c)
}

// runEveryLayout publishes and works cases in each of PyCGLayouts, each
// database the test's own, and fails the test when a POI fails.
func runEveryLayout(t *testing.T, cases []*PyCGCase) map[PyCGLayout]*pycgRun {
	t.Helper()
	opts := pycgTestOptions(t)
	runs := map[PyCGLayout]*pycgRun{}
	for _, layout := range PyCGLayouts {
		run, err := runPyCGLayout(context.Background(), cases, layout, opts)
		require.NoError(t, err)
		require.Zero(t, run.Failed)
		runs[layout] = run
	}
	return runs
}

// pycgTestOptions runs one case at a time, each layout's databases the
// test's own.
func pycgTestOptions(t *testing.T) PyCGOptions {
	return PyCGOptions{Parallel: 1, Logger: testdb.Logger(t), NewDatabase: func(context.Context) (*PyCGDatabase, error) {
		db := testdb.New(t)
		return &PyCGDatabase{Pool: db.Pool, Config: db.Config()}, nil
	}}
}
