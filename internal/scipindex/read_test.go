package scipindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/scip-code/scip/bindings/go/scip"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/relay-dev/relay/resolver"
)

// Hand-built indexes: each occurrence as an indexer writes it.

const pySrc = `from pkg.base import Base


class C(Base):
    def __init__(self, dep):
        super().__init__()
        self.dep = dep

    def run(self,
            x=None):
        self.dep.untyped_call(x).get(x)
        return helper(x)


def helper(x):
    def inner(y):
        return y
    return inner(C(x))


def doc():
    """A docstring is no import statement:
    from nowhere import thing
    """
`

const tsSrc = `import { Base, Named } from "./base";

export interface Shape extends Named {
  area(): number;
}

export type Id = string;

export class Sq extends Base implements Shape {
  onClick = () => this.area();
  area(): number {
    return twice(2);
  }
}

export function twice(n: number): number;
export function twice(n: any): any {
  function half(v) { return v / 2 }
  return half(n) * 4 + unknownThing(n);
}
`

func sym(s string) string  { return "scip-python python pkg 1.0 " + s }
func tsym(s string) string { return "scip-typescript npm pkg 1.0 " + s }

const isDef = int32(scip.SymbolRole_Definition)

func mkOcc(symbol string, roles int32, r []int32, enc ...int32) *scip.Occurrence {
	return &scip.Occurrence{Symbol: symbol, SymbolRoles: roles, Range: r, EnclosingRange: enc}
}

func pyDoc() *scip.Document {
	return &scip.Document{RelativePath: "pkg/c.py", Symbols: []*scip.SymbolInformation{
		{Symbol: sym("`pkg.c`/C#"), Relationships: []*scip.Relationship{{Symbol: sym("`pkg.base`/Base#"), IsImplementation: true}}},
	}, Occurrences: []*scip.Occurrence{
		mkOcc(sym("`pkg.c`/__init__:"), isDef, []int32{0, 0, 0}),
		mkOcc(sym("`pkg.base`/__init__:"), 8, []int32{0, 5, 13}),
		mkOcc(sym("`pkg.base`/Base#"), 8, []int32{0, 21, 25}),
		mkOcc(sym("`pkg.c`/C#"), isDef, []int32{3, 6, 7}, 3, 0, 11, 24),
		mkOcc(sym("`pkg.base`/Base#"), 8, []int32{3, 8, 12}),
		mkOcc(sym("`pkg.c`/C#__init__()."), isDef, []int32{4, 8, 16}, 4, 4, 6, 22),
		mkOcc(sym("`pkg.c`/C#__init__().(dep)"), isDef, []int32{4, 23, 26}),
		mkOcc("scip-python python python-stdlib 3.11 builtins/super#", 8, []int32{5, 8, 13}),
		mkOcc(sym("`pkg.base`/Base#__init__()."), 8, []int32{5, 16, 24}),
		mkOcc(sym("`pkg.c`/C#dep."), isDef, []int32{6, 13, 16}),
		mkOcc(sym("`pkg.c`/C#run()."), isDef, []int32{8, 8, 11}, 8, 4, 11, 24),
		mkOcc(sym("`pkg.c`/C#dep."), 8, []int32{10, 13, 16}),
		// untyped_call: nothing (the index cannot tell dep's type)
		mkOcc(sym("`pkg.c`/helper()."), 8, []int32{11, 15, 21}),
		mkOcc(sym("`pkg.c`/helper()."), isDef, []int32{14, 4, 10}, 14, 0, 17, 22),
		mkOcc(sym("`pkg.c`/helper().inner()."), isDef, []int32{15, 8, 13}), // no enclosing range
		mkOcc(sym("`pkg.c`/helper().inner()."), 8, []int32{17, 11, 16}),
		mkOcc(sym("`pkg.c`/C#"), 8, []int32{17, 17, 18}),
	}}
}

