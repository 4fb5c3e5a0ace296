package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker"
)

// goSrc is a directory of Go's own source tree: code nobody here wrote.
func goSrc(dir string) string { return filepath.Join(runtime.GOROOT(), "src", filepath.FromSlash(dir)) }

// truth is what go/types says of a tree, with no part of relay: each
// function's and method's static calls of the tree's functions and methods
// (a recursive call left out, as relay keeps no self edge), keyed by
// relay analyze's POI ids ("<file>:<line>:<name>", file relative to the
// tree), and the calls of another package's functions by symbol.
type truth struct {
	// calls maps a caller's id to the ids it calls.
	calls map[string]map[string]bool
	// funcs are the ids of every function and method declared.
	funcs map[string]bool
	// outside maps a caller's id to the symbols it calls of package
	// outsidePkg.
	outside map[string]map[string]bool
	// implements maps a type's id to the symbols of the tree's interfaces
	// it (or its pointer) implements.
	implements map[string]map[string]bool
	// fileOf maps an id to its file.
	fileOf map[string]string
}

// loadTruth type-checks the packages under root (tests included when
// tests) with go/packages.
func loadTruth(t *testing.T, root string, tests bool, outsidePkg string) *truth {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  root, Tests: tests,
	}, "./...")
	require.NoError(t, err)
	tr := &truth{calls: map[string]map[string]bool{}, funcs: map[string]bool{}, outside: map[string]map[string]bool{},
		implements: map[string]map[string]bool{}, fileOf: map[string]string{}}
	rel := func(fset *token.FileSet, pos token.Pos) (string, int, bool) {
		p := fset.Position(pos)
		r, err := filepath.Rel(root, p.Filename)
		if err != nil || strings.HasPrefix(r, "..") || (!tests && strings.HasSuffix(r, "_test.go")) {
			return "", 0, false
		}
		return filepath.ToSlash(r), p.Line, true
	}
	idOf := func(fset *token.FileSet, obj types.Object) (string, bool) {
		file, line, ok := rel(fset, obj.Pos())
		return fmt.Sprintf("%s:%d:%s", file, line, obj.Name()), ok
	}
	done := map[string]bool{}
	packages.Visit(pkgs, nil, func(pkg *packages.Package) {
		require.Empty(t, pkg.Errors, pkg.PkgPath)
		var ifaces []*types.TypeName
		for _, name := range pkg.Types.Scope().Names() {
			if tn, ok := pkg.Types.Scope().Lookup(name).(*types.TypeName); ok && types.IsInterface(tn.Type()) &&
				tn.Type().Underlying().(*types.Interface).NumMethods() > 0 {
				ifaces = append(ifaces, tn)
			}
		}
		for _, f := range pkg.Syntax {
			file, _, ok := rel(pkg.Fset, f.Pos())
			if !ok || done[file] {
				continue
			}
			done[file] = true
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					obj := pkg.TypesInfo.Defs[d.Name]
					if obj == nil || d.Body == nil {
						continue
					}
					caller, _ := idOf(pkg.Fset, obj)
					tr.funcs[caller], tr.fileOf[caller] = true, file
					ast.Inspect(d.Body, func(n ast.Node) bool {
						call, ok := n.(*ast.CallExpr)
						if !ok {
							return true
						}
						fun := ast.Unparen(call.Fun)
						switch x := fun.(type) {
						case *ast.IndexExpr:
							fun = x.X
						case *ast.IndexListExpr:
							fun = x.X
						}
						var id *ast.Ident
						switch x := fun.(type) {
						case *ast.Ident:
							id = x
						case *ast.SelectorExpr:
							id = x.Sel
						default:
							return true
						}
						fn, ok := pkg.TypesInfo.Uses[id].(*types.Func)
						if !ok {
							return true
						}
						fn = fn.Origin()
						if fn.Pkg() != nil && fn.Pkg().Path() == outsidePkg {
							add(tr.outside, caller, goanalyze.Symbol(fn))
							return true
						}
						if callee, ok := idOf(pkg.Fset, fn); ok && callee != caller {
							add(tr.calls, caller, callee)
						}
						return true
					})
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok {
							continue
						}
						obj := pkg.TypesInfo.Defs[ts.Name]
						if obj == nil || types.IsInterface(obj.Type()) {
							continue
						}
						id, _ := idOf(pkg.Fset, obj)
						for _, i := range ifaces {
							it := i.Type().Underlying().(*types.Interface)
							if types.Implements(obj.Type(), it) || types.Implements(types.NewPointer(obj.Type()), it) {
								add(tr.implements, id, goanalyze.Symbol(i))
							}
						}
					}
				}
			}
		}
	})
	// Calls of a declaration only some build configurations see (a file
	// the walk skips) are not the tree's.
	for caller, callees := range tr.calls {
		for c := range callees {
			if !tr.funcs[c] {
				delete(callees, c)
			}
		}
		if len(callees) == 0 {
			delete(tr.calls, caller)
		}
	}
	return tr
}

