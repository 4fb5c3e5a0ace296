package cli_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/graph"
	"github.com/relay-dev/relay/internal/testdb"
)

// callersInSource returns the functions and methods of file whose body
// calls a function or method named name (f(…) or x.f(…)), read with
// go/parser: an independent answer for a name declared once.
func callersInSource(t *testing.T, file, name string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || fd.Name.Name == name {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				ok = fn.Name == name
			case *ast.SelectorExpr:
				ok = fn.Sel.Name == name
			default:
				ok = false
			}
			if ok {
				out = append(out, fd.Name.Name)
			}
			return true
		})
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func nodeNames(nodes []*graph.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestGraph_AnswersOnARealTree runs relay graph against Go's text/template
// as relay analyze publishes it, checking its answers against the source.
func TestGraph_AnswersOnARealTree(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	src := filepath.Join(runtime.GOROOT(), "src", "text", "template")
	r := run(t, db, "", nil, "analyze", src, "--work")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	parseGo := filepath.Join(src, "parse", "parse.go")
	pipelineCallers := callersInSource(t, parseGo, "pipeline")
	require.Len(t, pipelineCallers, 5)

	walk := func(t *testing.T, args ...string) cli.GraphWalk {
		t.Helper()
		r := run(t, db, "", nil, append([]string{"graph"}, append(args, "--json")...)...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		var w cli.GraphWalk
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &w), r.stdout)
		return w
	}

	t.Run("a target by name, symbol, file:name, qualified name and id", func(t *testing.T) {
		for target, by := range map[string]string{
			"pipeline":                             "name",
			"text/template/parse.(*Tree).pipeline": "symbol",
			"parse/parse.go:pipeline":              "file:name",
			"Tree.pipeline":                        "qualified name",
			"parse.(*Tree).pipeline":               "qualified name",
		} {
			w := walk(t, "callers", target)
			require.Equal(t, by, w.MatchedBy, target)
			require.Equal(t, "text/template/parse.(*Tree).pipeline", w.Target.Symbol)
			require.Equal(t, "std", w.Target.Repository)
			require.Equal(t, pipelineCallers, nodeNames(w.Items), target)
			byID := walk(t, "callers", w.Target.POIID, "--repository", "std")
			require.Equal(t, "id", byID.MatchedBy)
			require.Equal(t, w.Items, byID.Items)
		}
	})

	t.Run("callees", func(t *testing.T) {
		w := walk(t, "callees", "parse/parse.go:term")
		require.Equal(t, "callees", w.Direction)
		require.Contains(t, nodeNames(w.Items), "pipeline")
		require.Contains(t, nodeNames(w.Items), "newNumber")
		for _, it := range w.Items {
			require.Empty(t, it.Children, "depth 1")
		}
	})

	t.Run("a tree to depth 2, repeated items not expanded", func(t *testing.T) {
		r := run(t, db, "", nil, "graph", "callers", "--depth", "2", "pipeline")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Regexp(t, `^callers of text/template/parse\.\(\*Tree\)\.pipeline  parse/parse\.go:\d+  \(method_definition, repository "std"; CALLS, 2 levels\)$`, lines[0])
		var level1 []string
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "  text/") {
				level1 = append(level1, l)
			}
		}
		require.Len(t, level1, len(pipelineCallers))
		// action calls pipeline and is called by blockControl and
		// templateControl, which call pipeline too: action is listed
		// under them again, not expanded.
		require.Regexp(t, `(?m)^    text/template/parse\.\(\*Tree\)\.textOrAction  parse/parse\.go:\d+$`, r.stdout)
		require.Regexp(t, `(?m)^    text/template/parse\.\(\*Tree\)\.action  parse/parse\.go:\d+  \(see above\)$`, r.stdout)
		for _, c := range callersInSource(t, parseGo, "action") {
			require.Contains(t, r.stdout, ".(*Tree)."+c+"  parse/parse.go:")
		}
	})

	t.Run("a cycle is marked and ends", func(t *testing.T) {
		// pipeline <- term <- operand <- command <- pipeline.
		w := walk(t, "callers", "pipeline", "--depth", "4")
		var cycles []*graph.Node
		var visit func(ns []*graph.Node)
		visit = func(ns []*graph.Node) {
			for _, n := range ns {
				if n.Cycle {
					require.True(t, n.Repeated)
					require.Empty(t, n.Children)
					cycles = append(cycles, n)
				}
				visit(n.Children)
			}
		}
		visit(w.Items)
		require.True(t, slices.ContainsFunc(cycles, func(n *graph.Node) bool { return n.Name == "pipeline" && n.Depth == 4 }))
		r := run(t, db, "", nil, "graph", "callers", "pipeline", "--depth", "4")
		require.Regexp(t, `(?m)^        text/template/parse\.\(\*Tree\)\.pipeline  parse/parse\.go:\d+  \(cycle\)$`, r.stdout)
	})

	t.Run("--type EXTENDS: the types that embed one", func(t *testing.T) {
		w := walk(t, "callers", "NodeType", "--type", "extends")
		require.Equal(t, "EXTENDS", w.Type)
		require.Greater(t, len(w.Items), 10)
		for _, it := range w.Items {
			require.Equal(t, "class_declaration", it.Type)
			require.True(t, strings.HasSuffix(it.Name, "Node"), it.Name)
		}
	})

	t.Run("an ambiguous target lists its candidates", func(t *testing.T) {
		r := run(t, db, "", nil, "graph", "callers", "errorf")
		require.Equal(t, cli.ExitUsage, r.code)
		require.Contains(t, r.stderr, `"errorf" matches 3 POIs by name; give one's id`)
		for _, loc := range []string{"exec.go:", "parse/lex.go:", "parse/parse.go:"} {
			require.Regexp(t, `\n  `+loc+`\d+  method_definition  text/template`, r.stderr)
			require.Contains(t, r.stderr, "id "+loc)
		}
		require.Empty(t, r.stdout)
	})

	t.Run("an unknown target names near names", func(t *testing.T) {
		r := run(t, db, "", nil, "graph", "callees", "pipelin")
		require.Equal(t, cli.ExitUsage, r.code)
		require.Contains(t, r.stderr, `no POI matches "pipelin"`)
		require.Contains(t, r.stderr, "near names: pipeline")
		r = run(t, db, "", nil, "graph", "callers", "pipeline", "--repository", "")
		require.Equal(t, cli.ExitUsage, r.code)
		require.Contains(t, r.stderr, `no POI matches "pipeline" (by id, symbol, file:name, qualified name or name) in the default repository`)
	})

	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{{"--depth", "0"}, {"--type", "CALLZ"}} {
			r := run(t, db, "", nil, append([]string{"graph", "callers", "pipeline"}, args...)...)
			require.Equal(t, cli.ExitUsage, r.code, args)
			require.Contains(t, r.stderr, args[0], args)
		}
		r := run(t, db, "", nil, "graph")
		require.Equal(t, cli.ExitUsage, r.code)
	})

	t.Run("dependents", func(t *testing.T) {
		// A path ending with the file id finds it.
		r := run(t, db, "", nil, "graph", "dependents", "text/template/parse/lex.go", "--json")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		var d cli.GraphDependents
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
		require.Equal(t, graph.File{Repository: "std", FileID: "parse/lex.go"}, d.File)
		byFile := map[string]graph.Dependent{}
		for _, dep := range d.Dependents {
			byFile[dep.FileID] = dep
		}
		// parse.go calls lex(), exec.go calls into parse.go.
		require.Equal(t, 1, byFile["parse/parse.go"].Depth)
		require.Equal(t, 2, byFile["exec.go"].Depth)
		require.Equal(t, "parse/parse.go", byFile["exec.go"].Via.FileID)
		require.NotContains(t, byFile, "parse/lex.go")

		r = run(t, db, "", nil, "graph", "dependents", "parse/lex.go", "--depth", "1")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "files that depend on parse/lex.go (repository \"std\"): ")
		require.Contains(t, r.stdout, "\n  1  parse/parse.go\n")
		require.NotContains(t, r.stdout, "exec.go")

		r = run(t, db, "", nil, "graph", "dependents", "parse/nope.go")
		require.Equal(t, cli.ExitUsage, r.code)
		require.Contains(t, r.stderr, `no file "parse/nope.go" in any repository`)
		r = run(t, db, "", nil, "graph", "dependents", "elsewhere/lex.go")
		require.Equal(t, cli.ExitUsage, r.code)
		require.Contains(t, r.stderr, `files of that name: parse/lex.go (repository "std")`)
	})
}

// TestGraph_AmbiguousAcrossRepositoriesSaysRepository: the same id in two
// repositories asks for --repository, which picks one.
func TestGraph_AmbiguousAcrossRepositoriesSaysRepository(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := run(t, db, repositoryAnalyses, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	r = run(t, db, "", nil, "graph", "callers", "s1")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, `"s1" matches 2 POIs by id`)
	require.Contains(t, r.stderr, ", or --repository:")
	require.Contains(t, r.stderr, `repository "acme/b"`)
	require.Contains(t, r.stderr, `repository "acme/c"`)

	// acme/c's t calls its own S; acme/a's run (no S of its own) resolves
	// m/S in no repository, the symbol being in two.
	r = run(t, db, "", nil, "graph", "callers", "s1", "--repository", "acme/c")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "\n  m/c.t  t.go:1\n")
	r = run(t, db, "", nil, "graph", "callers", "s1", "--repository", "acme/b")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "\n  no callers\n")
}
