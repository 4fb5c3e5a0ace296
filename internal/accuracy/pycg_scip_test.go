package accuracy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunPyCG_SCIP indexes the three small cases of testdata/pycg with the
// pinned scip-python and publishes relay analyze --scip's POIs, module
// POIs included, through relay's outbox and worker in every layout. The
// references are by symbol, and each case's symbols are its own project's:
// unlike extract.py's names, prefixed ids lose nothing (from_util's
// helper() is util.helper of its own case, from_util_too's info() is
// logging's, which no case defines).
func TestRunPyCG_SCIP(t *testing.T) {
	t.Parallel()
	indexer := filepath.Join("..", "..", SCIPPythonDefault)
	_, err := os.Stat(indexer)
	require.NoError(t, err, "scip-python is not installed: run make scip-indexers")
	ctx := context.Background()
	cases, err := LoadPyCGSCIP(ctx, pycgTestdata, PyCGSCIP{Indexer: indexer, ModulePOIs: true, Parallel: 3})
	require.NoError(t, err)
	require.Len(t, cases, 3)
	require.Equal(t, "main.main", cases[0].Names["main.py:9:main"])
	require.NotContains(t, cases[0].Names, "main.py:1:", "a module POI is named after its file")

	runs := runEveryLayout(t, cases)
	own := runs[PyCGOwnDatabase]
	require.Equal(t, map[string][]pycgEdge{
		"direct/local": {{Source: "main.py:1:", Target: "main.py:9:main"}, {Source: "main.py:5:helper", Target: "main.py:1:info"},
			{Source: "main.py:9:main", Target: "main.py:5:helper"}},
		"imports/from_util":     {{Source: "main.py:1:", Target: "main.py:4:main"}, {Source: "main.py:4:main", Target: "util.py:1:helper"}},
		"imports/from_util_too": {{Source: "main.py:1:", Target: "main.py:6:main"}, {Source: "main.py:6:main", Target: "util.py:1:helper"}},
	}, own.Edges)
	// Without the index's references, relay's lexical rule finds the same
	// calls on these cases.
	lexical, err := withoutReferences(cases)
	require.NoError(t, err)
	for _, p := range lexical[0].POIs {
		require.Nil(t, p.References, p.ID)
		require.Empty(t, p.Symbol, p.ID)
	}
	lexicalOwn, err := runPyCGLayout(ctx, lexical, PyCGOwnDatabase, pycgTestOptions(t))
	require.NoError(t, err)
	require.Equal(t, own.Edges, lexicalOwn.Edges)

	for _, layout := range PyCGLayouts {
		s, err := scorePyCG(cases, runs[layout], own)
		require.NoError(t, err)
		// print and logging.info have no POI.
		require.Equal(t, Counts{TP: 7, FN: 2, Precision: 1, Recall: 7.0 / 9}, s.Calls, layout)
		require.Zero(t, s.DifferFromOwn, layout)
	}
}

func TestPyCGSymbolName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ symbol, want string }{
		{"scip-python python p 0 `main`/func().", "main.func"},
		{"scip-python python p 0 `main`/A#f().", "main.A.f"},
		{"scip-python python p 0 `main`/A#B#__init__().", "main.A.B.__init__"},
		{"scip-python python p 0 `pkg.mod`/f().inner().", "pkg.mod.f.inner"},
		{"scip-python python p 0 `pkg.__init__`/f().", "pkg.f"},
		{"scip-python python p 0 `__init__`/f().", "f"},
		{"scip-typescript npm p 0 `main.js`/MyClass#`<constructor>`().", "main.MyClass.constructor"},
		{"scip-typescript npm p 0 nest/`imported.js`/func().", "nest.imported.func"},
		{"scip-typescript npm p 0 `main.js`/obj.method().", "main.obj.method"},
		{"local 3", ""},
		{"", ""},
	} {
		require.Equal(t, tc.want, pycgSymbolName(tc.symbol), tc.symbol)
	}
}
