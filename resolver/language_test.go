package resolver

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goPOI builds a Go POI of file dir/x.go.
func goPOI(typ, name, code string) POI {
	return POI{ID: "p1", Type: typ, Name: name, FilePath: "pkg/store/x.go", LineNumber: 1, RawCode: code}
}

// TestExtract_GoCalls covers the Go reference forms and the error classes
// of issue 19 they fix.
func TestExtract_GoCalls(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		poi  POI
		want []Reference
	}{
		{
			name: "QualifierNamingAPackageIsKept",
			poi:  goPOI(TypeFunction, "f", "func f(b []byte) error {\n\tdata, err := io.ReadAll(r)\n\treturn errors.New(strings.ToLower(s))\n}"),
			want: refs(Calls, "errors.New", "io.ReadAll", "strings.ToLower"),
		},
		{
			name: "ChainFromAPackageIsAMethodOfThatPackage",
			poi:  goPOI(TypeFunction, "f", "func f(b []byte) uint16 {\n\treturn binary.BigEndian.Uint16(b)\n}"),
			want: refs(Calls, "(binary).Uint16"),
		},
		{
			name: "OwnReceiver",
			poi:  goPOI(TypeMethod, "Put", "func (s *Store) Put(k string) error {\n\ts.mu.Lock()\n\treturn s.check(k)\n}"),
			want: refs(Calls, "(.Store).check", "{.Store:mu}.Lock"),
		},
		{
			name: "TypedParametersAndLocals",
			poi: goPOI(TypeFunction, "f", "func f(ctx context.Context, c *Conn, a, b *pgx.Tx, n int, xs []T) {\n"+
				"\tctx.Err()\n\tc.Query()\n\ta.Commit()\n\tb.Rollback()\n\tn.String()\n\txs.Len()\n"+
				"\tt := &Tx{}\n\tt.Exec()\n\tr := strings.NewReader(s)\n\tr.Read(p)\n\tvar mu sync.Mutex\n\tmu.Lock()\n\tq := load()\n\tq.Run()\n\tz := <-ch\n\tz.Stop()\n}"),
			want: refs(Calls, "(.Conn).Query", "(.Tx).Exec", "(context.Context).Err", "(pgx.Tx).Commit",
				"(pgx.Tx).Rollback", "(sync.Mutex).Lock", ".Stop", "load", "strings.NewReader", "{load}.Run",
				"{strings.NewReader}.Read"),
		},
		{
			name: "BuiltinsConversionsAndFuncValuesAreNotCalls",
			poi: goPOI(TypeFunction, "f", "func f(fn func(int) error, ch chan int) {\n\tclose(ch)\n\tn := len(xs) + cap(xs)\n\t_ = string(b)\n"+
				"\tfn(n)\n\tg := func() { helper() }\n\tg()\n\tvar err error\n\terr.Error()\n}"),
			want: refs(Calls, "helper"),
		},
		{
			name: "IfInitThenCondition",
			poi:  goPOI(TypeFunction, "f", "func f() {\n\tif x := load(); valid(x) {\n\t}\n\tfor ok := next(); more(ok); {\n\t}\n}"),
			want: refs(Calls, "load", "more", "next", "valid"),
		},
		{
			name: "GoFunctionsNamedLikeOtherLanguagesKeywords",
			poi:  goPOI(TypeFunction, "f", "func f() {\n\tlock()\n\twith(x)\n\tnot(y)\n}"),
			want: refs(Calls, "lock", "not", "with"),
		},
		{
			name: "ClosureParameters",
			poi:  goPOI(TypeFunction, "f", "func f() {\n\tdo(func(c *Conn) error { return c.Close() })\n}"),
			want: refs(Calls, "(.Conn).Close", "do"),
		},
		{
			name: "ReceiverTypesFromHeaderParametersAndLiterals",
			poi: goPOI(TypeMethod, "Run", "func (l *List[T]) Run(p pgconn.Config, n Node[int]) {\n\tl.push()\n\tp.Copy()\n\tn.Walk()\n"+
				"\ta := Tree{}\n\ta.Grow()\n\tb := &q.Cell{}\n\tb.Set()\n\tc := new(Leaf)\n\tc.Cut()\n\tvar d q.Ring\n\td.Turn()\n"+
				"\te := q.Make()\n\te.Go()\n\tf := T(x)\n\tf.Is()\n}"),
			want: refs(Calls, "(.Leaf).Cut", "(.List).push", "(.Node).Walk", "(.Tree).Grow", "(pgconn.Config).Copy",
				"(q.Cell).Set", "(q.Ring).Turn", "T", "q.Make", "{T}.Is", "{q.Make}.Go"),
		},
		{
			// database/sql's tests: db := newTestDB(t, "people"), then
			// tx, err := db.Begin(), then tx.Commit().
			name: "ValuesOfCallsAreDerived",
			poi: goPOI(TypeFunction, "TestTxQuery", "func TestTxQuery(t *testing.T) {\n\tdb := newTestDB(t, \"people\")\n"+
				"\tdefer closeDB(t, db)\n\ttx, err := db.Begin()\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\tdefer tx.Rollback()\n"+
				"\tr, err := tx.Query(\"SELECT|t1|name|\")\n\tif r.Err() != nil {\n\t\terr.Error()\n\t}\n}"),
			want: refs(Calls, "(testing.T).Fatal", "closeDB", "newTestDB", "{newTestDB}.Begin",
				"{{newTestDB}.Begin}.Query", "{{newTestDB}.Begin}.Rollback", "{{{newTestDB}.Begin}.Query}.Err"),
		},
		{
			// pgx: c.pgConn.Exec(…) on the receiver's field, s.conn.cfg.Copy()
			// on a field of a field, x := s.conn then x.Close().
			name: "FieldsOfTypedValuesAreDerived",
			poi: goPOI(TypeMethod, "Exec", "func (c *Conn) Exec(ctx context.Context, s *q.Stmt) {\n\tc.pgConn.Exec(ctx)\n"+
				"\ts.conn.cfg.Copy()\n\tx := s.conn\n\tx.Close()\n\ty := c.pgConn.Conn()\n\ty.Close()\n\tz := c.a.b.c.d.e()\n"+
				"\tw := newW()\n\tw.f.Get()\n\tv := w.f\n\tv.Put()\n}"),
			// A field of a derived struct (s.conn.cfg, w.f) is read as a value
			// of unknown type: its struct is known only while resolving.
			want: refs(Calls, ".Copy", ".Get", ".Put", ".e", "newW", "{.Conn:pgConn}.Conn", "{.Conn:pgConn}.Exec",
				"{q.Stmt:conn}.Close", "{{.Conn:pgConn}.Conn}.Close"),
		},
		{
			// Only a call whose form pins a package or a receiver gives its
			// value a derived type: z.Open() on a z of unknown type is a guess.
			name: "ValuesOfGuessedCallsAreNotDerived",
			poi: goPOI(TypeMethod, "Run", "func (r *R) Run(z any, p *q.P) {\n\tfor _, s := range stores {\n\t\tf := s.Open()\n\t\tf.Close()\n\t}\n"+
				"\tg := p.Get()\n\tg.Put()\n\th := q.V.Make()\n\th.Use()\n}"),
			want: refs(Calls, "(q).Make", "(q.P).Get", ".Close", ".Open", ".Use", "{(q.P).Get}.Put"),
		},
		{
			// cobra: rootCmd.Flags().String(…) is a method of Flags' result
			// type, not any tree method named String.
			name: "MethodCallsOnCallValuesAreDerived",
			poi: goPOI(TypeFunction, "f", "func f(c *Command, y any) {\n\tc.Flags().String(name, \"\", usage(x))\n"+
				"\tnewDB(t, x(1)).Begin().Commit()\n\tq.Open(dsn).Ping()\n\ty.Get().Put()\n\ta().B().C().D().E()\n"+
				"\tc.Flags().\n\t\tParse()\n\tlen(xs).N()\n}"),
			// y (any) has no methods; a().B().C().D() nests three deep,
			// so .E is a guess; len is a builtin, so .N is a guess.
			want: refs(Calls, "(.Command).Flags", ".E", ".N", ".Put", "a", "newDB", "q.Open", "usage", "x",
				"{(.Command).Flags}.Parse", "{(.Command).Flags}.String", "{a}.B", "{newDB}.Begin", "{q.Open}.Ping",
				"{{a}.B}.C", "{{newDB}.Begin}.Commit", "{{{a}.B}.C}.D"),
		},
		{
			name: "DerivedTypesNestAtMostThreeDeep",
			poi:  goPOI(TypeFunction, "f", "func f() {\n\ta := g()\n\tb := a.H()\n\tc := b.I()\n\td := c.J()\n\td.K()\n}"),
			want: refs(Calls, ".K", "g", "{g}.H", "{{g}.H}.I", "{{{g}.H}.I}.J"),
		},
		{
			// issue 25: f[T](x) and q.F[K, V](x) call f and q.F; an index
			// by a local (fns[i](x)) or of a member (s.fns[k](x)) does not.
			name: "ExplicitInstantiationsAreCalls",
			poi: goPOI(TypeFunction, "f", "func f(i int, s *S) {\n\tMap[int](xs)\n\tq.Pick[K, V](m)\n\tc := ClientFromContext[pgx.Tx](ctx)\n"+
				"\tc.Stop()\n\tg[map[string]int](y)\n\tfns[i](z)\n\ts.fns[k](z)\n}"),
			want: refs(Calls, "ClientFromContext", "Map", "g", "q.Pick", "{ClientFromContext}.Stop"),
		},
		{
			// issue 25: x := a.F().G() takes G's value, not F's (pgx's
			// mrr := conn.PgConn().Exec(…) then mrr.Close()); a field of a
			// call's value is of unknown type.
			name: "DeclarationsTakeTheValueOfTheLastCallOfAChain",
			poi: goPOI(TypeFunction, "f", "func f() {\n\tconn := connect()\n\tmrr := conn.PgConn().Exec(ctx)\n\tmrr.Close()\n"+
				"\tz := g(a).f\n\tz.J()\n\tw := q.New(x).\n\t\tWith(y)\n\tw.K()\n}"),
			want: refs(Calls, ".J", "connect", "g", "q.New", "{connect}.PgConn", "{q.New}.With", "{{connect}.PgConn}.Exec",
				"{{q.New}.With}.K", "{{{connect}.PgConn}.Exec}.Close"),
		},
		{
			// issue 25: `var ( … )` declares its names as `var x …` does:
			// testify's mockedService = new(T), a mutex of sync.Mutex.
			name: "VarGroupsDeclare",
			poi: goPOI(TypeFunction, "f", "func f() {\n\tvar (\n\t\tmu sync.Mutex\n\t\tdb = open()\n\t\tm = new(Mock)\n\t)\n"+
				"\tmu.Lock()\n\tdb.Ping()\n\tm.On(x)\n}"),
			want: refs(Calls, "(.Mock).On", "(sync.Mutex).Lock", "open", "{open}.Ping"),
		},
		{
			// issue 25: a member call on a parenthesized literal,
			// conversion or type assertion has the type it shows:
			// (&big.Int{}).Set is big's, (noOpArgs{}).Kind the test's own
			// type's, conn.(*net.TCPConn).CloseWrite net's.
			name: "ParenthesizedLiteralsAndConversionsAreTyped",
			poi: goPOI(TypeFunction, "f", "func f(b []byte) {\n\tn := (&big.Int{}).Set(x)\n\tk := (noOpArgs{}).Kind()\n"+
				"\t(*byteWith)(b).UnmarshalJSON(d)\n\t(*q.T)(v).O()\n\tg(T{}).M()\n\t([]byte)(s).P()\n"+
				"\tconn.(*net.TCPConn).CloseWrite()\n\tx.(*conn).close()\n\t(y).Q()\n}"),
			want: refs(Calls, "(.byteWith).UnmarshalJSON", "(.conn).close", "(.noOpArgs).Kind", "(big.Int).Set",
				"(net.TCPConn).CloseWrite", "(q.T).O", ".P", ".Q", "g", "{g}.M"),
		},
		{
			// issue 25: net/http's cc.pconn.mu.Lock() linked to its only
			// Lock method (fakeLocker's): a mutex method on a field whose
			// struct is not known is no reference. A field of a known
			// struct keeps its form, and a local's call is still a guess.
			name: "MutexMethodsOnFieldsOfUnknownStructsAreNotCalls",
			poi: goPOI(TypeMethod, "f", "func (c *Conn) f() {\n\tc.pconn.mu.Lock()\n\tdefer c.pconn.mu.Unlock()\n"+
				"\tfor _, s := range c.streams {\n\t\ts.mu.RLock()\n\t\ts.flush()\n\t}\n\tcc := c.cc\n\tcc.wmu.TryLock()\n"+
				"\tc.mu.Lock()\n\tl := locker()\n\tl.Lock()\n}"),
			want: refs(Calls, ".flush", "locker", "{.Conn:mu}.Lock", "{locker}.Lock"),
		},
		{
			// issue 40: cobra's `_, err := executeCommand(…)` then
			// err.Error() linked to the tree's only Error method
			// (completions.go:52): a member call on an err whose type
			// the tokens do not show is a call through the error
			// interface. A typed err keeps its form, and other later
			// names of a multi-value := theirs (pgx's `client, server
			// := net.Pipe()`, server.SetDeadline: net's).
			// Only Error, the error interface's one method, is dropped on
			// an err/…Err local of unknown type (cobra's finding 9: no
			// edge to flagCompError.Error); Unwrap, Field, Write are
			// another type's methods and stay calls (review).
			name: "ErrorOfAnErrOfUnknownTypeIsNoCall",
			poi: goPOI(TypeFunction, "f", "func f(c *Command, s any) (n int, werr error) {\n\t_, err := executeCommand(c)\n\terr.Error()\n"+
				"	if err := s.x.Run(); err != nil {\n\t\terr.Unwrap()\n\t}\n\tfor _, err := range errs {\n\t\terr.Error()\n\t}\n"+
				"	closeErr := s.y.Close()\n\tcloseErr.Error()\n\twerr.Error()\n\tr := s.z.Get()\n\tr.Error()\n"+
				"	perr := &ParseError{}\n\tperr.Error()\n\tverr := validate(c)\n\tverr.Error()\n\tx, y := newT()\n\tx.A()\n\ty.B()\n"+
				"\tcl, srv := net.Pipe()\n\tsrv.SetDeadline(t)\n\t_, pErr := net.Dial(a)\n\tpErr.Error()\n"+
				"\tswitch err := e.(type) {\n\tcase *ValidationError:\n\t\treturn err.Field()\n\t}\n"+
				"\tfor _, stdErr := range ws {\n\t\tstdErr.Write(p)\n\t}\n}"),
			want: refs(Calls, "(.).B", "(.ParseError).Error", "(net).SetDeadline", ".Close", ".Error", ".Field", ".Get", ".Run", ".Unwrap", ".Write",
				"executeCommand", "net.Dial", "net.Pipe", "newT", "validate", "{newT}.A", "{validate}.Error"),
		},
		{
			name: "StructEmbedsKeepTheirPackage",
			poi:  goPOI(TypeClass, "S", "type S struct {\n\tBase\n\t*io.Reader\n\tsync.Mutex\n\tname string\n}"),
			want: refs(Extends, "Base", "io.Reader", "sync.Mutex"),
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

// TestExtract_PythonRules: Python's keyword table and a class's own calls.
func TestExtract_PythonRules(t *testing.T) {
	t.Parallel()

	py := func(typ, name, code string) POI {
		return POI{ID: "p1", Type: typ, Name: name, FilePath: "app/m.py", RawCode: code}
	}
	tests := []struct {
		name string
		poi  POI
		want []Reference
	}{
		{
			name: "NamesThatAreKeywordsElsewhereAreCalls",
			poi: py(TypeFunction, "f", "def f(x):\n    func(x)\n    map(g, x)\n    range(3)\n    type(x)\n    select(x)\n"+
				"    delete(x)\n    lock(x)\n    new(x)\n    return func(x)\n"),
			want: refs(Calls, "delete", "func", "lock", "map", "new", "range", "select", "type"),
		},
		{
			name: "ClassGetsOnlyItsOwnBody",
			poi: py(TypeClass, "C", "@register(kind='c')\nclass C(make_base()):\n    size = compute()\n\n"+
				"    @cached(ttl())\n    def m(self, d=default()):\n        helper()\n        return self.other()\n\n"+
				"    async def n(self):\n        await fetch()\n"),
			want: refs(Calls, "cached", "compute", "default", "make_base", "register", "ttl"),
		},
		{
			name: "NestedDefBelongsToItself",
			poi:  py(TypeFunction, "outer", "def outer(x):\n    def inner(y):\n        return deep(y)\n    return inner(x) + after()\n"),
			want: refs(Calls, "after", "inner"),
		},
		{
			// Issue 43: a method header spanning lines closes its brackets
			// on a later line; the methods after it are still their own.
			name: "MultiLineMethodHeaderDoesNotLeakLaterMethods",
			poi: py(TypeClass, "C", "class C(Base):\n    def m(self,\n          a=first(),\n          b=None):\n        inside()\n\n"+
				"    def n(self, x=(1,\n            2)):\n        return later()\n\n    def o(self):\n        last()\n    size = compute()\n"),
			want: append(refs(Calls, "compute", "first"), refs(Extends, "Base")...),
		},
		{
			name: "ClosingBracketsOnTheirOwnLine",
			poi: py(TypeClass, "C", "class C:\n    def m(\n        self,\n        a: dict[str,\n                int] = {},\n    ) -> None:\n"+
				"        inside()\n\n    def n(self):\n        later()\n    tail = closing(\n        )\n"),
			want: refs(Calls, "closing"),
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

// TestExtract_JavaScriptRules: JavaScript's and TypeScript's keyword table
// and a class's own calls (issue 25, as TestExtract_PythonRules for Python).
func TestExtract_JavaScriptRules(t *testing.T) {
	t.Parallel()

	js := func(typ, name, file, code string) POI {
		return POI{ID: "p1", Type: typ, Name: name, FilePath: file, RawCode: code}
	}
	tests := []struct {
		name string
		poi  POI
		want []Reference
	}{
		{
			name: "NamesThatAreKeywordsElsewhereAreCalls",
			poi: js(TypeFunction, "f", "src/f.js", "function f(x) {\n  func(x)\n  map(g, x)\n  range(3)\n  type(x)\n"+
				"  select(x)\n  lock(x)\n  go(x)\n  def(x)\n  fn(x)\n  not(x)\n  lambda(x)\n  void run()\n  return func(x)\n}"),
			want: refs(Calls, "def", "fn", "func", "go", "lambda", "lock", "map", "not", "range", "run", "select", "type"),
		},
		{
			name: "KeywordsAreNotCalls",
			poi: js(TypeFunction, "f", "src/f.ts", "async function f(x: T): Promise<void> {\n  if (x) { return g(x) }\n"+
				"  for (const y of items()) {}\n  while (x) {}\n  switch (x) {}\n  try {} catch (e) {} finally {}\n"+
				"  await load(typeof(x), x instanceof(Y))\n  const m = import('./m')\n  super(x)\n}"),
			want: refs(Calls, "g", "items", "load"),
		},
		{
			// A public JavaScript call-graph micro-benchmark: no edge
			// MyClass -> MyClass.func1.
			name: "ClassDoesNotGetItsMethodsCalls",
			poi: js(TypeClass, "MyClass", "src/main.js", "class MyClass {\n  func() {\n    this.func1()\n  }\n"+
				"  func1() { return func(x) }\n  constructor(a) { super(a); this.init() }\n}"),
		},
		{
			name: "ClassKeepsItsOwnBody",
			poi: js(TypeClass, "A", "src/a.ts", "@register(kind())\nexport class A extends mix(B) {\n  static x = make()\n"+
				"  #count = compute()\n  handler = () => { this.onClick() }\n  static { init() }\n  @log(level())\n"+
				"  constructor(private a: T) { super(); this.setup() }\n  get v(): number { return calc() }\n"+
				"  async *gen<T extends Map<K, V>>(a: T): AsyncGenerator<T> {\n    yield fetchIt()\n  }\n"+
				"  #priv() {\n    hidden()\n  }\n  [Symbol.iterator]() { return iter() }\n  abstract m(): void;\n"+
				"  field: Foo = build()\n  allman()\n  {\n    inAllman()\n  }\n  y = a\n  z() { zz() }\n}"),
			want: refs(Calls, "build", "compute", "init", "kind", "level", "log", "make", "mix", "onClick", "register"),
		},
		{
			name: "MethodKeepsItsCallsAndPrivateNames",
			poi:  js(TypeMethod, "MyClass.func", "src/main.js", "func() {\n  this.func1(); this.#save(); after()\n}"),
			want: refs(Calls, "#save", "after", "func1"),
		},
		{
			// Issue 43: commander's Option class. A regex literal with an
			// unmatched "]" (escaped, or "/" inside a class) is one token.
			name: "RegexLiteralWithBracketsIsOneToken",
			poi: js(TypeClass, "Option", "lib/option.js", "class Option {\n  constructor(flags) {\n    this.long = parse(flags)\n  }\n"+
				"  name() {\n    return this.long.replace(/^--/, '').replace(/[>\\]]$/, strip())\n  }\n"+
				"  is(arg) { return /[/\\]]x/g.test(arg) && /\\//.test(arg) }\n  half = (a, b) => a / b / twice(a)\n"+
				"  ratio = (a) => (a) / 2 / g(a)\n  neg() {\n    return last()\n  }\n}"),
			want: refs(Calls, "g", "twice"),
		},
		{
			name: "DivisionIsNotARegex",
			poi: js(TypeFunction, "f", "src/f.js", "function f(a, b) {\n  const x = a / b; const y = arr[0] / 2 / c(1)\n"+
				"  const z = (a) / n(b) / 3\n  if (/\\(/.test(s)) { return re(x) }\n  return typeof /a(/ === 'object' ? w() : 0\n}"),
			want: refs(Calls, "c", "n", "re", "test", "w"),
		},
		{
			// JSX: "</" closes a tag and starts no regex (review), so a
			// JSX closing tag does not swallow the rest of its line.
			name: "JSXClosingTagIsNoRegex",
			poi: js(TypeMethod, "List.render", "src/list.jsx", "render() { return <ul><li>{a}</li>"+
				"<li onClick={() => this.save(x)}>Save</li></ul>; }"),
			want: refs(Calls, "save"),
		},
		{
			name: "ClassHoldingJSXKeepsItsBraces",
			poi: js(TypeClass, "List", "src/list.jsx", "class List extends Component {\n  render() {\n"+
				"    return <div><span>t</span>{items.map(i => <li>{i}</li>)}</div>;\n  }\n"+
				"  save(x) { store(x) }\n  size = count()\n}"),
			want: append(refs(Calls, "count"), refs(Extends, "Component")...),
		},
		{
			name: "LessThanThenRegex",
			poi:  js(TypeFunction, "f", "src/f.js", "function f(a) {\n  return a < /x(/.exec(s).length ? g(a) : 0\n}"),
			want: refs(Calls, "exec", "g"),
		},
		{
			// Another language's file keeps the table of every language
			// and the class its methods' calls (a Java class).
			name: "OtherLanguagesUnchanged",
			poi:  js(TypeClass, "C", "src/C.java", "class C {\n  void m() { func(x); helper(); }\n}"),
			want: refs(Calls, "helper"),
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

// TestTokenizer_RegexScanIsLinearOnALongLine: a "/" that starts no
// closed regex literal on its line is scanned once per line, not once per
// "/": the bytes scanRegex reads stay within the input's size (the review's
// input read each of its 120 KB about 40,000 times over).
func TestTokenizer_RegexScanIsLinearOnALongLine(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, src string
		want      []string // a few of the tokens, in order
	}{
		{name: "UnclosedClasses", src: "x = " + strings.Repeat("(/[", 40_000) + "\ng(y)\n", want: []string{"g", "(", "y", ")"}},
		{name: "UnclosedSlashes", src: "x = " + strings.Repeat("(/a", 40_000) + "\nh(/re/)\n", want: []string{"h", "(", "/re/", ")"}},
		{name: "NextLineScansAgain", src: "a = (/[\nb = (/x/)\n", want: []string{"b", "=", "(", "/x/", ")"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			z := newTokenizer(context.Background(), tt.src)
			z.regexLiterals = true
			var toks []string
			for tok := z.next(); tok.kind != tokEOF; tok = z.next() {
				toks = append(toks, tok.text)
			}
			require.NoError(t, z.err)
			require.LessOrEqual(t, z.regexScanned, len(tt.src))
			require.Equal(t, tt.want, toks[len(toks)-len(tt.want):])
		})
	}
}

// TestLookup_Go covers the Go lookup rule per reference form.
func TestLookup_Go(t *testing.T) {
	t.Parallel()

	c := func(id, file, typ string) Candidate {
		return Candidate{POIID: id, FileID: file, Name: "Close", Type: typ}
	}
	recv := func(cand Candidate, receiver string) Candidate {
		cand.Receiver = receiver
		return cand
	}
	cands := []Candidate{
		c("fn-store", "store/a.go", TypeFunction),
		recv(c("m-store-a", "store/a.go", TypeMethod), "File"),
		recv(c("m-store-b", "store/b.go", TypeMethod), "Store"),
		recv(c("m-conn", "pgconn/conn.go", TypeMethod), "Conn"),
		recv(c("m-pipe", "pgconn/pipe.go", TypeMethod), "Pipe"),
		c("fn-io", "internal/io/io.go", TypeFunction),
		c("fn-root", "root.go", TypeFunction),
		recv(c("m-root-conn", "root.go", TypeMethod), "Conn"),
		recv(c("m-root-test-conn", "root_test.go", TypeMethod), "Conn"),
	}
	tests := []struct {
		name, file, ref string
		rt              RelType
		want            string
		outcome         Outcome
	}{
		{"PlainCallIsAFunctionOfThePackage", "store/c.go", "Close", Calls, "fn-store", Resolved},
		{"PlainCallNeverAMethod", "pgconn/x.go", "Close", Calls, "", Unknown},
		{"QualifierNamesATreePackage", "cmd/main.go", "io.Close", Calls, "fn-io", Resolved},
		{"QualifierOutsideTheTree", "cmd/main.go", "errors.Close", Calls, "", Unknown},
		{"OwnReceiverPrefersTheFile", "store/a.go", "().Close", Calls, "m-store-a", Resolved},
		{"OwnReceiverInAnotherFileOfThePackage", "store/c.go", "().Close", Calls, "", Ambiguous},
		{"SamePackageTypeHasNoFilePreference", "store/a.go", "(.).Close", Calls, "", Ambiguous},
		{"TypeOfANamedPackage", "cmd/main.go", "(pgconn).Close", Calls, "", Ambiguous},
		{"KnownTypeOfThePackageResolvesAmongItsMethods", "store/a.go", "(.Store).Close", Calls, "m-store-b", Resolved},
		{"KnownTypeWithoutTheMethod", "store/a.go", "(.Cache).Close", Calls, "", Unknown},
		{"KnownTypeOfAnotherPackage", "store/a.go", "(.Conn).Close", Calls, "", Unknown},
		{"KnownTypeOfANamedPackage", "cmd/main.go", "(pgconn.Pipe).Close", Calls, "m-pipe", Resolved},
		{"KnownTypeOfAnExternalPackage", "store/a.go", "(sync.Mutex).Close", Calls, "", Unknown},
		{"TypeOfAnExternalPackage", "store/a.go", "(sync).Close", Calls, "", Unknown},
		{"UnknownReceiverAnyMethodNoFilePreference", "store/a.go", ".Close", Calls, "", Ambiguous},
		{"RootPackageQualifiedNotFromItsExternalTests", "root_test.go", "relay.Close", Calls, "", Unknown},
		{"RootFormFromARootTestFile", "root_test.go", "^.Close", Calls, "fn-root", Resolved},
		{"RootPackageNotFromOtherPackages", "cmd/main.go", "relay.Close", Calls, "", Unknown},
		{"RootTypeFormFromARootTestFile", "root_test.go", "(^.Conn).Close", Calls, "m-root-conn", Resolved},
		{"RootTypeFormNeedsTheType", "root_test.go", "(^.Pipe).Close", Calls, "", Unknown},
		{"NoSelfEdge", "store/a.go", "Close", Calls, "", Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			src := "src"
			if tt.name == "NoSelfEdge" {
				src = "fn-store"
			}
			got, outcome := Lookup(src, tt.file, Reference{Name: tt.ref, Type: tt.rt}, cands)
			require.Equal(t, tt.outcome, outcome)
			require.Equal(t, tt.want, got)
			require.Equal(t, "Close", TargetName(Reference{Name: tt.ref, Type: tt.rt}))
		})
	}
}

// TestLookup_GoImportsNameNoPOI: a Go import read from rawCode names a
// package, which is no POI: `import "sort"` does not link to the tree's
// func sort (issue 40). A supplied reference of a Go import resolves, and
// another language's imported name still does.
func TestLookup_GoImportsNameNoPOI(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "s1", FileID: "pkg/util/sort.go", Name: "sort", Type: TypeFunction},
		{POIID: "c1", FileID: "cmd/root.go", Name: "sym:m/cmd.Command", Type: TypeClass},
	}
	id, outcome := Lookup("i1", "pkg/store/x.go", Reference{Name: "sort", Type: Imports}, cands)
	require.Equal(t, Unknown, outcome)
	require.Empty(t, id)
	id, outcome = Lookup("i1", "pkg/store/x.go", Reference{Name: "sym:m/cmd.Command", Type: Imports}, cands)
	require.Equal(t, Resolved, outcome)
	require.Equal(t, "c1", id)
	id, outcome = Lookup("i1", "web/x.js", Reference{Name: "sort", Type: Imports}, cands)
	require.Equal(t, Resolved, outcome)
	require.Equal(t, "s1", id)
}

func TestLookup_GoExtends(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "base-store", FileID: "store/a.go", Name: "Base", Type: TypeClass},
		{POIID: "base-io", FileID: "io/io.go", Name: "Base", Type: TypeInterface},
	}
	got, outcome := Lookup("s", "store/b.go", Reference{Name: "Base", Type: Extends}, cands)
	require.Equal(t, Resolved, outcome)
	require.Equal(t, "base-store", got)
	got, outcome = Lookup("s", "store/b.go", Reference{Name: "io.Base", Type: Extends}, cands)
	require.Equal(t, Resolved, outcome)
	require.Equal(t, "base-io", got)
	_, outcome = Lookup("s", "store/b.go", Reference{Name: "sync.Base", Type: Extends}, cands)
	require.Equal(t, Unknown, outcome)
}

// Every form of a reference that can resolve to a POI of a changed name
// has that name as its key, so that the publish's job finds it again.
func TestReferenceKey(t *testing.T) {
	t.Parallel()

	for key, forms := range map[string][]string{
		"Close":                       {"Close", ".Close", "().Close", "(.).Close", "store.Close", "(store).Close", "^.Close"},
		"close":                       {"close", ".close", "().close", "(.).close"},
		ReceiverName("Conn", "Close"): {"(.Conn).Close", "(store.Conn).Close", "(^.Conn).Close"},
		"conn.Close":                  {"(.conn).Close"},
		"{newDB}.Query":               {"{newDB}.Query"},
		"sym:github.com/x/db.Open":    {"sym:github.com/x/db.Open"},
		"id:f1#open":                  {"id:f1#open"},
		"render":                      {"render"},
	} {
		for _, form := range forms {
			require.Equal(t, key, ReferenceKey(form), "the key of %q", form)
		}
	}
	require.Empty(t, ReceiverName("", "Close"))
	require.True(t, ByNameOnly("a.py"))
	require.False(t, ByNameOnly("a.go"))
}

func TestReceiver(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct{ typ, file, code, want string }{
		{TypeMethod, "a.go", "func (c *Conn) Query(sql string) {}", "Conn"},
		{TypeMethod, "a.go", "func (Conn) Close() {}", "Conn"},
		{TypeMethod, "a.go", "func (l *List[T]) Push(v T) {}", "List"},
		{TypeMethod, "a.go", "func (m Map[K, V]) Get(k K) V {}", "Map"},
		{TypeMethod, "a.go", "// Doc.\nfunc (s *S) M() {}", "S"},
		{TypeFunction, "a.go", "func (c *Conn) Query() {}", ""},
		{TypeMethod, "a.py", "def (c *Conn) Query(): pass", ""},
		{TypeMethod, "a.go", "func Query() {}", ""},
	} {
		require.Equal(t, tt.want, Receiver(POI{Type: tt.typ, FilePath: tt.file, RawCode: tt.code}), tt.code)
	}
}

func TestExtract_GoRootTestFileAddsRootForms(t *testing.T) {
	t.Parallel()

	fn := POI{ID: "t", Type: TypeFunction, Name: "TestParse", FilePath: "url_test.go", LineNumber: 1,
		RawCode: "func TestParse(t *testing.T) {\n\tu, _ := url.Parse(s)\n\turl.unexported()\n\tstrings.Split(s, \",\")\n}"}
	got, err := Extract(context.Background(), fn)
	require.NoError(t, err)
	require.Equal(t, refs(Calls, "^.Parse", "^.Split", "strings.Split", "url.Parse", "url.unexported"), got)

	// pgx's and net/url's external tests: methods of the root package's
	// types on values of them (conn *pgx.Conn, v := url.Values{}).
	typed := POI{ID: "t", Type: TypeFunction, Name: "TestQuery", FilePath: "conn_test.go", LineNumber: 1,
		RawCode: "func TestQuery(t *testing.T, conn *pgx.Conn) {\n\tconn.Query(ctx)\n\tv := url.Values{}\n\tv.Add(k, x)\n" +
			"\tvar b strings.builder\n\tb.Grow(1)\n\tc, _ := river.NewClient(d)\n\tc.Start(ctx)\n}"}
	got, err = Extract(context.Background(), typed)
	require.NoError(t, err)
	require.Equal(t, refs(Calls, "(^.Conn).Query", "(^.Values).Add", "(pgx.Conn).Query", "(strings.builder).Grow",
		"(url.Values).Add", "^.NewClient", "river.NewClient", "{^.NewClient}.Start", "{river.NewClient}.Start"), got)

	// {^.F}.m: a method of the type the root package's F returns; nothing
	// when the root has no F (not a guess among the root's methods).
	rootCands := []Candidate{
		{POIID: "new", FileID: "client.go", Name: "NewClient", Type: TypeFunction, Result: "Client"},
		{POIID: "start", FileID: "client.go", Name: "Start", Type: TypeMethod, Receiver: "Client"},
		{POIID: "start-other", FileID: "producer.go", Name: "Start", Type: TypeMethod, Receiver: "producer"},
	}
	got2, outcome := Lookup("t", "client_test.go", Reference{Name: "{^.NewClient}.Start", Type: Calls}, rootCands)
	require.Equal(t, Resolved, outcome)
	require.Equal(t, "start", got2)
	_, outcome = Lookup("t", "client_test.go", Reference{Name: "{^.NewClient}.Start", Type: Calls}, rootCands[1:])
	require.Equal(t, Unknown, outcome)

	typ := POI{ID: "w", Type: TypeClass, Name: "W", FilePath: "worker_test.go", LineNumber: 1,
		RawCode: "type W struct {\n\triver.WorkerDefaults[A]\n}"}
	got, err = Extract(context.Background(), typ)
	require.NoError(t, err)
	require.Equal(t, refs(Extends, "^.WorkerDefaults", "river.WorkerDefaults"), got)

	fn.FilePath = "sub/url_test.go" // not the root: no root forms
	got, err = Extract(context.Background(), fn)
	require.NoError(t, err)
	require.Equal(t, refs(Calls, "strings.Split", "url.Parse", "url.unexported"), got)

	// The root form reaches the root's files, except the source's own.
	cands := []Candidate{
		{POIID: "p-own", FileID: "decode_test.go", Name: "Point", Type: TypeClass},
		{POIID: "p-sub", FileID: "image/point.go", Name: "Point", Type: TypeClass},
	}
	_, outcome = Lookup("e", "decode_test.go", Reference{Name: "^.Point", Type: Extends}, cands)
	require.Equal(t, Unknown, outcome)
	cands = append(cands, Candidate{POIID: "p-root", FileID: "point.go", Name: "Point", Type: TypeClass})
	got2, outcome = Lookup("e", "decode_test.go", Reference{Name: "^.Point", Type: Extends}, cands)
	require.Equal(t, Resolved, outcome)
	require.Equal(t, "p-root", got2)
}
