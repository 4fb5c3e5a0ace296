package resolver

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// refs builds the references of one type, in the order given.
func refs(rt RelType, names ...string) []Reference {
	out := make([]Reference, 0, len(names))
	for _, n := range names {
		out = append(out, Reference{Name: n, Type: rt})
	}
	return out
}

// poiOf builds a POI of type typ for Extract.
func poiOf(typ, name, code string) POI {
	return POI{ID: "p1", Type: typ, Name: name, FilePath: "src/x", LineNumber: 1, RawCode: code}
}

func TestExtract_Calls(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		poi  POI
		want []Reference
	}{
		{
			name: "JSCallsInBody",
			poi:  poiOf(TypeFunction, "total", "function total(items) {\n  const s = sum(items);\n  log.info(s);\n  return format(s)\n}"),
			want: refs(Calls, "format", "info", "sum"),
		},
		{
			name: "StringsIgnoredWithEscapes",
			poi:  poiOf(TypeFunction, "f", "function f() {\n  const a = 'it\\'s add(';\n  const b = \"say \\\"sub(\\\" now\";\n  real();\n}"),
			want: refs(Calls, "real"),
		},
		{
			name: "BlockCommentIgnored",
			poi:  poiOf(TypeFunction, "f", "function f() { /* add(\n mul( */ real() }"),
			want: refs(Calls, "real"),
		},
		{
			name: "LineCommentsIgnored",
			poi:  poiOf(TypeFunction, "f", "function f() {\n  // add(1)\n  real() // mul(2)\n}"),
			want: refs(Calls, "real"),
		},
		{
			name: "PythonHashCommentIgnored",
			poi:  poiOf(TypeFunction, "f", "def f():\n    # add(1)\n    return real()  # mul(2)\n"),
			want: refs(Calls, "real"),
		},
		{
			name: "TemplateLiteralIgnored",
			poi:  poiOf(TypeFunction, "f", "function f() {\n  const s = `add(${mul(1)}) \\` sub(`;\n  real(s)\n}"),
			want: refs(Calls, "real"),
		},
		{
			name: "PythonTripleQuotedIgnored",
			poi:  poiOf(TypeFunction, "f", "def f():\n    \"\"\"Calls add(1).\n    It's \"sub(\" too.\"\"\"\n    s = '''mul(\n    '''\n    return real(s)\n"),
			want: refs(Calls, "real"),
		},
		{
			name: "UnterminatedStringEndsAtLineBreak",
			poi:  poiOf(TypeFunction, "f", "function f() {\n  x = \"oops add(\n  real()\n}"),
			want: refs(Calls, "real"),
		},
		{
			name: "HeaderJSFunction",
			poi:  poiOf(TypeFunction, "add", "function add(a, b) {\n  return a + b\n}"),
		},
		{
			name: "HeaderPythonDef",
			poi:  poiOf(TypeFunction, "add", "def add(a, b):\n    return a + b\n"),
		},
		{
			name: "HeaderGoFunc",
			poi:  poiOf(TypeFunction, "add", "func add(a, b int) int {\n\treturn a + b\n}"),
		},
		{
			name: "HeaderGoMethodWithReceiver",
			poi:  poiOf(TypeMethod, "Add", "func (c *Calc) Add(a int) int {\n\treturn c.norm(a)\n}"),
			want: refs(Calls, "norm"),
		},
		{
			name: "HeaderJSMethod",
			poi:  poiOf(TypeMethod, "add", "add(a, b) {\n  return this.sum(a, b)\n}"),
			want: refs(Calls, "sum"),
		},
		{
			name: "HeaderAsyncFunctionAwaitCall",
			poi:  poiOf(TypeFunction, "add", "async function add(a) {\n  await save(a)\n}"),
			want: refs(Calls, "save"),
		},
		{
			name: "HeaderJavaMethod",
			poi:  poiOf(TypeMethod, "add", "@Override\npublic int add(int a) throws IOException {\n  return helper(a);\n}"),
			want: refs(Calls, "helper"),
		},
		{
			name: "HeaderArrowFunction",
			poi:  poiOf(TypeFunction, "add", "const add = (a, b) => sum(a, b)"),
			want: refs(Calls, "sum"),
		},
		{
			name: "HeaderTypeScriptReturnType",
			poi:  poiOf(TypeFunction, "add", "export function add<T>(a: number, b = zero()): number {\n  return a + b\n}"),
			want: refs(Calls, "zero"),
		},
		{
			name: "HeaderMultiLineParameters",
			poi:  poiOf(TypeFunction, "add", "function add(\n  a,\n  b,\n) {\n  return a + b\n}"),
		},
		{
			name: "RecursiveCallInBodyIsReturned",
			poi:  poiOf(TypeFunction, "fib", "@cache\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"),
			want: refs(Calls, "fib"),
		},
		{
			name: "QualifiedNameMatchesHeader",
			poi:  poiOf(TypeMethod, "Calc.add", "add(a) { return this.add2(a) }"),
			want: refs(Calls, "add2"),
		},
		{
			name: "MemberCallsCountByLastName",
			poi:  poiOf(TypeFunction, "f", "function f(obj) {\n  obj.add(1)\n  fmt.Println(x)\n  this.save()\n  a?.b.load()\n  p->run()\n  Foo::bar()\n}"),
			want: refs(Calls, "Println", "add", "bar", "load", "run", "save"),
		},
		{
			name: "MemberCallOfKeywordNameCounts",
			poi:  poiOf(TypeFunction, "f", "function f(p) {\n  return p.then(ok).catch(fail).finally(done)\n}"),
			want: refs(Calls, "catch", "finally", "then"),
		},
		{
			name: "NestedJSFunctionIsDefinition",
			poi:  poiOf(TypeFunction, "outer", "function outer() {\n  function helper() { return 1 }\n  const g = function named() {}\n  function* gen() {}\n  return 2\n}"),
		},
		{
			name: "NestedFunctionCalledLaterIsCall",
			poi:  poiOf(TypeFunction, "outer", "function outer() {\n  function helper() { return 1 }\n  return helper()\n}"),
			want: refs(Calls, "helper"),
		},
		{
			name: "NestedPythonDefAndClass",
			poi:  poiOf(TypeFunction, "outer", "def outer():\n    def inner(x):\n        return x\n    class Local(Base):\n        pass\n    return inner(1)\n"),
			want: refs(Calls, "inner"),
		},
		{
			name: "JSKeywordsAreNotCalls",
			poi: poiOf(TypeFunction, "f", "function f(x) {\n  if (x) { return g(x) }\n  for (const y of items()) {}\n  while (x) {}\n  switch (x) {}\n"+
				"  try {} catch (e) {} finally {}\n  return typeof(x) + void(0) + (x instanceof(Y))\n}"),
			want: refs(Calls, "g", "items"),
		},
		{
			name: "NewIsConstructionNotCall",
			poi:  poiOf(TypeFunction, "f", "function f() {\n  const a = new Foo(1)\n  const b = new pkg.Bar()\n  throw new Error(build(a))\n}"),
			want: refs(Calls, "build"),
		},
		{
			name: "PythonKeywordsAndPrint",
			poi: poiOf(TypeFunction, "f", "def f(x):\n    if (x):\n        print('x')\n    elif (x):\n        return not (x)\n"+
				"    with open(p) as fh:\n        assert (x)\n    for i in range(3):\n        yield (x)\n    raise ValueError(msg)\n"),
			want: refs(Calls, "ValueError", "open", "print"),
		},
		{
			name: "GoKeywordsAndStatements",
			poi: poiOf(TypeFunction, "run", "func run() error {\n\tdefer cleanup()\n\tgo worker(ctx)\n\tvar (\n\t\tx = 1\n\t)\n"+
				"\tif err := load(); err != nil {\n\t\treturn fmt.Errorf(\"error loading: %w\", err)\n\t}\n\tfor _, b := range []byte(s) {\n\t}\n\treturn nil\n}"),
			want: refs(Calls, "Errorf", "cleanup", "load", "worker"),
		},
		{
			name: "DedupAndSort",
			poi:  poiOf(TypeFunction, "f", "function f() { b(); a(); b(); x.a(); c (1) }"),
			want: refs(Calls, "a", "b", "c"),
		},
		{
			name: "UnicodeIdentifiers",
			poi:  poiOf(TypeFunction, "grüßen", "function grüßen() { return 添加(1) + $q(2) + _x(3) }"),
			want: refs(Calls, "$q", "_x", "添加"),
		},
		{
			name: "NameOnNextLineIsNotCall",
			poi:  poiOf(TypeFunction, "f", "def f():\n    x = g\n    (1, 2)\n"),
		},
		{
			name: "ClassMethodDefinitionsAreNotCalls",
			poi: poiOf(TypeClass, "Calc", "class Calc extends Base {\n  constructor() { super(); this.init() }\n  add(a, b) { return sum(a, b) }\n"+
				"  static create() { return new Calc() }\n  async load() { await fetchAll() }\n}"),
			want: append(refs(Calls, "fetchAll", "init", "sum"), refs(Extends, "Base")...),
		},
		{
			name: "ObjectLiteralMethodsAreNotCalls",
			poi:  poiOf(TypeFunction, "make", "function make() {\n  return {\n    a() { return x() },\n    b(y) { return z(y) }\n  }\n}"),
			want: refs(Calls, "x", "z"),
		},
		{
			name: "VariableTypeHasNoReferences",
			poi:  poiOf(TypeVariable, "x", "const x = compute()"),
		},
		{
			name: "UnknownTypeHasNoReferences",
			poi:  poiOf("macro_definition", "m", "m!(foo())"),
		},
		{
			name: "EmptyCode",
			poi:  poiOf(TypeFunction, "f", ""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := Extract(context.Background(), tt.poi)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestExtract_ExtendsImplements(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		poi  POI
		want []Reference
	}{
		{
			name: "JavaExtendsImplements",
			poi: poiOf(TypeClass, "Calc", "@Entity\npublic class Calc extends Base implements Adder, java.io.Serializable {\n"+
				"  public Calc() { super(); }\n  public int add(int a) { return helper(a); }\n}"),
			want: append(append(refs(Calls, "helper"), refs(Extends, "Base")...), refs(Implements, "Adder", "Serializable")...),
		},
		{
			name: "TypeScriptGenerics",
			poi:  poiOf(TypeClass, "A", "class A<T extends object> extends B<Map<T, U>> implements C<T, U>, D {}"),
			want: append(refs(Extends, "B"), refs(Implements, "C", "D")...),
		},
		{
			name: "ExportDefaultAbstractQualified",
			poi:  poiOf(TypeClass, "Foo", "export default abstract class Foo extends foo.Bar {\n}"),
			want: refs(Extends, "Bar"),
		},
		{
			name: "AnonymousClassExpression",
			poi:  poiOf(TypeClass, "Foo", "export default class extends Base {}"),
			want: refs(Extends, "Base"),
		},
		{
			name: "MixinCallIsACallNotAType",
			poi:  poiOf(TypeClass, "A", "class A extends mix(B, C) implements D {}"),
			want: append(refs(Calls, "mix"), refs(Implements, "D")...),
		},
		{
			name: "CommentsAndStringsInHeaderIgnored",
			poi:  poiOf(TypeClass, "A", "/* class Z extends Y */ class A // extends X\n  extends B {\n  s = 'implements Q'\n}"),
			want: refs(Extends, "B"),
		},
		{
			name: "OnlyFirstHeaderIsRead",
			poi:  poiOf(TypeClass, "A", "class A {\n  inner = class extends B {}\n}\nclass C extends D {}"),
		},
		{
			name: "InterfaceExtendsList",
			poi:  poiOf(TypeInterface, "A", "export interface A<T> extends B<T>, ns.C {\n  run(): void\n}"),
			want: refs(Extends, "B", "C"),
		},
		{
			name: "JavaInterfaceHasNoCalls",
			poi:  poiOf(TypeInterface, "Repo", "public interface Repo extends Base {\n  User find(String id);\n}"),
			want: refs(Extends, "Base"),
		},
		{
			name: "JavaEnumImplements",
			poi:  poiOf(TypeClass, "Color", "enum Color implements Named { RED, GREEN }"),
			want: refs(Implements, "Named"),
		},
		{
			name: "PythonBases",
			poi:  poiOf(TypeClass, "A", "@dataclass\nclass A(B, mod.C, metaclass=Meta):\n    def run(self):\n        helper()\n"),
			want: append(refs(Calls, "helper"), refs(Extends, "B", "C")...),
		},
		{
			name: "PythonObjectGenericProtocolSkipped",
			poi:  poiOf(TypeClass, "A", "class A(object, Generic[T], typing.Protocol, Base[T], *mixins, **kw):\n    pass\n"),
			want: refs(Extends, "Base"),
		},
		{
			name: "PythonNoBases",
			poi:  poiOf(TypeClass, "A", "class A:\n    x = 1\n"),
		},
		{
			name: "GoStructEmbeddedFields",
			poi: poiOf(TypeClass, "A", "// A embeds B.\ntype A struct {\n\tB\n\t*pkg.C\n\tname string\n\tD `json:\"d\"`\n"+
				"\tinner struct {\n\t\tE\n\t}\n\tList[T]\n\tf func(x int) error\n}"),
			want: refs(Extends, "B", "C", "D", "List"),
		},
		{
			name: "GoStructOneLine",
			poi:  poiOf(TypeClass, "A", "type A struct { B; *pkg.C; name string }"),
			want: refs(Extends, "B", "C"),
		},
		{
			name: "GoGenericStruct",
			poi:  poiOf(TypeClass, "A", "type A[T interface{ ~int }] struct {\n\tBase[T]\n}"),
			want: refs(Extends, "Base"),
		},
		{
			name: "GoInterfaceEmbeds",
			poi:  poiOf(TypeInterface, "R", "type R interface {\n\tio.Reader\n\tfmt.Stringer // embedded\n\tClose() error\n\t~int | ~string\n}"),
			want: refs(Extends, "Reader", "Stringer"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := Extract(context.Background(), tt.poi)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestExtract_Imports(t *testing.T) {
	t.Parallel()

	imp := func(name, file, code string) POI {
		p := poiOf(TypeImport, name, code)
		p.FilePath = file
		return p
	}
	tests := []struct {
		name string
		poi  POI
		want []Reference
	}{
		{name: "JSNamed", poi: imp("a", "src/app.js", "import { a, b as c } from './x';"), want: refs(Imports, "a", "b")},
		{name: "JSDefault", poi: imp("X", "src/app.js", "import X from 'y'"), want: refs(Imports, "X")},
		{name: "JSDefaultAndNamed", poi: imp("X", "src/app.ts", "import X, { y, type Z } from \"z\";"), want: refs(Imports, "X", "Z", "y")},
		{name: "JSNamespaceImportsNothing", poi: imp("ns", "src/app.js", "import * as ns from 'x'")},
		{name: "JSSideEffectImportsNothing", poi: imp("styles", "src/app.js", "import './styles.css'")},
		{name: "JSDefaultAliasSkipped", poi: imp("X", "src/app.js", "import { default as X, q } from 'y'"), want: refs(Imports, "q")},
		{name: "TSImportType", poi: imp("T", "src/app.ts", "import type { T, U as V } from './types'"), want: refs(Imports, "T", "U")},
		{name: "TSImportEquals", poi: imp("fs", "src/app.ts", "import fs = require('fs')"), want: refs(Imports, "fs")},
		{name: "JSReExport", poi: imp("a", "src/index.js", "export { a, b as c } from './x'\nexport * from './y'"), want: refs(Imports, "a", "b")},
		{
			name: "CommonJSDestructuring",
			poi:  imp("a", "src/app.js", "const { a, b: local, c = 1, ...rest } = require('./x');\nconst D = require('d')"),
			want: refs(Imports, "D", "a", "b", "c"),
		},
		{name: "CommentedOutImportIgnored", poi: imp("a", "src/app.js", "// import { z } from 'z'\nimport { a } from 'x'"), want: refs(Imports, "a")},
		{name: "PythonFrom", poi: imp("a", "app.py", "from x import a, b as c"), want: refs(Imports, "a", "b")},
		{name: "PythonFromParenthesized", poi: imp("a", "app.py", "from .pkg.mod import (a,\n    b as bee,\n    c)\n"), want: refs(Imports, "a", "b", "c")},
		{name: "PythonFromStar", poi: imp("x", "app.py", "from x import *")},
		{name: "PythonFromStatementsOnTwoLines", poi: imp("a", "app.py", "from x import a\nfrom . import b"), want: refs(Imports, "a", "b")},
		{name: "PythonImportDotted", poi: imp("x.y", "app.py", "import x.y\nimport os.path as osp, json"), want: refs(Imports, "json", "path", "y")},
		{name: "GoSingle", poi: imp("fmt", "main.go", "import \"fmt\""), want: refs(Imports, "fmt")},
		{
			name: "GoGroup",
			poi:  imp("fmt", "main.go", "import (\n\t\"fmt\"\n\tm \"math\"\n\t_ \"embed\"\n\t\"github.com/jackc/pgx/v5\"\n\t\"gopkg.in/yaml.v3\"\n\t\"github.com/davecgh/go-spew\"\n)"),
			want: refs(Imports, "embed", "fmt", "math", "pgx", "yaml"),
		},
		{name: "GoAliased", poi: imp("m", "main.go", "import m \"math\""), want: refs(Imports, "math")},
		{name: "JavaImport", poi: imp("Foo", "Foo.java", "import com.x.Foo;\nimport static com.x.Util.helper;\nimport com.y.*;"), want: refs(Imports, "Foo", "helper")},
		{name: "FallbackToName", poi: imp("Thing", "a.rb", "require 'thing'"), want: refs(Imports, "Thing")},
		{name: "FallbackEmptyCode", poi: imp("Thing", "a.js", ""), want: refs(Imports, "Thing")},
		{name: "NoFallbackWithoutName", poi: imp("", "a.js", "#include <x>")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := Extract(context.Background(), tt.poi)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// expiredContext is a context whose deadline has passed.
type expiredContext struct{ context.Context }

func (expiredContext) Err() error { return context.DeadlineExceeded }

// cancelAfter is a context whose Err reports context.Canceled from its n-th call on.
type cancelAfter struct {
	context.Context
	calls atomic.Int64
	n     int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) >= c.n {
		return context.Canceled
	}
	return nil
}

func TestExtract_HonoursContext(t *testing.T) {
	t.Parallel()

	big := strings.Repeat("  foo(bar) // comment add(\n  'str'\n", 1<<20/36)
	tests := []struct {
		name    string
		ctx     func() context.Context
		typ     string
		code    string
		wantErr error
	}{
		{
			name:    "AlreadyCancelled",
			ctx:     func() context.Context { ctx, cancel := context.WithCancel(context.Background()); cancel(); return ctx },
			typ:     TypeFunction,
			code:    big,
			wantErr: context.Canceled,
		},
		{
			name:    "DeadlineExceeded",
			ctx:     func() context.Context { return expiredContext{context.Background()} },
			typ:     TypeImport,
			code:    big,
			wantErr: context.DeadlineExceeded,
		},
		{name: "CancelledMidScanInCode", ctx: func() context.Context { return &cancelAfter{Context: context.Background(), n: 10} }, typ: TypeFunction, code: big, wantErr: context.Canceled},
		{name: "CancelledMidScanInComment", ctx: func() context.Context { return &cancelAfter{Context: context.Background(), n: 10} }, typ: TypeClass, code: "/*" + strings.Repeat("x", 1<<20), wantErr: context.Canceled},
		{name: "CancelledMidScanInString", ctx: func() context.Context { return &cancelAfter{Context: context.Background(), n: 10} }, typ: TypeInterface, code: "`" + strings.Repeat("x", 1<<20), wantErr: context.Canceled},
		{name: "CancelledMidScanInLineComment", ctx: func() context.Context { return &cancelAfter{Context: context.Background(), n: 10} }, typ: TypeImport, code: "#" + strings.Repeat("x", 1<<20), wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := Extract(tt.ctx(), poiOf(tt.typ, "f", tt.code))
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorContains(t, err, `poi "p1"`)
			require.Nil(t, got)
		})
	}
}

// A large rawCode is extracted whole and right, whatever the POI type.
// How fast is BenchmarkExtract's (Code1MB, Class1MB): a wall-clock bound
// here would fail on a loaded machine.
func TestExtract_LargeInput(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("large input")
	}

	size := 10 << 20
	if raceEnabled {
		size = 1 << 20
	}
	unit := "function f(a) {\n  // note: add(\n  const s = 'x(' + \"y(\" + `z(`;\n  return obj.method(a) + helper(a, [1, 2])\n}\n"
	code := strings.Repeat(unit, size/len(unit))
	for _, typ := range []string{TypeFunction, TypeClass, TypeImport} {
		got, err := Extract(context.Background(), poiOf(typ, "f", code))
		require.NoError(t, err, typ)
		if typ == TypeFunction {
			require.Equal(t, refs(Calls, "helper", "method"), got)
		}
	}
}

func TestExtract_ErrorWrapsCancel(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Extract(ctx, poiOf(TypeFunction, "f", strings.Repeat("a(", 1<<19)))
	require.True(t, errors.Is(err, context.Canceled))
}