func tsDoc() *scip.Document {
	return &scip.Document{RelativePath: "src/sq.ts", Symbols: []*scip.SymbolInformation{
		{Symbol: tsym("src/`sq.ts`/Sq#"), Relationships: []*scip.Relationship{
			{Symbol: tsym("src/`base.ts`/Base#"), IsImplementation: true},
			{Symbol: tsym("src/`sq.ts`/Shape#"), IsImplementation: true},
			{Symbol: tsym("src/`base.ts`/Named#"), IsImplementation: true}, // transitive: not in the header
		}},
		{Symbol: tsym("src/`sq.ts`/Shape#"), Relationships: []*scip.Relationship{{Symbol: tsym("src/`base.ts`/Named#"), IsImplementation: true}}},
	}, Occurrences: []*scip.Occurrence{
		mkOcc(tsym("src/`base.ts`/Base#"), 0, []int32{0, 9, 13}),
		mkOcc(tsym("src/`base.ts`/Named#"), 0, []int32{0, 15, 20}),
		mkOcc(tsym("src/`sq.ts`/Shape#"), isDef, []int32{2, 17, 22}, 2, 0, 4, 1),
		mkOcc(tsym("src/`base.ts`/Named#"), 0, []int32{2, 31, 36}),
		mkOcc(tsym("src/`sq.ts`/Shape#area()."), isDef, []int32{3, 2, 6}),
		mkOcc(tsym("src/`sq.ts`/Id#"), isDef, []int32{6, 12, 14}, 6, 0, 24),
		mkOcc(tsym("src/`sq.ts`/Sq#"), isDef, []int32{8, 13, 15}, 8, 0, 13, 1),
		mkOcc(tsym("src/`base.ts`/Base#"), 0, []int32{8, 24, 28}),
		mkOcc(tsym("src/`sq.ts`/Shape#"), 0, []int32{8, 40, 45}),
		mkOcc(tsym("src/`sq.ts`/Sq#onClick."), isDef, []int32{9, 2, 9}),
		mkOcc(tsym("src/`sq.ts`/Sq#area()."), 0, []int32{9, 23, 27}),
		mkOcc(tsym("src/`sq.ts`/Sq#area()."), isDef, []int32{10, 2, 6}, 10, 2, 12, 3),
		mkOcc(tsym("src/`sq.ts`/twice()."), 0, []int32{11, 11, 16}),
		mkOcc(tsym("src/`sq.ts`/twice()."), isDef, []int32{15, 16, 21}, 15, 0, 40),
		mkOcc(tsym("src/`sq.ts`/twice()."), isDef, []int32{16, 16, 21}, 16, 0, 19, 1),
		mkOcc("local 0", isDef, []int32{17, 11, 15}),
		mkOcc("local 1", isDef, []int32{17, 16, 17}),
		mkOcc("local 1", 0, []int32{17, 28, 29}),
		mkOcc("local 0", 0, []int32{18, 9, 13}),
		// unknownThing: nothing
	}}
}

func encode(t testing.TB, docs ...*scip.Document) []byte {
	t.Helper()
	b, err := proto.Marshal(&scip.Index{Metadata: &scip.Metadata{ToolInfo: &scip.ToolInfo{Name: "hand"}}, Documents: docs})
	require.NoError(t, err)
	return b
}

var sources = fstest.MapFS{"pkg/c.py": {Data: []byte(pySrc)}, "src/sq.ts": {Data: []byte(tsSrc)},
	"src/latin1.ts": {Data: []byte("export class Sq {}\n// caf\xe9\n")}}

// poiView is what a test checks of a POI.
type poiView struct {
	ID, Type, Symbol string
	Refs             []string
}

func readAll(t *testing.T, index []byte) ([]File, map[string]poiView) {
	t.Helper()
	var files []File
	pois := map[string]poiView{}
	err := Read(context.Background(), bytes.NewReader(index), Config{Source: sources}, func(f File) error {
		files = append(files, f)
		for _, raw := range f.Analysis.POIs {
			p, err := resolver.DecodePOI(raw) // every POI is one relay accepts
			require.NoError(t, err)
			v := poiView{ID: p.ID, Type: p.Type, Symbol: p.Symbol}
			for _, r := range p.References {
				v.Refs = append(v.Refs, string(r.Type)+" "+r.Name())
			}
			pois[p.ID] = v
		}
		return nil
	})
	require.NoError(t, err)
	return files, pois
}

