package goanalyze

import (
	"cmp"
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/relay-dev/relay/resolver"
)

// Reference modes of an analysis (Options.References).
const (
	// ReferencesTyped gives each function, method and type POI its symbol
	// and the references go/types finds (its static calls and embedded
	// types within the tree), as analyzer-supplied references; a package
	// that does not type-check falls back to lexical, with a warning.
	ReferencesTyped = "typed"
	// ReferencesLexical leaves references to relay's lexical resolver,
	// which reads each POI's rawCode.
	ReferencesLexical = "lexical"
)

// Options tunes WalkWith.
type Options struct {
	// References is ReferencesTyped (the default) or ReferencesLexical.
	References string
	// Warn, when set, receives one line per package typed mode could not
	// use (the package and the reason), or one for the whole tree when the
	// go command could not load it.
	Warn func(string)
	// Lexical, when set, is called once for each package typed mode fell
	// back to lexical for, with its path, or once with "" when every
	// package did (the go command could not load the tree).
	Lexical func(pkg string)
	// Env is the environment go/packages runs the go command with; nil
	// is os.Environ(), so the tree is loaded as `go build` would load it
	// there (go.mod is never rewritten: -mod=readonly, or vendor).
	Env []string
}

// declInfo is what typed mode knows of one declaration (a POI).
type declInfo struct {
	symbol string
	// refs is nil when the declaration's package did not type-check: the
	// POI keeps lexical references.
	refs []resolver.SuppliedReference
}

// typedTree is the typed information of a tree: per file (relative path),
// per "line:name" of a declaration.
type typedTree map[string]map[string]declInfo

// loadTyped loads every package under root (tests included) and computes
// each declaration's symbol and references. A package with errors gives its
// declarations symbols (so that others' references reach them) but no
// references, and a warning.
func loadTyped(ctx context.Context, root string, opts Options) (typedTree, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	warn := func(format string, args ...any) {
		if opts.Warn != nil {
			opts.Warn(fmt.Sprintf(format, args...))
		}
	}
	lexical := func(pkg string) {
		if opts.Lexical != nil {
			opts.Lexical(pkg)
		}
	}
	// Only the tree's packages are parsed and type-checked from source;
	// their imports' types come from export data (on pgx: 1.9 s and 300 MB
	// instead of 4.5 s and 930 MB). A symbol is a name, the same whichever
	// *types.Func gives it.
	pkgs, err := loadPackages(ctx, absRoot, env)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		warn("typed references unavailable for every package under %s, lexical used: %v", root, err)
		lexical("")
		return typedTree{}, nil
	}
	// rel is the tree-relative path of a file the walk visits.
	rel := func(filename string) (string, bool) {
		if filename == "" {
			return "", false
		}
		r, err := filepath.Rel(absRoot, filename)
		if err != nil || strings.HasPrefix(r, "..") {
			return "", false
		}
		r = filepath.ToSlash(r)
		return r, InWalk(r)
	}
	tree := typedTree{}
	warned := map[string]bool{}
	packages.Visit(pkgs, nil, func(pkg *packages.Package) {
		typed := len(pkg.Errors) == 0
		if !typed {
			// A package of the tree (or a pattern the go command could not
			// load at all, which has no files), once for its test variants.
			pattern := len(pkg.GoFiles)+len(pkg.CompiledGoFiles) == 0
			ours := pattern
			for _, f := range append(pkg.GoFiles, pkg.CompiledGoFiles...) {
				if _, ok := rel(f); ok {
					ours = true
				}
			}
			name := cmp.Or(pkg.PkgPath, pkg.ID)
			switch {
			case !ours || warned[name]:
			case pattern:
				warned[name] = true
				warn("%s", notLoaded(root, absRoot, pkg.Errors[0]))
				lexical("")
			default:
				warned[name] = true
				warn("package %s: lexical references (does not type-check: %s)", name, pkg.Errors[0])
				lexical(name)
			}
		}
		if pkg.TypesInfo == nil {
			return
		}
		for _, f := range pkg.Syntax {
			file, ok := rel(pkg.Fset.Position(f.Pos()).Filename)
			if !ok {
				continue
			}
			if old, seen := tree[file]; seen && (!typed || hasRefs(old)) {
				continue // a file of a package and of its test variant
			}
			tree[file] = fileDecls(pkg, f, typed, func(pos token.Pos) bool {
				_, ok := rel(pkg.Fset.Position(pos).Filename)
				return ok
			})
		}
	})
	return tree, nil
}

// notLoaded says why the go command could not load the packages under root
// (absRoot made absolute) and that every package falls back to lexical
// references: outside a Go module, what to do about it, in place of the go
// command's "pattern ./...: directory prefix . does not contain main module".
func notLoaded(root, absRoot string, err packages.Error) string {
	if _, ok := moduleRoot(absRoot); !ok {
		return fmt.Sprintf("%s is not in a Go module (no go.mod in it or in a directory above it), so every package "+
			"fell back to lexical references. For typed references, run 'go mod init MODULE_PATH' in %s, or analyze "+
			"the directory that holds the module's go.mod; pass --references lexical to choose lexical references", root, root)
	}
	return fmt.Sprintf("the go command could not load the packages under %s, so every package fell back to lexical "+
		"references: %s", root, strings.TrimPrefix(err.Msg, "pattern ./...: "))
}

func hasRefs(decls map[string]declInfo) bool {
	for _, d := range decls {
		if d.refs != nil {
			return true
		}
	}
	return len(decls) == 0
}

