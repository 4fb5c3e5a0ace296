package accuracy

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/resolver"
)

// Site is where a call or an embedding is in the source.
type Site struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// Truth is what the type checker says the tree's POIs call and embed.
type Truth struct {
	// Edges are the static calls (CALLS; a generic instantiation is a
	// call of the generic declaration; closures count for the function
	// they are in) and the embedded named types (EXTENDS), between POIs of
	// the tree, each with its first site.
	Edges map[Edge]Site
	// Kinds says, for each CALLS edge, whether its target is a method.
	// Not in Edges, and counted here: calls of interface methods, calls of
	// function values (variables, fields, parameters, results of calls)
	// and recursive calls.
	InterfaceCalls, FuncValueCalls, Recursion int
	// Dynamic are the names called through an interface or a function
	// value by each source POI: an edge relay makes for one of them is
	// counted apart (Score's Dynamic), not as a false positive.
	Dynamic map[string]map[string]bool
	// Files are the tree's files (relative, forward slashes) whose package
	// type-checked: only POIs of these files are scored.
	Files map[string]bool
	// Errors are the packages that did not load or type-check, with the
	// first error.
	Errors []string
}

// poiIndex finds a POI of the analysis by file, line and name.
type poiIndex map[string]string

func indexKey(file string, line int, name string) string {
	return fmt.Sprintf("%s:%d:%s", file, line, name)
}

func newPOIIndex(g *Graph) poiIndex {
	idx := poiIndex{}
	for _, p := range g.POIs {
		if p.Type == resolver.TypeImport {
			continue
		}
		k := indexKey(p.FilePath, p.LineNumber, p.Name)
		if old, ok := idx[k]; !ok || p.ID < old {
			idx[k] = p.ID
		}
	}
	return idx
}

// ComputeTruth loads every package under root (tests included) with
// go/packages and walks the syntax with the type checker's information.
// POIs are matched to declarations by file, line and name (goanalyze's
// POIs are named and numbered after their declarations).
//
// With tests false, test files are left out of the truth (relay still
// analyses them, as `relay analyze` does, but their POIs are not scored).
func ComputeTruth(ctx context.Context, root string, g *Graph, tests bool) (*Truth, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	cfg := &packages.Config{
		Context: ctx,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps,
		Dir:   absRoot,
		Tests: tests,
		Env:   append(environ(), "GOFLAGS=-mod=mod", "GOWORK=off"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("error loading packages under %s: %w", root, err)
	}
	t := &Truth{Edges: map[Edge]Site{}, Dynamic: map[string]map[string]bool{}, Files: map[string]bool{}}
	idx := newPOIIndex(g)
	rel := func(pos token.Position) (string, bool) {
		if pos.Filename == "" {
			return "", false
		}
		r, err := filepath.Rel(absRoot, pos.Filename)
		if err != nil || strings.HasPrefix(r, "..") {
			return "", false
		}
		r = filepath.ToSlash(r)
		return r, goanalyze.InWalk(r)
	}
	// declID is the POI declared at pos named name, if the tree has one.
	declID := func(fset *token.FileSet, pos token.Pos, name string) (string, bool) {
		p := fset.Position(pos)
		file, ok := rel(p)
		if !ok {
			return "", false
		}
		id, ok := idx[indexKey(file, p.Line, name)]
		return id, ok
	}
	seenFile := map[string]bool{}
	packages.Visit(pkgs, nil, func(pkg *packages.Package) {
		if len(pkg.Errors) > 0 {
			for _, f := range pkg.CompiledGoFiles {
				if r, ok := rel(token.Position{Filename: f}); ok {
					t.Errors = append(t.Errors, fmt.Sprintf("%s: %s", pkg.ID, pkg.Errors[0]))
					_ = r
					break
				}
			}
			return
		}
		if pkg.TypesInfo == nil {
			return
		}
		for _, f := range pkg.Syntax {
			fname := pkg.Fset.Position(f.Pos()).Filename
			file, ok := rel(token.Position{Filename: fname})
			if !ok || seenFile[fname] {
				continue
			}
			seenFile[fname] = true
			t.Files[file] = true
			w := truthWalker{t: t, info: pkg.TypesInfo, fset: pkg.Fset, declID: declID}
			w.file(f)
		}
	})
	return t, nil
}

type truthWalker struct {
	t      *Truth
	info   *types.Info
	fset   *token.FileSet
	declID func(*token.FileSet, token.Pos, string) (string, bool)
}

func (w *truthWalker) site(pos token.Pos) Site {
	p := w.fset.Position(pos)
	return Site{File: p.Filename, Line: p.Line}
}

func (w *truthWalker) file(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			src, ok := w.declID(w.fset, d.Pos(), d.Name.Name)
			if !ok {
				continue
			}
			goanalyze.BodyUses(w.info, d.Body, func(u goanalyze.Use) { w.use(src, u) })
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				src, ok := w.declID(w.fset, goanalyze.DeclPos(d, spec), ts.Name.Name)
				if !ok {
					continue
				}
				goanalyze.EmbedUses(w.info, ts, func(u goanalyze.Use) { w.use(src, u) })
			}
		}
	}
}

// use records one use of the POI src.
func (w *truthWalker) use(src string, u goanalyze.Use) {
	switch u.Kind {
	case goanalyze.InterfaceCall:
		w.dynamic(src, u.Name, true)
	case goanalyze.FuncValueCall:
		if u.Name == "" {
			w.t.FuncValueCalls++
			return
		}
		w.dynamic(src, u.Name, false)
	case goanalyze.StaticCall, goanalyze.Embed:
		tgt, ok := w.declID(w.fset, u.Obj.Pos(), u.Obj.Name())
		if !ok {
			return // declared outside the tree
		}
		rt := resolver.Calls
		if u.Kind == goanalyze.Embed {
			rt = resolver.Extends
		}
		if tgt == src {
			if rt == resolver.Calls {
				w.t.Recursion++
			}
			return
		}
		e := Edge{Source: src, Target: tgt, Type: rt}
		if _, dup := w.t.Edges[e]; !dup {
			w.t.Edges[e] = w.site(u.Pos)
		}
	}
}

func (w *truthWalker) dynamic(src, name string, iface bool) {
	if iface {
		w.t.InterfaceCalls++
	} else {
		w.t.FuncValueCalls++
	}
	m := w.t.Dynamic[src]
	if m == nil {
		m = map[string]bool{}
		w.t.Dynamic[src] = m
	}
	m[name] = true
}
