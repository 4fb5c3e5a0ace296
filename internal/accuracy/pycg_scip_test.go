package accuracy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/resolver"
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
		{"scip-typescript npm p 0 nested/`index.js`/func().", "nested.func"},
		{"scip-typescript npm p 0 `index.js`/func().", "func"},
		{"scip-typescript npm p 0 `index.js`/`nested`/func().", "index.nested.func"},
		{"local 3", ""},
		{"", ""},
	} {
		require.Equal(t, tc.want, pycgSymbolName(tc.symbol), tc.symbol)
	}
}

// TestNameByScope: a function nested in a function or method is named
// after it, and (JavaScript) a function bound to an arrow function after
// its position among its scope's arrows, as PyCG's and SWARM-CG's call
// graphs name them; a directory's index.js after the directory.
func TestNameByScope(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	js := "function f() {\n  const g = (x) => x;\n  function h() {}\n  return g(h);\n}\n" +
		"const a = 1, b = [1].map((x) => x);\nconst c = async (y) => y;\nclass K {\n  m() {\n    function n() {}\n  }\n}\n"
	py := "class A:\n    def f(self):\n        def nested():\n            pass\n"
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pkg"), 0o755))
	for name, src := range map[string]string{"main.js": js, "m.py": py, "pkg/index.js": "export function f() {}\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(src), 0o600))
	}
	poi := func(file string, line int, typ, name, raw string) resolver.POI {
		return resolver.POI{ID: fmt.Sprintf("%s:%d:%s", file, line, name), FilePath: file, LineNumber: line, Type: typ, Name: name, RawCode: raw}
	}
	pois := []resolver.POI{
		poi("main.js", 1, resolver.TypeFunction, "f", "function f() {\n  const g = (x) => x;\n  function h() {}\n  return g(h);\n}"),
		poi("main.js", 2, resolver.TypeFunction, "g", "g = (x) => x"),
		poi("main.js", 3, resolver.TypeFunction, "h", "function h() {}"),
		poi("main.js", 7, resolver.TypeFunction, "c", "c = async (y) => y"),
		poi("main.js", 8, resolver.TypeClass, "K", "class K {\n  m() {\n    function n() {}\n  }\n}"),
		poi("main.js", 9, resolver.TypeMethod, "m", "m() {\n    function n() {}\n  }"),
		poi("main.js", 10, resolver.TypeFunction, "n", "function n() {}"),
		{ID: "main.js:1:", FilePath: "main.js", LineNumber: 1, Type: resolver.TypeFunction, Name: "__module__", RawCode: js},
		poi("m.py", 1, resolver.TypeClass, "A", py),
		poi("m.py", 2, resolver.TypeMethod, "f", "def f(self):\n        def nested():\n            pass"),
		poi("m.py", 3, resolver.TypeFunction, "nested", "def nested():\n            pass"),
		poi("pkg/index.js", 1, resolver.TypeFunction, "f", "export function f() {}"),
	}
	c := &PyCGCase{Name: "t", POIs: map[string]resolver.POI{}, Names: map[string]string{
		"main.js:9:m": "main.K.m", "main.js:8:K": "main.K", "m.py:2:f": "m.A.f", "m.py:3:nested": "m.A.nested", // by symbol
	}}
	for _, p := range pois {
		c.POIs[p.ID] = p
	}
	require.NoError(t, nameByScope(c, root))
	got := map[string]string{}
	for id, p := range c.POIs {
		got[id] = c.pycgName(p)
	}
	require.Equal(t, map[string]string{
		"main.js:1:f":      "main.f",
		"main.js:2:g":      "main.f.<arrow1>",
		"main.js:3:h":      "main.f.h",
		"main.js:7:c":      "main.<arrow2>", // after the map callback's, the module's first
		"main.js:8:K":      "main.K",
		"main.js:9:m":      "main.K.m",
		"main.js:10:n":     "main.K.m.n",
		"main.js:1:":       "main",
		"m.py:1:A":         "m.A",
		"m.py:2:f":         "m.A.f",
		"m.py:3:nested":    "m.A.f.nested", // scip-python's symbol leaves the method out
		"pkg/index.js:1:f": "pkg.f",
	}, got)
}