func TestRead_Python(t *testing.T) {
	t.Parallel()

	files, pois := readAll(t, encode(t, pyDoc()))
	require.Len(t, files, 1)
	require.Equal(t, "pkg/c.py", files[0].Analysis.FileID)
	require.Equal(t, 1, files[0].Fallbacks)
	require.Equal(t, map[string]poiView{
		"pkg/c.py:1:Base": {ID: "pkg/c.py:1:Base", Type: "import", Refs: []string{"IMPORTS sym:" + sym("`pkg.base`/Base#")}},
		"pkg/c.py:4:C": {ID: "pkg/c.py:4:C", Type: "class_declaration", Symbol: sym("`pkg.c`/C#"),
			Refs: []string{"EXTENDS sym:" + sym("`pkg.base`/Base#")}},
		"pkg/c.py:5:__init__": {ID: "pkg/c.py:5:__init__", Type: "method_definition", Symbol: sym("`pkg.c`/C#__init__()."),
			Refs: []string{"CALLS sym:" + sym("`pkg.base`/Base#__init__().")}}, // super() itself is no construction
		"pkg/c.py:9:run": {ID: "pkg/c.py:9:run", Type: "method_definition", Symbol: sym("`pkg.c`/C#run()."),
			Refs: []string{"CALLS sym:" + sym("`pkg.c`/helper()."), "CALLS untyped_call"}},
		"pkg/c.py:15:helper": {ID: "pkg/c.py:15:helper", Type: "function_definition", Symbol: sym("`pkg.c`/helper()."),
			Refs: []string{"CALLS sym:" + sym("`pkg.c`/C#__init__()."), "CALLS sym:" + sym("`pkg.c`/helper().inner().")}},
		"pkg/c.py:16:inner": {ID: "pkg/c.py:16:inner", Type: "function_definition", Symbol: sym("`pkg.c`/helper().inner().")},
	}, pois)
}

func TestRead_TypeScript(t *testing.T) {
	t.Parallel()

	files, pois := readAll(t, encode(t, tsDoc()))
	require.Len(t, files, 1)
	require.Equal(t, 1, files[0].Fallbacks) // unknownThing(
	require.Equal(t, map[string]poiView{
		"src/sq.ts:1:Base": {ID: "src/sq.ts:1:Base", Type: "import", Refs: []string{"IMPORTS sym:" + tsym("src/`base.ts`/Base#"),
			"IMPORTS sym:" + tsym("src/`base.ts`/Named#")}},
		"src/sq.ts:3:Shape": {ID: "src/sq.ts:3:Shape", Type: "interface_declaration", Symbol: tsym("src/`sq.ts`/Shape#"),
			Refs: []string{"EXTENDS sym:" + tsym("src/`base.ts`/Named#")}},
		"src/sq.ts:4:area": {ID: "src/sq.ts:4:area", Type: "method_definition", Symbol: tsym("src/`sq.ts`/Shape#area().")},
		// Id, a type alias, is no POI.
		"src/sq.ts:9:Sq": {ID: "src/sq.ts:9:Sq", Type: "class_declaration", Symbol: tsym("src/`sq.ts`/Sq#"),
			Refs: []string{"EXTENDS sym:" + tsym("src/`base.ts`/Base#"), "IMPLEMENTS sym:" + tsym("src/`sq.ts`/Shape#")}},
		"src/sq.ts:10:onClick": {ID: "src/sq.ts:10:onClick", Type: "method_definition", Symbol: tsym("src/`sq.ts`/Sq#onClick."),
			Refs: []string{"CALLS sym:" + tsym("src/`sq.ts`/Sq#area().")}},
		"src/sq.ts:11:area": {ID: "src/sq.ts:11:area", Type: "method_definition", Symbol: tsym("src/`sq.ts`/Sq#area()."),
			Refs: []string{"CALLS sym:" + tsym("src/`sq.ts`/twice().")}},
		// The overload signature and the implementation are one POI, the implementation.
		"src/sq.ts:17:twice": {ID: "src/sq.ts:17:twice", Type: "function_definition", Symbol: tsym("src/`sq.ts`/twice()."),
			Refs: []string{"CALLS sym:local:src/sq.ts:0", "CALLS unknownThing"}},
		"src/sq.ts:18:half": {ID: "src/sq.ts:18:half", Type: "function_definition", Symbol: "local:src/sq.ts:0"},
	}, pois)
}

