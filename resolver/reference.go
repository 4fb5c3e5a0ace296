package resolver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// RelType is the type of a relationship between two POIs.
type RelType string

// Relationship types.
const (
	// Calls: a function, method or class calls a function or method.
	Calls RelType = "CALLS"
	// Extends: a class or interface extends a class or interface.
	Extends RelType = "EXTENDS"
	// Implements: a class implements an interface.
	Implements RelType = "IMPLEMENTS"
	// Imports: an import statement imports a POI of another file.
	Imports RelType = "IMPORTS"
)

// Reference is a name the POI's code refers to, with the relationship it would create.
type Reference struct {
	Name string
	Type RelType
}

// Extract returns the references in the POI's RawCode, de-duplicated and sorted
// by Type then Name, or nil when there are none.
//
// A POI with References (not nil) is not read: its references are those its
// analyzer supplied, whatever its type, each named SuppliedReference.Name
// ("sym:<symbol>", "id:<targetId>", or the name it gives, as a SCIP
// index's call the index cannot resolve), de-duplicated and sorted the
// same way.
//
// Which references a POI type
// yields, and which language forms are understood, is described in the package
// documentation. A POI of a type without references (a variable, an unknown
// type) yields nil and no error.
//
// Extract runs in time linear in len(p.RawCode) and checks ctx at least every
// 4 KiB of input; when ctx is done it returns an error wrapping ctx.Err().
func Extract(ctx context.Context, p POI) ([]Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("error extracting references of poi %q: %w", p.ID, err)
	}
	var refs refSet
	if p.References != nil {
		for _, r := range p.References {
			refs.add(r.Type, r.Name())
		}
		return refs.sorted(), nil
	}
	switch p.Type {
	case TypeFunction, TypeMethod:
		if err := extractCalls(ctx, p, &refs); err != nil {
			return nil, err
		}
	case TypeClass:
		if err := extractCalls(ctx, p, &refs); err != nil {
			return nil, err
		}
		if err := extractInheritance(ctx, p, &refs); err != nil {
			return nil, err
		}
	case TypeInterface:
		if err := extractInheritance(ctx, p, &refs); err != nil {
			return nil, err
		}
	case TypeImport:
		if err := extractImports(ctx, p, &refs); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	if isRootTestFile(p.FilePath) {
		addRootForms(&refs)
	}
	return refs.sorted(), nil
}

// scanError wraps the error that stopped a tokenizer, if any.
func scanError(z *tokenizer, p POI, what string) error {
	if z.err == nil {
		return nil
	}
	return fmt.Errorf("error extracting %s of poi %q: %w", what, p.ID, z.err)
}

// refSet collects distinct references.
type refSet struct {
	seen map[Reference]struct{}
	refs []Reference
}

// MaxNameBytes is the longest id or name relay stores: PostgreSQL cannot
// index longer text (a btree entry is at most about 2.7 kB, and some keys
// hold two of them). Publish rejects longer ids, names and file ids, so a
// longer reference name can never resolve and is not extracted.
const MaxNameBytes = 1024

// add records a reference; empty or over-long names and duplicates are
// dropped.
func (s *refSet) add(rt RelType, name string) {
	if name == "" || len(name) > MaxNameBytes {
		return
	}
	r := Reference{Name: name, Type: rt}
	if _, dup := s.seen[r]; dup {
		return
	}
	if s.seen == nil {
		s.seen = make(map[Reference]struct{})
	}
	s.seen[r] = struct{}{}
	s.refs = append(s.refs, r)
}

// sorted returns the references sorted by Type then Name, or nil when there
// are none. The names are copied into one new string, so the result does not
// pin a large RawCode in memory, at the cost of a single allocation.
func (s *refSet) sorted() []Reference {
	if len(s.refs) == 0 {
		return nil
	}
	slices.SortFunc(s.refs, compareReferences)
	size := 0
	for _, r := range s.refs {
		size += len(r.Name)
	}
	var b strings.Builder
	b.Grow(size)
	for _, r := range s.refs {
		b.WriteString(r.Name)
	}
	arena := b.String()
	for i := range s.refs {
		n := len(s.refs[i].Name)
		s.refs[i].Name, arena = arena[:n], arena[n:]
	}
	return s.refs
}

// compareReferences orders references by Type then Name.
func compareReferences(a, b Reference) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
}