// fileDecls computes the symbol and, when typed, the references of each
// function, method and type declared in f. inTree reports whether a
// position is in a file of the tree: references to declarations outside it
// could never resolve, and are left out.
func fileDecls(pkg *packages.Package, f *ast.File, typed bool, inTree func(token.Pos) bool) map[string]declInfo {
	info := pkg.TypesInfo
	out := map[string]declInfo{}
	key := func(pos token.Pos, name string) string {
		return fmt.Sprintf("%d:%s", pkg.Fset.Position(pos).Line, name)
	}
	collect := func(self string) (func(Use), func() []resolver.SuppliedReference) {
		refs := []resolver.SuppliedReference{}
		seen := map[resolver.SuppliedReference]bool{}
		add := func(u Use) {
			if u.Kind != StaticCall && u.Kind != Embed {
				return
			}
			if !u.Obj.Pos().IsValid() || !inTree(u.Obj.Pos()) {
				return
			}
			r := resolver.SuppliedReference{Type: resolver.Calls}
			if u.Kind == Embed {
				r.Type = resolver.Extends
			}
			r.Symbol = boundedSymbol(u.Obj)
			if r.Symbol == "" || r.Symbol == self || seen[r] {
				return
			}
			seen[r] = true
			refs = append(refs, r)
		}
		return add, func() []resolver.SuppliedReference { return refs }
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			obj := info.Defs[d.Name]
			if obj == nil || d.Name.Name == "_" {
				continue
			}
			di := declInfo{symbol: boundedSymbol(obj)}
			if typed {
				add, refs := collect(di.symbol)
				if d.Body != nil {
					BodyUses(info, d.Body, add)
				}
				di.refs = refs()
			}
			out[key(d.Pos(), d.Name.Name)] = di
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || ts.Name.Name == "_" {
					continue
				}
				obj := info.Defs[ts.Name]
				if obj == nil {
					continue
				}
				di := declInfo{symbol: boundedSymbol(obj)}
				if typed {
					add, refs := collect(di.symbol)
					EmbedUses(info, ts, add)
					di.refs = refs()
				}
				out[key(DeclPos(d, spec), ts.Name.Name)] = di
			}
		}
	}
	if typed {
		importUses(info, f, inTree, key, out)
	}
	return out
}

// importUses gives each import of f that brings a package name into scope
// (not a blank or dot import) IMPORTS references: the functions and types
// of the tree this file uses through that name (q.F, q.T, q.T.M's q.T), in
// source order, once each. An import of a package outside the tree, or
// one the file uses only for its variables and constants, gets none: the
// references are empty, not absent, so the resolver does not read the
// import's rawCode (whose package name is no POI). Keys are the import
// POIs' (Extract's line and name).
func importUses(info *types.Info, f *ast.File, inTree func(token.Pos) bool, key func(token.Pos, string) string, out map[string]declInfo) {
	type imp struct {
		key  string
		seen map[string]bool
	}
	imports := map[*types.PkgName]*imp{}
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.GenDecl)
		if !ok || d.Tok != token.IMPORT {
			continue
		}
		for _, spec := range d.Specs {
			is, ok := spec.(*ast.ImportSpec)
			if !ok {
				continue
			}
			name := importName(is)
			if name == "" {
				continue
			}
			var obj types.Object
			if is.Name != nil {
				obj = info.Defs[is.Name]
			} else {
				obj = info.Implicits[is]
			}
			pn, ok := obj.(*types.PkgName)
			if !ok {
				continue
			}
			k := key(DeclPos(d, spec), name)
			imports[pn] = &imp{key: k, seen: map[string]bool{}}
			out[k] = declInfo{refs: []resolver.SuppliedReference{}}
		}
	}
	if len(imports) == 0 {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		pn, ok := info.Uses[x].(*types.PkgName)
		if !ok || imports[pn] == nil {
			return true
		}
		var obj types.Object
		switch o := info.Uses[sel.Sel].(type) {
		case *types.Func:
			obj = o.Origin()
		case *types.TypeName:
			obj = o
		default:
			return true // a variable or constant: no POI
		}
		if !obj.Pos().IsValid() || !inTree(obj.Pos()) {
			return true
		}
		sym := boundedSymbol(obj)
		im := imports[pn]
		if sym == "" || im.seen[sym] {
			return true
		}
		im.seen[sym] = true
		di := out[im.key]
		di.refs = append(di.refs, resolver.SuppliedReference{Type: resolver.Imports, Symbol: sym})
		out[im.key] = di
		return true
	})
}

// withTypes gives the POIs of file their symbols and references from tree
// (an import: its IMPORTS references, importUses). A POI whose declaration
// the type checker did not see (a file excluded by build constraints) is
// left as it is: lexical.
func (tree typedTree) withTypes(file string, pois []resolver.POI) {
	decls := tree[file]
	if decls == nil {
		return
	}
	seen := map[string]bool{}
	for i := range pois {
		p := &pois[i]
		k := fmt.Sprintf("%d:%s", p.LineNumber, p.Name)
		di, ok := decls[k]
		if !ok || seen[k] {
			continue // two declarations of one name on one line: left lexical
		}
		seen[k] = true
		p.Symbol, p.References = di.symbol, di.refs
	}
}

// boundedSymbol is Symbol, or "" when it is longer than a POI's symbol may
// be (resolver.MaxSymbolBytes): such a declaration gets no symbol, and
// references to it are left out.
func boundedSymbol(obj types.Object) string {
	if s := Symbol(obj); len(s) <= resolver.MaxSymbolBytes {
		return s
	}
	return ""
}
