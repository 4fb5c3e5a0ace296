package resolver

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodePOI_SuppliedReferences(t *testing.T) {
	t.Parallel()

	const head = `{"id":"a1","type":"method_definition","name":"Get","filePath":"x.go","lineNumber":3,`
	base := POI{ID: "a1", Type: TypeMethod, Name: "Get", FilePath: "x.go", LineNumber: 3}
	with := func(f func(*POI)) POI { p := base; f(&p); return p }
	long := strings.Repeat("s", MaxSymbolBytes+1)

	tests := []struct {
		name       string
		raw        string
		want       POI
		wantField  string
		wantReason string // exact Reason; "" means no error expected
	}{
		{name: "Absent", raw: head + `"rawCode":"x"}`, want: with(func(p *POI) { p.RawCode = "x" })},
		{name: "NullIsAbsent", raw: head + `"symbol":null,"references":null}`, want: base},
		{name: "EmptyListIsPresent", raw: head + `"references":[]}`, want: with(func(p *POI) { p.References = []SuppliedReference{} })},
		{name: "SymbolAndReferences", raw: head + `"symbol":"example.com/m/pkg.(*T).Get","references":[` +
			`{"type":"CALLS","symbol":"example.com/m/pkg.helper"},{"type":"EXTENDS","targetId":"b7","note":1},` +
			`{"type":"IMPORTS","symbol":"x","targetId":null}]}`,
			want: with(func(p *POI) {
				p.Symbol = "example.com/m/pkg.(*T).Get"
				p.References = []SuppliedReference{{Type: Calls, Symbol: "example.com/m/pkg.helper"},
					{Type: Extends, TargetID: "b7"}, {Type: Imports, Symbol: "x"}}
			})},

		{name: "SymbolEmpty", raw: head + `"symbol":""}`, wantField: "symbol", wantReason: "must be a non-empty string, got empty string"},
		{name: "SymbolNumber", raw: head + `"symbol":7}`, wantField: "symbol", wantReason: "must be a non-empty string, got number 7"},
		{name: "SymbolTooLong", raw: head + `"symbol":"` + long + `"}`, wantField: "symbol", wantReason: "is 1021 bytes, more than the 1020-byte limit"},
		{name: "ReferencesObject", raw: head + `"references":{"type":"CALLS"}}`, wantField: "references", wantReason: "must be an array, got object"},
		{name: "ReferencesString", raw: head + `"references":"f"}`, wantField: "references", wantReason: `must be an array, got string "f"`},
		{name: "ItemNotObject", raw: head + `"references":[{"type":"CALLS","symbol":"f"},"g"]}`, wantField: "references[1]", wantReason: `must be an object, got string "g"`},
		{name: "TypeMissing", raw: head + `"references":[{"symbol":"f"}]}`, wantField: "references[0].type", wantReason: "is required"},
		{name: "TypeUnknown", raw: head + `"references":[{"type":"CALLS","symbol":"f"},{"type":"CALLS","symbol":"g"},{"type":"CALLZ","symbol":"h"}]}`,
			wantField: "references[2].type", wantReason: `"CALLZ" is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS`},
		{name: "TypeLowerCase", raw: head + `"references":[{"type":"calls","symbol":"f"}]}`, wantField: "references[0].type", wantReason: `"calls" is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS`},
		{name: "TypeNumber", raw: head + `"references":[{"type":3,"symbol":"f"}]}`, wantField: "references[0].type", wantReason: "must be one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS, got number 3"},
		{name: "Neither", raw: head + `"references":[{"type":"CALLS"}]}`, wantField: "references[0]", wantReason: "must have exactly one of symbol, targetId and name, got none"},
		{name: "Both", raw: head + `"references":[{"type":"CALLS","symbol":"f","targetId":"b"}]}`, wantField: "references[0]", wantReason: "must have exactly one of symbol, targetId and name, got symbol and targetId"},
		{name: "SymbolAndName", raw: head + `"references":[{"type":"CALLS","symbol":"f","name":"g"}]}`, wantField: "references[0]", wantReason: "must have exactly one of symbol, targetId and name, got symbol and name"},
		{name: "NameEmpty", raw: head + `"references":[{"type":"CALLS","name":""}]}`, wantField: "references[0].name", wantReason: "must be a non-empty string, got empty string"},
		{name: "NameLooksSupplied", raw: head + `"references":[{"type":"CALLS","name":"sym:f"}]}`, wantField: "references[0].name", wantReason: `"sym:f" starts with sym: or id:: give a symbol or a targetId instead`},
		{name: "SymbolEmptyInReference", raw: head + `"references":[{"type":"CALLS","symbol":""}]}`, wantField: "references[0].symbol", wantReason: "must be a non-empty string, got empty string"},
		{name: "TargetIDNumber", raw: head + `"references":[{"type":"CALLS","targetId":12}]}`, wantField: "references[0].targetId", wantReason: "must be a non-empty string, got number 12"},
		{name: "TargetIDTooLong", raw: head + `"references":[{"type":"CALLS","targetId":"` + long + `"}]}`, wantField: "references[0].targetId", wantReason: "is 1021 bytes, more than the 1020-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := DecodePOI([]byte(tt.raw))
			sym := DecodeSymbol([]byte(tt.raw))
			require.Equal(t, err, sym.Err, "DecodeSymbol validates as DecodePOI")
			if tt.wantReason == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				require.Equal(t, tt.want.Symbol, sym.POI.Symbol)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, "a1", verr.POIID)
			require.Equal(t, tt.wantField, verr.Field)
			require.Equal(t, tt.wantReason, verr.Reason)
			require.Equal(t, `poi "a1": `+tt.wantField+" "+tt.wantReason, err.Error())
		})
	}
}

