package goanalyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// File is one Go file of the walked tree.
type File struct {
	// Analysis is the file's analysis, ready to publish: FileID is the path
	// relative to the walked directory, with forward slashes.
	Analysis outbox.Analysis
	// Err is set, and Analysis empty, when the file did not parse.
	Err *ParseError
}

// Walk calls fn for every .go file under root, in lexical order, skipping
// directories named testdata or vendor and those starting with "." or "_"
// (which the go tool ignores too), and files the default build excludes by
// their build constraints (a //go:build line, a _GOOS or _GOARCH name
// suffix: go/build's Context.MatchFile with build.Default), so that a name a
// package declares once per build configuration is published once. A file that does not parse is passed with
// Err set; fn decides whether to go on. Walk stops at fn's first error or when
// ctx ends. Its POIs have lexical references (WalkWith with
// ReferencesLexical).
func Walk(ctx context.Context, root string, fn func(File) error) error {
	return WalkWith(ctx, root, Options{References: ReferencesLexical}, fn)
}

// WalkWith is Walk with the references opts asks for: with
// ReferencesTyped (the default) it first loads and type-checks the tree's
// packages (tests included), and every function, method and type POI of a
// package that type-checks gets its symbol and its references (see
// ReferencesTyped).
func WalkWith(ctx context.Context, root string, opts Options, fn func(File) error) error {
	var tree typedTree
	switch opts.References {
	case "", ReferencesTyped:
		var err error
		if tree, err = loadTyped(ctx, root, opts); err != nil {
			return fmt.Errorf("error type-checking %s: %w", root, err)
		}
	case ReferencesLexical:
	default:
		return fmt.Errorf("references mode %q is not one of %s, %s", opts.References, ReferencesTyped, ReferencesLexical)
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("error walking %s: %w", p, err)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && skipsDir(name) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		if match, err := build.Default.MatchFile(filepath.Dir(p), name); err != nil || !match {
			// A file whose constraints cannot be read is left to the
			// parser, which reports it.
			if err == nil {
				return nil
			}
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("error naming %s relative to %s: %w", p, root, err)
		}
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("error reading %s: %w", p, err)
		}
		f, err := analyzeFile(rel, src, tree)
		if err != nil {
			return err
		}
		return fn(f)
	})
}

// AnalyzeFile extracts src's POIs and encodes them as the analysis of file
// relPath, with lexical references.
func AnalyzeFile(relPath string, src []byte) (File, error) {
	return analyzeFile(relPath, src, nil)
}

// analyzeFile is AnalyzeFile with the typed information of the tree, if any.
func analyzeFile(relPath string, src []byte, tree typedTree) (File, error) {
	pois, err := Extract(relPath, src)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return File{Err: pe}, nil
		}
		return File{}, err
	}
	tree.withTypes(relPath, pois)
	a := outbox.Analysis{FileID: relPath, POIs: make([]json.RawMessage, 0, len(pois))}
	for _, p := range pois {
		raw, err := json.Marshal(publishedPOI{POI: p, References: refsField(p.References)})
		if err != nil {
			return File{}, fmt.Errorf("error encoding POI %q: %w", p.ID, err)
		}
		a.POIs = append(a.POIs, raw)
	}
	return File{Analysis: a}, nil
}

// publishedPOI is a POI as analyzeFile encodes it: resolver.POI, but with
// references left out when the POI has none supplied (lexical), instead of
// "references": null, so that a lexical POI carries neither symbol nor
// references. A typed POI without references still carries
// "references": [], which tells the resolver not to read its rawCode.
type publishedPOI struct {
	resolver.POI
	// References shadows POI.References (encoding/json prefers the
	// shallower field of a name).
	References *[]resolver.SuppliedReference `json:"references,omitempty"`
}

// refsField is refs as publishedPOI.References: nil when refs is.
func refsField(refs []resolver.SuppliedReference) *[]resolver.SuppliedReference {
	if refs == nil {
		return nil
	}
	return &refs
}

// skipsDir reports whether Walk leaves out a directory of this name (below
// the root): testdata, vendor, and names starting with "." or "_", as the
// go command does.
func skipsDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// InWalk reports whether Walk visits the file at rel (slash-separated,
// relative to the root) as far as its directories go: none of them is one
// Walk leaves out.
func InWalk(rel string) bool {
	parts := strings.Split(rel, "/")
	return !slices.ContainsFunc(parts[:len(parts)-1], skipsDir)
}
