package resolver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAccepts(t *testing.T) {
	t.Parallel()

	types := []string{TypeFunction, TypeMethod, TypeClass, TypeInterface, TypeVariable, TypeImport, "unknown_type"}
	tests := []struct {
		rt   RelType
		want []string
	}{
		{rt: Calls, want: []string{TypeFunction, TypeMethod}},
		{rt: Extends, want: []string{TypeClass, TypeInterface}},
		{rt: Implements, want: []string{TypeInterface}},
		{rt: Imports, want: []string{TypeFunction, TypeMethod, TypeClass, TypeInterface, TypeVariable, "unknown_type"}},
		{rt: "USES", want: nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.rt), func(t *testing.T) {
			t.Parallel()

			var got []string
			for _, typ := range types {
				if Accepts(tt.rt, typ) {
					got = append(got, typ)
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestOutcome_String(t *testing.T) {
	t.Parallel()

	tests := []struct {
		o    Outcome
		want string
	}{
		{Resolved, "resolved"}, {Unknown, "unknown"}, {Ambiguous, "ambiguous"}, {Outcome(7), "Outcome(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, tt.o.String())
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()

	fn := func(id, file, name string) Candidate {
		return Candidate{POIID: id, FileID: file, Name: name, Type: TypeFunction}
	}
	of := func(typ string, c Candidate) Candidate { c.Type = typ; return c }
	call := Reference{Name: "add", Type: Calls}

	tests := []struct {
		name        string
		ref         Reference
		cands       []Candidate
		wantTarget  string
		wantOutcome Outcome
	}{
		{name: "NoCandidates", ref: call, wantOutcome: Unknown},
		{name: "OtherNamesOnly", ref: call, cands: []Candidate{fn("f1", "b.js", "sub")}, wantOutcome: Unknown},
		{name: "UniqueGlobal", ref: call, cands: []Candidate{fn("f1", "b.js", "add"), fn("f2", "b.js", "sub")}, wantTarget: "f1", wantOutcome: Resolved},
		{name: "AmbiguousGlobal", ref: call, cands: []Candidate{fn("f1", "b.js", "add"), fn("f2", "c.js", "add")}, wantOutcome: Ambiguous},
		{name: "SameFilePreferredOverUniqueGlobal", ref: call, cands: []Candidate{fn("f1", "b.js", "add"), fn("f2", "a.js", "add")}, wantTarget: "f2", wantOutcome: Resolved},
		{name: "SameFilePreferredOverAmbiguousGlobal", ref: call, cands: []Candidate{fn("f1", "b.js", "add"), fn("f3", "c.js", "add"), fn("f2", "a.js", "add")}, wantTarget: "f2", wantOutcome: Resolved},
		{name: "SameFileAmbiguityDoesNotFallBack", ref: call, cands: []Candidate{fn("f2", "a.js", "add"), fn("f3", "a.js", "add"), fn("f1", "b.js", "add")}, wantOutcome: Ambiguous},
		{name: "RepeatedRowIsOneCandidate", ref: call, cands: []Candidate{fn("f1", "b.js", "add"), fn("f1", "b.js", "add")}, wantTarget: "f1", wantOutcome: Resolved},
		{name: "SelfExcluded", ref: call, cands: []Candidate{fn("src", "a.js", "add")}, wantOutcome: Unknown},
		{name: "SelfExcludedFallsBackToGlobal", ref: call, cands: []Candidate{fn("src", "a.js", "add"), fn("f1", "b.js", "add")}, wantTarget: "f1", wantOutcome: Resolved},
		{name: "SelfDoesNotMakeAmbiguous", ref: call, cands: []Candidate{fn("src", "a.js", "add"), fn("f2", "a.js", "add")}, wantTarget: "f2", wantOutcome: Resolved},
		{
			name:       "CallsSkipsVariableOfSameName",
			ref:        call,
			cands:      []Candidate{of(TypeVariable, fn("v1", "a.js", "add")), fn("f1", "b.js", "add")},
			wantTarget: "f1", wantOutcome: Resolved,
		},
		{name: "CallsHitsMethod", ref: call, cands: []Candidate{of(TypeMethod, fn("m1", "b.js", "add")), of(TypeClass, fn("c1", "b.js", "add"))}, wantTarget: "m1", wantOutcome: Resolved},
		{
			name:       "ImplementsOnlyHitsInterfaces",
			ref:        Reference{Name: "Shape", Type: Implements},
			cands:      []Candidate{of(TypeClass, fn("c1", "a.js", "Shape")), of(TypeInterface, fn("i1", "b.ts", "Shape"))},
			wantTarget: "i1", wantOutcome: Resolved,
		},
		{
			name:        "ExtendsHitsClassOrInterface",
			ref:         Reference{Name: "Base", Type: Extends},
			cands:       []Candidate{of(TypeClass, fn("c1", "b.js", "Base")), of(TypeInterface, fn("i1", "c.ts", "Base")), fn("f1", "a.js", "Base")},
			wantOutcome: Ambiguous,
		},
		{
			name:       "ImportsIgnoreSameFile",
			ref:        Reference{Name: "add", Type: Imports},
			cands:      []Candidate{fn("f2", "a.js", "add"), fn("f1", "b.js", "add")},
			wantTarget: "f1", wantOutcome: Resolved,
		},
		{
			name:        "ImportsOnlySameFileIsUnknown",
			ref:         Reference{Name: "add", Type: Imports},
			cands:       []Candidate{fn("f2", "a.js", "add")},
			wantOutcome: Unknown,
		},
		{
			name:       "ImportsSkipOtherImports",
			ref:        Reference{Name: "add", Type: Imports},
			cands:      []Candidate{of(TypeImport, fn("i9", "c.js", "add")), of(TypeVariable, fn("v1", "b.js", "add"))},
			wantTarget: "v1", wantOutcome: Resolved,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			// Every order of the candidates gives the same result.
			permute(tt.cands, func(cands []Candidate) {
				target, outcome := Lookup("src", "a.js", tt.ref, cands)
				require.Equal(t, tt.wantOutcome, outcome, "candidates %v", cands)
				require.Equal(t, tt.wantTarget, target, "candidates %v", cands)
			})
		})
	}
}

// permute calls f with every permutation of cands (Heap's algorithm).
func permute(cands []Candidate, f func([]Candidate)) {
	a := append([]Candidate(nil), cands...)
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			f(a)
			return
		}
		for i := 0; i < k; i++ {
			gen(k - 1)
			if k%2 == 0 {
				a[i], a[k-1] = a[k-1], a[i]
			} else {
				a[0], a[k-1] = a[k-1], a[0]
			}
		}
	}
	gen(len(a))
}

func TestExtractLookup_RecursionCreatesNoSelfEdge(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		poi  POI
	}{
		{name: "JS", poi: POI{ID: "fact", Type: TypeFunction, Name: "fact", FilePath: "a.js", RawCode: "function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) }"}},
		{name: "Python", poi: POI{ID: "fact", Type: TypeFunction, Name: "fact", FilePath: "a.py", RawCode: "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\n"}},
		{name: "GoMethod", poi: POI{ID: "fact", Type: TypeMethod, Name: "Fact", FilePath: "a.go", RawCode: "func (m *M) Fact(n int) int {\n\tif n <= 1 {\n\t\treturn 1\n\t}\n\treturn n * m.Fact(n-1)\n}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			refs, err := Extract(context.Background(), tt.poi)
			require.NoError(t, err)
			cands := []Candidate{{POIID: tt.poi.ID, FileID: tt.poi.FilePath, Name: tt.poi.Name, Type: tt.poi.Type}}
			for _, ref := range refs {
				target, outcome := Lookup(tt.poi.ID, tt.poi.FilePath, ref, cands)
				require.Equal(t, Unknown, outcome, "reference %v", ref)
				require.Empty(t, target)
			}
		})
	}
}

func TestLookupElsewhere_OnlyOneSymbolCounts(t *testing.T) {
	t.Parallel()
	sym := Reference{Name: "sym:npm pkg 1.0 f().", Type: Calls}
	fn := func(id string) Candidate {
		return Candidate{POIID: id, FileID: "src/main.go", Name: sym.Name, Type: TypeFunction}
	}
	class := Candidate{POIID: "c", FileID: "src/c.go", Name: sym.Name, Type: TypeClass}
	for _, tc := range []struct {
		name  string
		ref   Reference
		cands []Candidate
		index int
		want  Outcome
	}{
		{"one", sym, []Candidate{fn("main")}, 0, Resolved},
		{"one that counts: a class is not called", sym, []Candidate{class, fn("main")}, 1, Resolved},
		// The same POI id in two repositories is two POIs.
		{"two with one id", sym, []Candidate{fn("main"), fn("main")}, -1, Ambiguous},
		{"none", sym, nil, -1, Unknown},
		{"a name never resolves elsewhere", Reference{Name: "main", Type: Calls},
			[]Candidate{{POIID: "main", Name: "main", Type: TypeFunction}}, -1, Unknown},
		{"an id never resolves elsewhere", Reference{Name: "id:main", Type: Calls},
			[]Candidate{{POIID: "main", Name: "id:main", Type: TypeFunction}}, -1, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			index, got := LookupElsewhere(tc.ref, tc.cands)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.index, index)
		})
	}
}
