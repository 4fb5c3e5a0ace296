package goanalyze

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

// loadPackages loads the packages matching "./..." under dir (tests
// included) as packages.Load would with NeedSyntax, NeedTypes and
// NeedTypesInfo, and returns the roots: the tree's packages are parsed and
// type-checked from source, their imports from outside the tree read from
// the go command's export data.
//
// It type-checks one package at a time, in import order. packages.Load
// type-checks packages concurrently, and go/types races then between
// checkers sharing a type read lazily from export data ((*Named).unpack
// against (*Checker).isComplete, golang/go#81122): the race detector failed
// the typed-reference tests in CI with it. Nothing here runs two checkers at
// once; the go command (the build of the export data) is still the cost
// that dominates a load.
func loadPackages(ctx context.Context, dir string, env []string) ([]*packages.Package, error) {
	cfg := &packages.Config{
		Context: ctx,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedDeps | packages.NeedExportFile | packages.NeedTypesSizes | packages.NeedModule,
		Dir:   dir,
		Tests: true,
		Env:   env,
	}
	roots, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	sep := string(filepath.Separator)
	inTree := func(p *packages.Package) bool {
		for _, f := range p.CompiledGoFiles {
			if strings.HasPrefix(f, dir+sep) {
				return true
			}
		}
		return false
	}
	fset := token.NewFileSet()
	// readExport sets p.Types from the go command's export data, as
	// packages.Load does: the packages that p's export data names are
	// those of p's imports already read or checked (a test variant of a
	// package imported through a recompiled dependency keeps its identity).
	readExport := func(p *packages.Package) error {
		if p.ExportFile == "" {
			return fmt.Errorf("no export data for %s", p.PkgPath)
		}
		view := map[string]*types.Package{}
		seen := map[*packages.Package]bool{}
		var visit func(imports map[string]*packages.Package)
		visit = func(imports map[string]*packages.Package) {
			for _, ip := range imports {
				if !seen[ip] {
					seen[ip] = true
					if ip.Types != nil {
						view[ip.PkgPath] = ip.Types
					} else {
						visit(ip.Imports)
					}
				}
			}
		}
		visit(p.Imports)
		f, err := os.Open(p.ExportFile)
		if err != nil {
			return err
		}
		defer f.Close()
		r, err := gcexportdata.NewReader(bufio.NewReader(f))
		if err != nil {
			return fmt.Errorf("reading export data for %s: %w", p.PkgPath, err)
		}
		p.Types, err = gcexportdata.Read(r, fset, view, p.PkgPath)
		if err != nil {
			return fmt.Errorf("reading export data for %s: %w", p.PkgPath, err)
		}
		return nil
	}
	// needed are the packages from outside the tree that a package of the
	// tree imports: the ones whose types are read from export data, each
	// after those of them it imports (directly or not), so that one
	// package has one identity everywhere.
	needed := map[*packages.Package]bool{}
	packages.Visit(roots, nil, func(p *packages.Package) {
		if inTree(p) {
			for _, ip := range p.Imports {
				if !inTree(ip) {
					needed[ip] = true
				}
			}
		}
	})
	exportErrs := map[*packages.Package]error{}
	done := map[string]bool{}
	var check, ensure func(p *packages.Package) error
	ensure = func(p *packages.Package) error {
		if p.Types != nil {
			return nil
		}
		if inTree(p) {
			return check(p)
		}
		seen := map[*packages.Package]bool{}
		var below func(imports map[string]*packages.Package) error
		below = func(imports map[string]*packages.Package) error {
			for _, path := range sortedKeys(imports) {
				ip := imports[path]
				if seen[ip] {
					continue
				}
				seen[ip] = true
				var err error
				if needed[ip] || inTree(ip) {
					err = ensure(ip)
				} else {
					err = below(ip.Imports)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		if err := below(p.Imports); err != nil {
			return err
		}
		// A package whose export data cannot be read is an import error of
		// the packages of the tree that import it, as with packages.Load.
		exportErrs[p] = readExport(p)
		return nil
	}
	check = func(p *packages.Package) error {
		if done[p.ID] {
			return nil
		}
		done[p.ID] = true
		for _, path := range sortedKeys(p.Imports) {
			if err := ensure(p.Imports[path]); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		typeCheck(p, fset, func(path string) (*types.Package, error) {
			if path == "unsafe" {
				return types.Unsafe, nil
			}
			ip := p.Imports[path]
			if ip == nil {
				return nil, fmt.Errorf("no metadata for %s", path)
			}
			if ip.Types == nil {
				return nil, cmp.Or(exportErrs[ip], fmt.Errorf("no types for %s", path))
			}
			return ip.Types, nil
		})
		return nil
	}
	for _, p := range roots {
		if err := check(p); err != nil {
			return nil, err
		}
	}
	return roots, nil
}

// sortedKeys is m's keys in order: a load reads and checks packages in an
// order that does not depend on map iteration.
func sortedKeys(m map[string]*packages.Package) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeCheck parses p's files and type-checks them, filling p's Fset,
// Syntax, Types and TypesInfo, and appending to p.Errors what does not
// parse or type-check.
func typeCheck(p *packages.Package, fset *token.FileSet, importer importerFunc) {
	p.Fset = fset
	for _, name := range p.CompiledGoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.AllErrors|parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			p.Errors = append(p.Errors, packages.Error{Pos: name, Msg: err.Error(), Kind: packages.ParseError})
		}
		if f != nil {
			p.Syntax = append(p.Syntax, f)
		}
	}
	p.Types = types.NewPackage(p.PkgPath, p.Name)
	p.TypesInfo = &types.Info{
		Types:        map[ast.Expr]types.TypeAndValue{},
		Defs:         map[*ast.Ident]types.Object{},
		Uses:         map[*ast.Ident]types.Object{},
		Implicits:    map[ast.Node]types.Object{},
		Instances:    map[*ast.Ident]types.Instance{},
		Scopes:       map[ast.Node]*types.Scope{},
		Selections:   map[*ast.SelectorExpr]*types.Selection{},
		FileVersions: map[*ast.File]string{},
	}
	tc := &types.Config{
		Importer: importer,
		Error: func(err error) {
			p.Errors = append(p.Errors, packages.Error{Msg: err.Error(), Kind: packages.TypeError})
		},
		Sizes: p.TypesSizes,
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		tc.GoVersion = "go" + p.Module.GoVersion
	}
	// The errors are in p.Errors, through tc.Error.
	_ = types.NewChecker(tc, fset, p.Types, p.TypesInfo).Files(p.Syntax)
}

// importerFunc is a types.Importer made of a function.
type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