func add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// callersOf returns the ids that call id.
func (tr *truth) callersOf(id string) []string {
	var out []string
	for caller, callees := range tr.calls {
		if callees[id] {
			out = append(out, caller)
		}
	}
	slices.Sort(out)
	return out
}

func (tr *truth) calleesOf(id string) []string {
	var out []string
	for c := range tr.calls[id] {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// levels walks from id breadth-first, to depth, callers (up) or callees,
// and returns each id reached with its distance (id itself left out).
func (tr *truth) levels(id string, depth int, up bool) map[string]int {
	dist := map[string]int{id: 0}
	frontier := []string{id}
	for d := 1; d <= depth && len(frontier) > 0; d++ {
		var next []string
		for _, f := range frontier {
			nbrs := tr.calleesOf(f)
			if up {
				nbrs = tr.callersOf(f)
			}
			for _, n := range nbrs {
				if _, seen := dist[n]; !seen {
					dist[n] = d
					next = append(next, n)
				}
			}
		}
		frontier = next
	}
	delete(dist, id)
	return dist
}

// fixture is one database holding three real trees, as docs/relationships.md
// describes: Go's text/template (parse included) analyzed by relay analyze
// with typed references into repository "std", go/token the same way into
// "go/token", and go/ast published as an outside indexer would, through
// the publisher (`relay publish`'s path) into "go/ast": relay analyze's POIs
// and references, plus the calls of go/token's functions and the interfaces
// each type implements (go/types), by symbol.
type fixture struct {
	db       *testdb.DB
	template *truth
	ast      *truth
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db := testdb.New(t)
	cfg := worker.ConfigFrom(db.Config())
	inserter, err := worker.NewInsertClient(db.Pool, cfg, testdb.Logger(t))
	require.NoError(t, err)
	pub := outbox.New(inserter, nil, testdb.Logger(t))
	for _, tree := range []struct{ dir, repo string }{{"text/template", "std"}, {"go/token", "go/token"}} {
		sum, err := goanalyze.Publish(ctx, db.Pool, pub, goSrc(tree.dir), goanalyze.PublishConfig{Repository: tree.repo})
		require.NoError(t, err)
		require.Empty(t, sum.Warnings, tree.dir)
		require.Empty(t, sum.Rejected, tree.dir)
	}
	f := &fixture{db: db, template: loadTruth(t, goSrc("text/template"), true, ""), ast: loadTruth(t, goSrc("go/ast"), false, "go/token")}

	var analyses []outbox.Analysis
	require.NoError(t, goanalyze.WalkWith(ctx, goSrc("go/ast"), goanalyze.Options{}, func(file goanalyze.File) error {
		require.Nil(t, file.Err)
		a := file.Analysis
		a.Repository = "go/ast"
		for i, raw := range a.POIs {
			var p map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &p))
			var id string
			require.NoError(t, json.Unmarshal(p["id"], &id))
			var refs []resolver.SuppliedReference
			if r, ok := p["references"]; ok {
				require.NoError(t, json.Unmarshal(r, &refs))
			} else {
				continue // an import: lexical references
			}
			for s := range f.ast.outside[id] {
				refs = append(refs, resolver.SuppliedReference{Type: resolver.Calls, Symbol: s})
			}
			for s := range f.ast.implements[id] {
				refs = append(refs, resolver.SuppliedReference{Type: resolver.Implements, Symbol: s})
			}
			b, err := json.Marshal(refs)
			require.NoError(t, err)
			p["references"] = b
			a.POIs[i], err = json.Marshal(p)
			require.NoError(t, err)
		}
		analyses = append(analyses, a)
		return nil
	}))
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishManyTx(ctx, tx, analyses)
		return err
	}))
	w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
	require.NoError(t, err)
	require.NoError(t, w.RunUntilIdle(ctx, nil))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`))
	return f
}
