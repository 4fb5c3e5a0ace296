package resolver

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefinitionExtent(t *testing.T) {
	t.Parallel()

	// Each src marks the name with «, the body's start with ^ (when it
	// differs from the end) and the end with ».
	tests := []struct {
		name, file, src string
	}{
		{name: "PythonDef", file: "m.py", src: "x = 1\ndef «f(a,\n      b):^\n    return g(\n  a)\n\n    # tail\n    h()»\n\ndef k():\n    pass\n"},
		{name: "PythonOneLineBody", file: "m.py", src: "class C:\n    def «f(self):^ return g()»\n    def k(self): pass\n"},
		{name: "PythonDocstringAtColumnZero", file: "m.py", src: "def «f():^\n    '''doc\nat column 0\n'''\n    return 1»\nx = f()\n"},
		{name: "PythonClassToEOF", file: "m.py", src: "class «C(Base, metaclass=M):^\n    x = 1\n    def m(self):\n        pass»"},
		{name: "JSFunction", file: "a.ts", src: "function «inner(z: number): { a: number } {^\n  if (x) { return '}' }\n  return /}/.test(s)\n}»\nnext()"},
		{name: "JSArrowExpression", file: "a.ts", src: "class A {\n  «onClick = (e: E) => this.area(e, [1, 2])»;\n  b() {}\n}"},
		{name: "JSArrowNoSemicolon", file: "a.js", src: "const «twice = v =>\n  inner(v)\n    .map(f)»\nconst y = 2\n"},
		{name: "JSArrowBlock", file: "a.js", src: "const «f = async (a) => {^\n  await g(a)\n}»;\n"},
		{name: "JSSignatureWithoutBody", file: "a.ts", src: "abstract class S {\n  abstract «area(): number»\n  name() {}\n}"},
		{name: "TSTypeParametersWithCommas", file: "a.ts", src: "export interface «D<\n  A extends string,\n  B extends X<string>[] = X<string>[],\n> extends Base {^\n  a: A;\n}»\n"},
		{name: "JSOverload", file: "a.ts", src: "export function «f(a: string): void»;\nexport function f(a: any) {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			nameAt := strings.Index(tt.src, "«")
			src := strings.Replace(tt.src, "«", "", 1)
			body := strings.Index(src, "^")
			if body >= 0 {
				src = strings.Replace(src, "^", "", 1)
			}
			end := strings.Index(src, "»")
			src = strings.Replace(src, "»", "", 1)
			if body < 0 {
				body = end
			}
			got, err := DefinitionExtent(context.Background(), tt.file, src, nameAt)
			require.NoError(t, err)
			require.Equal(t, Extent{BodyStart: body, End: end}, got, "extent %q", src[nameAt:got.End])
		})
	}
}

func TestDefinitionExtent_OutsideSourceIsAnError(t *testing.T) {
	t.Parallel()

	_, err := DefinitionExtent(context.Background(), "m.py", "def f(): pass", 14)
	require.EqualError(t, err, `error reading the extent of the definition at byte 14 of "m.py": outside its 13 bytes`)
}

func TestCallSites(t *testing.T) {
	t.Parallel()

	p := POI{ID: "c", Type: TypeClass, Name: "C", FilePath: "m.py", RawCode: "class C(Base):\n    x = make(1)\n" +
		"    def m(self,\n          a=first()):\n        inside()\n    y = self.load(make())\n"}
	got, err := CallSites(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, []CallSite{{Name: "make", Line: 1, Column: 8}, {Name: "first", Line: 3, Column: 12},
		{Name: "load", Line: 5, Column: 13}, {Name: "make", Line: 5, Column: 18}}, got)

	js := POI{ID: "f", Type: TypeFunction, Name: "f", FilePath: "a.js", RawCode: "function f() {\n  if (/[(]/.test(s)) g()\n  return h(x) / k(y)\n}"}
	got, err = CallSites(context.Background(), js)
	require.NoError(t, err)
	require.Equal(t, []CallSite{{Name: "test", Line: 1, Column: 12}, {Name: "g", Line: 1, Column: 21},
		{Name: "h", Line: 2, Column: 9}, {Name: "k", Line: 2, Column: 16}}, got)

	none, err := CallSites(context.Background(), POI{ID: "v", Type: TypeVariable, Name: "v", FilePath: "a.js", RawCode: "v = f()"})
	require.NoError(t, err)
	require.Empty(t, none)
}