func TestRead_OneDocumentAtATimeInIndexOrder(t *testing.T) {
	t.Parallel()

	files, _ := readAll(t, encode(t, tsDoc(), pyDoc()))
	require.Len(t, files, 2)
	require.Equal(t, "src/sq.ts", files[0].Analysis.FileID)
	require.Equal(t, "pkg/c.py", files[1].Analysis.FileID)
	require.Equal(t, len(tsDoc().Occurrences), files[0].Occurrences)
	var a struct {
		FileID string            `json:"fileId"`
		POIs   []json.RawMessage `json:"pois"`
	}
	raw, err := json.Marshal(files[1].Analysis)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &a))
	require.Len(t, a.POIs, files[1].POIs)
}

func TestRead_MalformedIndexNamesTheDocumentAndOccurrence(t *testing.T) {
	t.Parallel()

	good := encode(t, pyDoc(), tsDoc())
	mutate := func(f func(d *scip.Document)) []byte {
		d := tsDoc()
		f(d)
		return encode(t, pyDoc(), d)
	}
	tests := []struct {
		name  string
		index []byte
		want  string
	}{
		{name: "Truncated", index: good[:len(good)-10],
			want: fmt53("scip index: document #2: the index is truncated: a ", "-byte field where ")},
		{name: "NotAnIndex", index: []byte("hello, world"), want: "scip index: document #1: not a SCIP index: field 13 of wire type 0 where metadata, documents or external symbols are (at byte 1 of 12)"},
		{name: "RangeOfTwo", index: mutate(func(d *scip.Document) { d.Occurrences[4].Range = []int32{3, 2} }),
			want: `scip index: document #2 "src/sq.ts", occurrence #5 (line 4): range [3 2] has 2 elements, not 3 or 4`},
		{name: "LinePastTheSource", index: mutate(func(d *scip.Document) { d.Occurrences[4].Range = []int32{300, 2, 6} }),
			want: `scip index: document #2 "src/sq.ts", occurrence #5 (line 301): range [300 2 6]: line 301 is outside the source's 21 lines`},
		{name: "ColumnPastTheLine", index: mutate(func(d *scip.Document) { d.Occurrences[4].Range = []int32{3, 2, 90} }),
			want: `scip index: document #2 "src/sq.ts", occurrence #5 (line 4): range [3 2 90]: column 90 is past the end of line 4`},
		{name: "EndsBeforeItStarts", index: mutate(func(d *scip.Document) { d.Occurrences[4].Range = []int32{3, 6, 2} }),
			want: `scip index: document #2 "src/sq.ts", occurrence #5 (line 4): range [3 6 2] ends before it starts`},
		{name: "BadEnclosingRange", index: mutate(func(d *scip.Document) { d.Occurrences[2].EnclosingRange = []int32{2, 0, 99, 1} }),
			want: `scip index: document #2 "src/sq.ts", occurrence #3 (line 3): enclosing_range: range [2 0 99 1]: line 100 is outside the source's 21 lines`},
		{name: "EmptySymbol", index: mutate(func(d *scip.Document) { d.Occurrences[1].Symbol = "" }),
			want: `scip index: document #2 "src/sq.ts", occurrence #2 (line 1): symbol is empty`},
		{name: "MalformedSymbol", index: mutate(func(d *scip.Document) { d.Occurrences[1].Symbol = "scip-typescript npm" }),
			want: `scip index: document #2 "src/sq.ts", occurrence #2 (line 1): symbol "scip-typescript npm": `},
		{name: "PathOutsideTheProject", index: mutate(func(d *scip.Document) { d.RelativePath = "../etc/passwd" }),
			want: `scip index: document #2 "../etc/passwd": relative_path "../etc/passwd" is not a clean relative path inside the project`},
		{name: "SourceNotUTF8", index: mutate(func(d *scip.Document) { d.RelativePath = "src/latin1.ts" }),
			want: `scip index: document #2 "src/latin1.ts": its source is not valid UTF-8 (line 2)`},
		{name: "SourceMissing", index: mutate(func(d *scip.Document) { d.RelativePath = "src/gone.ts" }),
			want: `scip index: document #2 "src/gone.ts": cannot read its source: open src/gone.ts: file does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var got []string
			err := Read(context.Background(), bytes.NewReader(tt.index), Config{Source: sources}, func(f File) error {
				got = append(got, f.Analysis.FileID)
				return nil
			})
			var ierr *Error
			require.ErrorAs(t, err, &ierr)
			require.Contains(t, err.Error(), tt.want)
			// Framing errors come before any document; a bad document is
			// never handed over, only those before it.
			if tt.name == "Truncated" || tt.name == "NotAnIndex" {
				require.Empty(t, got)
			} else {
				require.Equal(t, []string{"pkg/c.py"}, got)
			}
			n := 0 // a whole read that only counts, as relay analyze's check pass
			err = Read(context.Background(), bytes.NewReader(tt.index), Config{Source: sources}, func(File) error { n++; return nil })
			require.ErrorAs(t, err, &ierr)
			require.Equal(t, 1, n-boolInt(tt.name == "Truncated" || tt.name == "NotAnIndex"))
		})
	}
}

// fmt53 is the part of a message that does not depend on the index's size.
func fmt53(a, _ string) string { return a }

func boolInt(b bool) int {
	if b {
		return -1
	}
	return 0
}

func TestRead_FnErrorStopsAndIsReturned(t *testing.T) {
	t.Parallel()

	stop := errors.New("stop")
	calls := 0
	err := Read(context.Background(), bytes.NewReader(encode(t, pyDoc(), tsDoc())), Config{Source: sources}, func(File) error {
		calls++
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, calls)
}

// readOne reads an index of one document over its own source.
func readOne(t *testing.T, path, src string, doc *scip.Document) map[string]poiView {
	t.Helper()
	doc.RelativePath = path
	pois := map[string]poiView{}
	err := Read(context.Background(), bytes.NewReader(encode(t, doc)), Config{Source: fstest.MapFS{path: {Data: []byte(src)}}}, func(f File) error {
		for _, raw := range f.Analysis.POIs {
			p, err := resolver.DecodePOI(raw)
			require.NoError(t, err)
			v := poiView{ID: p.ID, Type: p.Type, Symbol: p.Symbol}
			for _, r := range p.References {
				v.Refs = append(v.Refs, string(r.Type)+" "+r.Name())
			}
			pois[p.ID] = v
		}
		return nil
	})
	require.NoError(t, err)
	return pois
}

// TestRead_Lexical: what relay reads of a document's text around the
// index's occurrences, on inputs a review found wrong.
func TestRead_Lexical(t *testing.T) {
	t.Parallel()

	const classFoo = "class Foo(Base):\n    pass\n"
	fooDef := func() *scip.Occurrence { return mkOcc(sym("`m`/Foo#"), isDef, []int32{0, 6, 9}, 0, 0, 1, 8) }
	foo := poiView{ID: "m.py:1:Foo", Type: "class_declaration", Symbol: sym("`m`/Foo#")}
	tests := []struct {
		name, path, src string
		occs            []*scip.Occurrence
		want            map[string]poiView
	}{
		{name: "TypeReferenceEmptyAtTheClassName", path: "m.py", src: classFoo,
			occs: []*scip.Occurrence{fooDef(), mkOcc(sym("`m`/Base#"), 0, []int32{0, 6, 6})},
			want: map[string]poiView{foo.ID: foo}},
		{name: "TypeReferenceOnTheClassName", path: "m.py", src: classFoo,
			occs: []*scip.Occurrence{fooDef(), mkOcc(sym("`m`/Base#"), 0, []int32{0, 6, 9})},
			want: map[string]poiView{foo.ID: foo}},
		{name: "TypeReferenceInsideTheClassName", path: "m.py", src: classFoo,
			occs: []*scip.Occurrence{fooDef(), mkOcc(sym("`m`/Base#"), 0, []int32{0, 7, 8})},
			want: map[string]poiView{foo.ID: foo}},
		{name: "TypeReferenceAfterTheClassName", path: "m.py", src: classFoo,
			occs: []*scip.Occurrence{fooDef(), mkOcc(sym("`m`/Base#"), 0, []int32{0, 10, 14})},
			want: map[string]poiView{foo.ID: {ID: foo.ID, Type: foo.Type, Symbol: foo.Symbol, Refs: []string{"EXTENDS sym:" + sym("`m`/Base#")}}}},
		{name: "ImportLineInADocstring", path: "m.py",
			src: "def f():\n    \"\"\"Read the config.\n\n    import doesn't happen here.\n    \"\"\"\n    g()\n    return h()\ndef g(): return 'x'\ndef h(): ...\n",
			occs: []*scip.Occurrence{
				mkOcc(sym("`m`/f()."), isDef, []int32{0, 4, 5}, 0, 0, 6, 14),
				mkOcc(sym("`m`/g()."), 0, []int32{5, 4, 5}),
				mkOcc(sym("`m`/h()."), 0, []int32{6, 11, 12}),
				mkOcc(sym("`m`/g()."), isDef, []int32{7, 4, 5}, 7, 0, 19),
				mkOcc(sym("`m`/h()."), isDef, []int32{8, 4, 5}, 8, 0, 12),
			},
			want: map[string]poiView{
				"m.py:1:f": {ID: "m.py:1:f", Type: "function_definition", Symbol: sym("`m`/f()."), Refs: []string{"CALLS sym:" + sym("`m`/g()."), "CALLS sym:" + sym("`m`/h().")}},
				"m.py:8:g": {ID: "m.py:8:g", Type: "function_definition", Symbol: sym("`m`/g().")},
				"m.py:9:h": {ID: "m.py:9:h", Type: "function_definition", Symbol: sym("`m`/h().")},
			}},
		{name: "ImportLineInAStringWithAnApostrophe", path: "m.py",
			src: "def f():\n    s = 'a'\n    return g()\nimport x, y  # it's x\ndef g(): return 'x'\n",
			occs: []*scip.Occurrence{
				mkOcc(sym("`m`/f()."), isDef, []int32{0, 4, 5}, 0, 0, 2, 14),
				mkOcc(sym("`m`/g()."), 0, []int32{2, 11, 12}),
				mkOcc(sym("`x`/__init__:"), 0, []int32{3, 7, 8}),
				mkOcc(sym("`y`/__init__:"), 0, []int32{3, 10, 11}),
				mkOcc(sym("`m`/g()."), isDef, []int32{4, 4, 5}, 4, 0, 19),
			},
			want: map[string]poiView{
				"m.py:1:f": {ID: "m.py:1:f", Type: "function_definition", Symbol: sym("`m`/f()."), Refs: []string{"CALLS sym:" + sym("`m`/g().")}},
				"m.py:4:y": {ID: "m.py:4:y", Type: "import"},
				"m.py:5:g": {ID: "m.py:5:g", Type: "function_definition", Symbol: sym("`m`/g().")},
			}},
		{name: "ImportLineInATemplateLiteral", path: "m.ts",
			src: "function f() {\n  const s = `\nimport isn't here\n`;\n  return g();\n}\nfunction g() { return 1 }\n",
			occs: []*scip.Occurrence{
				mkOcc(tsym("`m.ts`/f()."), isDef, []int32{0, 9, 10}, 0, 0, 5, 1),
				mkOcc(tsym("`m.ts`/g()."), 0, []int32{4, 9, 10}),
				mkOcc(tsym("`m.ts`/g()."), isDef, []int32{6, 9, 10}, 6, 0, 25),
			},
			want: map[string]poiView{
				"m.ts:1:f": {ID: "m.ts:1:f", Type: "function_definition", Symbol: tsym("`m.ts`/f()."), Refs: []string{"CALLS sym:" + tsym("`m.ts`/g().")}},
				"m.ts:7:g": {ID: "m.ts:7:g", Type: "function_definition", Symbol: tsym("`m.ts`/g().")},
			}},
		// A method calling its own name on another object forwards to it
		// (a dispatcher): not left to the lexical rule, which would take
		// the file's other create, D2's. g(r) is.
		{name: "DelegationNotLeftToTheLexicalRule", path: "m.py",
			src: "class D:\n    def create(self, r):\n        return self.h(r).create(r) or g(r)\nclass D2:\n    def create(self, r): ...\n",
			occs: []*scip.Occurrence{
				mkOcc(sym("`m`/D#"), isDef, []int32{0, 6, 7}, 0, 0, 2, 42),
				mkOcc(sym("`m`/D#create()."), isDef, []int32{1, 8, 14}, 1, 4, 2, 42),
				mkOcc(sym("`m`/D#h()."), 0, []int32{2, 20, 21}),
				mkOcc(sym("`m`/D2#"), isDef, []int32{3, 6, 8}, 3, 0, 4, 28),
				mkOcc(sym("`m`/D2#create()."), isDef, []int32{4, 8, 14}, 4, 4, 28),
			},
			want: map[string]poiView{
				"m.py:1:D":      {ID: "m.py:1:D", Type: "class_declaration", Symbol: sym("`m`/D#")},
				"m.py:2:create": {ID: "m.py:2:create", Type: "method_definition", Symbol: sym("`m`/D#create()."), Refs: []string{"CALLS g", "CALLS sym:" + sym("`m`/D#h().")}},
				"m.py:4:D2":     {ID: "m.py:4:D2", Type: "class_declaration", Symbol: sym("`m`/D2#")},
				"m.py:5:create": {ID: "m.py:5:create", Type: "method_definition", Symbol: sym("`m`/D2#create().")},
			}},
		{name: "ImportLineInABlockComment", path: "m.ts",
			src: "/*\nimport isn't here\n*/\nfunction f() {\n  return g();\n}\nfunction g() { return 1 }\n",
			occs: []*scip.Occurrence{
				mkOcc(tsym("`m.ts`/f()."), isDef, []int32{3, 9, 10}, 3, 0, 5, 1),
				mkOcc(tsym("`m.ts`/g()."), 0, []int32{4, 9, 10}),
				mkOcc(tsym("`m.ts`/g()."), isDef, []int32{6, 9, 10}, 6, 0, 25),
			},
			want: map[string]poiView{
				"m.ts:4:f": {ID: "m.ts:4:f", Type: "function_definition", Symbol: tsym("`m.ts`/f()."), Refs: []string{"CALLS sym:" + tsym("`m.ts`/g().")}},
				"m.ts:7:g": {ID: "m.ts:7:g", Type: "function_definition", Symbol: tsym("`m.ts`/g().")},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, readOne(t, tt.path, tt.src, &scip.Document{Occurrences: tt.occs}))
		})
	}
}