func TestExtract_SuppliedReferencesReplaceRawCode(t *testing.T) {
	t.Parallel()

	code := "func (t *T) Get() { helper(); t.other() }"
	tests := []struct {
		name string
		refs []SuppliedReference
		want []Reference
	}{
		{name: "AbsentReadsRawCode", refs: nil, want: []Reference{{Name: "(.T).other", Type: Calls}, {Name: "helper", Type: Calls}}},
		{name: "EmptyMeansNone", refs: []SuppliedReference{}, want: nil},
		{name: "SortedAndDeduplicated", refs: []SuppliedReference{
			{Type: Extends, TargetID: "b7"}, {Type: Calls, Symbol: "m/pkg.helper"}, {Type: Calls, Symbol: "m/pkg.helper"}, {Type: Calls, TargetID: "c1"},
		}, want: []Reference{{Name: "id:c1", Type: Calls}, {Name: "sym:m/pkg.helper", Type: Calls}, {Name: "id:b7", Type: Extends}}},
		{name: "NameIsALexicalName", refs: []SuppliedReference{{Type: Calls, Symbol: "m/pkg.helper"}, {Type: Calls, RefName: "validate"}},
			want: []Reference{{Name: "sym:m/pkg.helper", Type: Calls}, {Name: "validate", Type: Calls}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := POI{ID: "a1", Type: TypeMethod, Name: "Get", FilePath: "pkg/x.go", RawCode: code, References: tt.refs}
			got, err := Extract(context.Background(), p)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLookup_SuppliedReferences(t *testing.T) {
	t.Parallel()

	sym := func(id, file, symbol, typ string) Candidate {
		return Candidate{POIID: id, FileID: file, Name: SymbolPrefix + symbol, Type: typ}
	}
	tests := []struct {
		name    string
		source  string
		ref     Reference
		cands   []Candidate
		want    string
		outcome Outcome
	}{
		{name: "SymbolInAnotherFile", source: "a/x.go", ref: Reference{Name: "sym:m/b.F", Type: Calls},
			cands: []Candidate{sym("f", "b/y.go", "m/b.F", TypeFunction)}, want: "f", outcome: Resolved},
		{name: "GoQualifierRulesDoNotApply", source: "a/x.go", ref: Reference{Name: "sym:m/b.(*T).M", Type: Calls},
			cands: []Candidate{sym("m", "b/y.go", "m/b.(*T).M", TypeMethod)}, want: "m", outcome: Resolved},
		{name: "TypeMustAccept", source: "a/x.py", ref: Reference{Name: "sym:m.C", Type: Calls},
			cands: []Candidate{sym("c", "b.py", "m.C", TypeClass)}, outcome: Unknown},
		{name: "NoSelfEdge", source: "a.go", ref: Reference{Name: "id:s", Type: Calls},
			cands: []Candidate{{POIID: "s", FileID: "a.go", Name: "id:s", Type: TypeFunction}}, outcome: Unknown},
		{name: "ByID", source: "a.ts", ref: Reference{Name: "id:b7", Type: Extends},
			cands: []Candidate{{POIID: "b7", FileID: "b.ts", Name: "id:b7", Type: TypeClass}}, want: "b7", outcome: Resolved},
		{name: "SameSymbolTwiceIsAmbiguous", source: "a.go", ref: Reference{Name: "sym:m.F", Type: Calls},
			cands: []Candidate{sym("f1", "b.go", "m.F", TypeFunction), sym("f2", "c.go", "m.F", TypeFunction)}, outcome: Ambiguous},
		{name: "PlainNameDoesNotMatch", source: "a.go", ref: Reference{Name: "sym:F", Type: Calls},
			cands: []Candidate{{POIID: "f", FileID: "a.go", Name: "F", Type: TypeFunction}}, outcome: Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.ref.Name, TargetName(tt.ref))
			require.Equal(t, tt.ref.Name, ReferenceKey(tt.ref.Name))
			got, outcome := Lookup("s", tt.source, tt.ref, tt.cands)
			require.Equal(t, tt.outcome, outcome)
			require.Equal(t, tt.want, got)
		})
	}
}
