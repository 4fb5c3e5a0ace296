// Package accuracy scores the relationships relay derives from Go source
// against the truth the Go type checker gives: relay-eval. It runs relay's
// own extraction (internal/goanalyze, as `relay analyze` does) and its
// resolution in process, exactly as the worker would over the whole tree's
// symbol table (Resolve; a test holds it equal to the database path), and
// compares the CALLS and EXTENDS edges with those computed with go/packages
// and go/types (Truth).
package accuracy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/resolver"
)

// Edge is a relationship between two POIs, by id.
type Edge struct {
	Source string           `json:"source"`
	Target string           `json:"target"`
	Type   resolver.RelType `json:"type"`
}

// Graph is what relay derives from a tree: its POIs and the resolved edges.
type Graph struct {
	// POIs by id.
	POIs map[string]resolver.POI
	// Edges are the resolved references, sorted.
	Edges []Edge
	// Unknown and Ambiguous count the references that resolved to nothing.
	Unknown, Ambiguous int
	// Skipped are the files that did not parse.
	Skipped []goanalyze.ParseError
}

// Analyze extracts the POIs of every Go file under root as `relay analyze
// --references lexical` does, decodes them as the worker does, and resolves
// them with Resolve.
func Analyze(ctx context.Context, root string) (*Graph, error) {
	return AnalyzeWith(ctx, root, goanalyze.Options{References: goanalyze.ReferencesLexical})
}

// AnalyzeWith is Analyze with the reference mode of opts (`relay analyze
// --references typed|lexical`).
func AnalyzeWith(ctx context.Context, root string, opts goanalyze.Options) (*Graph, error) {
	var pois []resolver.POI
	var skipped []goanalyze.ParseError
	if opts.Env == nil {
		// As ComputeTruth loads the tree.
		opts.Env = append(environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	}
	err := goanalyze.WalkWith(ctx, root, opts, func(f goanalyze.File) error {
		if f.Err != nil {
			skipped = append(skipped, *f.Err)
			return nil
		}
		for _, raw := range f.Analysis.POIs {
			p, err := resolver.DecodePOI(raw)
			if err != nil {
				return fmt.Errorf("error decoding a POI of %s: %w", f.Analysis.FileID, err)
			}
			pois = append(pois, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	g, err := Resolve(ctx, pois)
	if err != nil {
		return nil, err
	}
	g.Skipped = skipped
	return g, nil
}

// Resolve extracts every POI's references and looks each up in the symbol
// table of all the POIs, as the worker does once every file is published
// (its result does not depend on the order of publishing): candidates are
// the POIs named by resolver.LookupNames(ref) that are not imports (by symbol
// or id for a supplied reference: resolver.AnswerNames), and
// resolver.Lookup decides. A POI id must be unique.
func Resolve(ctx context.Context, pois []resolver.POI) (*Graph, error) {
	g := &Graph{POIs: make(map[string]resolver.POI, len(pois))}
	byName := map[string][]resolver.Candidate{}
	for _, p := range pois {
		if _, dup := g.POIs[p.ID]; dup {
			return nil, fmt.Errorf("poi %q: %w", p.ID, errDuplicateID)
		}
		g.POIs[p.ID] = p
		if p.Type == resolver.TypeImport {
			continue
		}
		byName[p.Name] = append(byName[p.Name], resolver.Candidate{POIID: p.ID, FileID: p.FilePath, Name: p.Name, Type: p.Type,
			Receiver: resolver.Receiver(p), Result: resolver.ResultType(p), Fields: resolver.FieldTypes(p)})
		resolver.AnswerNames(resolver.Answerer{ID: p.ID, Type: p.Type, Symbol: p.Symbol}, resolver.ByID|resolver.BySymbol, func(n string) {
			byName[n] = append(byName[n], resolver.Candidate{POIID: p.ID, FileID: p.FilePath, Name: n, Type: p.Type})
		})
	}
	for _, p := range pois {
		refs, err := resolver.Extract(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, ref := range refs {
			var cands []resolver.Candidate
			for _, n := range resolver.LookupNames(ref) {
				cands = append(cands, byName[n]...)
			}
			target, outcome := resolver.Lookup(p.ID, p.FilePath, ref, cands)
			switch outcome {
			case resolver.Resolved:
				g.Edges = append(g.Edges, Edge{Source: p.ID, Target: target, Type: ref.Type})
			case resolver.Unknown:
				g.Unknown++
			case resolver.Ambiguous:
				g.Ambiguous++
			}
		}
	}
	slices.SortFunc(g.Edges, compareEdges)
	g.Edges = slices.Compact(g.Edges)
	return g, nil
}

var errDuplicateID = errors.New("duplicate POI id")

func compareEdges(a, b Edge) int {
	switch {
	case a.Source != b.Source:
		return cmpString(a.Source, b.Source)
	case a.Type != b.Type:
		return cmpString(string(a.Type), string(b.Type))
	}
	return cmpString(a.Target, b.Target)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