// TestRead_RangeInsideACharacter: a range that starts or ends inside a
// character (a UTF-8 sequence, a UTF-16 surrogate pair) is an error
// naming it, not a piece of text cut mid-character (review).
func TestRead_RangeInsideACharacter(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		enc  scip.PositionEncoding
		src  string
		r    []int32
		want string // "" for no error
	}{
		{name: "UTF8Start", enc: scip.PositionEncoding_UTF8CodeUnitOffsetFromLineStart, src: "s = \"é\"\n", r: []int32{0, 6, 7},
			want: `occurrence #1 (line 1): range [0 6 7]: column 6 is inside a character of line 1`},
		{name: "UTF8End", enc: scip.PositionEncoding_UTF8CodeUnitOffsetFromLineStart, src: "s = \"é\"\n", r: []int32{0, 4, 6},
			want: `occurrence #1 (line 1): range [0 4 6]: column 6 is inside a character of line 1`},
		{name: "UTF8Whole", enc: scip.PositionEncoding_UTF8CodeUnitOffsetFromLineStart, src: "s = \"é\"\n", r: []int32{0, 5, 7}},
		{name: "UTF16InsideASurrogatePair", enc: scip.PositionEncoding_UTF16CodeUnitOffsetFromLineStart, src: "s = \"😀\"\n", r: []int32{0, 6, 7},
			want: `occurrence #1 (line 1): range [0 6 7]: column 6 is inside a character of line 1`},
		{name: "UTF16Whole", enc: scip.PositionEncoding_UTF16CodeUnitOffsetFromLineStart, src: "s = \"😀\"\n", r: []int32{0, 5, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			doc := &scip.Document{RelativePath: "m.py", PositionEncoding: tt.enc, Occurrences: []*scip.Occurrence{mkOcc(sym("`m`/s."), 0, tt.r)}}
			err := Read(context.Background(), bytes.NewReader(encode(t, doc)), Config{Source: fstest.MapFS{"m.py": {Data: []byte(tt.src)}}},
				func(File) error { return nil })
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			var ierr *Error
			require.ErrorAs(t, err, &ierr)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRead_ModulePOIsHoldTheTopLevelCalls(t *testing.T) {
	t.Parallel()

	src := "import os\nfrom pkg.c import helper\n\n\ndef f():\n    return g()\n\n\ndef g():\n    pass\n\n\nf()\nhelper(1)\nunknown(2)\n"
	doc := &scip.Document{RelativePath: "pkg/m.py", Occurrences: []*scip.Occurrence{
		mkOcc(sym("`pkg.m`/__init__:"), isDef, []int32{0, 0, 0}),
		mkOcc("scip-python python python-stdlib 3.11 os/__init__:", 8, []int32{0, 7, 9}),
		mkOcc(sym("`pkg.c`/__init__:"), 8, []int32{1, 5, 10}),
		mkOcc(sym("`pkg.c`/helper()."), 8, []int32{1, 18, 24}),
		mkOcc(sym("`pkg.m`/f()."), isDef, []int32{4, 4, 5}, 4, 0, 5, 14),
		mkOcc(sym("`pkg.m`/g()."), 8, []int32{5, 11, 12}),
		mkOcc(sym("`pkg.m`/g()."), isDef, []int32{8, 4, 5}, 8, 0, 9, 8),
		mkOcc(sym("`pkg.m`/f()."), 8, []int32{12, 0, 1}),
		mkOcc(sym("`pkg.c`/helper()."), 8, []int32{13, 0, 6}),
		// unknown: nothing
	}}
	for _, modules := range []bool{false, true} {
		var files []File
		pois := map[string]resolver.POI{}
		err := Read(context.Background(), bytes.NewReader(encode(t, doc)), Config{Source: fstest.MapFS{"pkg/m.py": {Data: []byte(src)}},
			ModulePOIs: modules}, func(f File) error {
			files = append(files, f)
			for _, raw := range f.Analysis.POIs {
				p, err := resolver.DecodePOI(raw)
				require.NoError(t, err)
				pois[p.ID] = p
			}
			return nil
		})
		require.NoError(t, err)
		require.Len(t, files, 1)
		ids := slices.Sorted(maps.Keys(pois))
		if !modules {
			require.Equal(t, []string{"pkg/m.py:1:os", "pkg/m.py:2:helper", "pkg/m.py:5:f", "pkg/m.py:9:g"}, ids)
			require.Zero(t, files[0].Fallbacks, "top-level calls belong to no POI")
			continue
		}
		require.Equal(t, []string{"pkg/m.py:1:", "pkg/m.py:1:os", "pkg/m.py:2:helper", "pkg/m.py:5:f", "pkg/m.py:9:g"}, ids)
		require.Equal(t, 1, files[0].Fallbacks) // unknown(
		m := pois["pkg/m.py:1:"]
		require.Equal(t, resolver.POI{ID: "pkg/m.py:1:", Type: resolver.TypeFunction, Name: "__module__", FilePath: "pkg/m.py",
			LineNumber: 1, RawCode: "         \n                        \n\n\n        \n              \n\n\n        \n        \n\n\nf()\nhelper(1)\nunknown(2)\n",
			References: []resolver.SuppliedReference{
				{Type: resolver.Calls, Symbol: sym("`pkg.c`/helper().")},
				{Type: resolver.Calls, Symbol: sym("`pkg.m`/f().")},
				{Type: resolver.Calls, RefName: "unknown"},
			}}, m)
		require.Equal(t, []resolver.SuppliedReference{{Type: resolver.Calls, Symbol: sym("`pkg.m`/g().")}}, pois["pkg/m.py:5:f"].References)
	}
}
