// Package resolver decodes points of interest (POIs), extracts the names their
// code refers to, and decides which POI a name resolves to. It is pure: no
// database, no I/O, no goroutines, no global state. A worker calls it once per
// POI inside an error boundary.
//
// # Decoding
//
// DecodePOI turns one raw JSON POI into a POI or a *ValidationError that names
// the field at fault; Peek reads just the id and filePath.
//
// # Analyzer-supplied references
//
// An analyzer that knows a POI's references (a compiler front end, a SCIP or
// LSIF indexer) sends them with the POI, with the POI's stable fully
// qualified name:
//
//	{"id": "g1", "type": "method_definition", "name": "Get", "filePath": "pkg/cache.go",
//	 "lineNumber": 12, "rawCode": "func (c *Cache) Get(k string) V { … }",
//	 "symbol": "example.com/m/pkg.(*Cache).Get",
//	 "references": [{"type": "CALLS", "symbol": "example.com/m/pkg.hash"},
//	                {"type": "CALLS", "targetId": "pkg/lru.go:40:touch"}]}
//
// Each reference has a type (CALLS, EXTENDS, IMPLEMENTS or IMPORTS) and
// exactly one of symbol (the target's symbol), targetId (the target's POI
// id) and name (a name resolved as one read from code would be: an analyzer
// that resolves most call sites leaves the others to relay's rule this
// way); DecodePOI rejects anything else, naming the field
// (`references[2].type "CALLZ" is not one of …`). When references is present,
// even empty, Extract returns them instead of reading RawCode, named
// "sym:<symbol>", "id:<targetId>" and the name as given (SuppliedReference.Name). Every POI is a
// candidate for "id:<its id>", and one with a symbol for "sym:<its symbol>"
// (AnswerNames); Lookup resolves these names with the name rule below
// (the target's type must accept the relationship, candidates in the
// source's file win, no self edges), in every language, without Go's
// qualifier rules.
//
// # Extraction
//
// Extract reads a POI's RawCode with a hand-written tokenizer that understands
// JavaScript, TypeScript, Python, Go and Java (and most C-like code) well
// enough to find references. It is not a parser: it works on tokens, in one
// pass, in time linear in the size of the code, checking its context every
// 4 KiB. Everything inside comments and string literals is ignored:
//
//   - comments: // and # to end of line (# is a comment in every language
//     but JavaScript and TypeScript, where #save is a private name; a C
//     preprocessor line is skipped), /* … */;
//   - strings: '…' and "…" (a quote left open ends at the line break), `…`
//     template literals and Go raw strings, Python triple-quoted strings, all
//     with backslash escapes (so a Go raw string ending in a backslash runs on);
//   - a template literal is a string as a whole: calls inside ${…} are not seen.
//
// The references a POI yields depend on its Type; other types yield none.
//
// CALLS, for function_definition, method_definition and class_declaration:
// a name (Unicode letters, digits, _ and $) followed by "(" on the same line
// is a call of that name. Member calls count by their last name: obj.add(1),
// fmt.Println(x), this.save(), p->run() and Foo::bar() call add, Println,
// save, run and bar. These are not calls:
//
//   - keywords of the supported languages, such as if, for, while, switch,
//     catch, return, typeof, sizeof, super, await, yield, not, lambda, with,
//     except, assert, go, defer, select, import; the name after an operator
//     keyword is a call (await foo() and return foo() call foo). After a dot
//     any name is a call, so promise.catch(f) calls catch. print is a call;
//   - construction: new Foo() and new pkg.Foo() call nothing (CALLS targets
//     only functions and methods);
//   - definitions: the name after function, function*, def, func, fn, class,
//     interface or enum (a nested `function helper() {}` defines helper);
//     a name right after another name (`int add(`, `async load(`, `get x(`);
//     and a name at the start of a statement whose ")" is followed by "{", ":"
//     or throws (class and object-literal methods: `add(a, b) {`,
//     `load(): Promise<void> {`);
//   - the POI's own header: the first occurrence of the POI's Name (its last
//     segment when qualified, as in Calc.add) before the body starts, which is
//     at the first "{", "=>", ":" or ";" outside parentheses and brackets. This
//     covers `function add(a, b) {`, `async function add(`, `def add(a, b):`,
//     `func add(a, b int) int {`, `func (c *Calc) Add(a int) int {`,
//     `add(a, b) {`, `public int add(int a) {` and `const add = (a, b) => …`,
//     with decorators or annotations before them.
//
// Languages are told apart by FilePath's extension, where their rules differ:
//
//   - keywords: Go (.go), Python (.py) and JavaScript/TypeScript (the
//     extensions listed under IMPORTS) have their own tables, so a Go
//     function named lock or with, Python calls of func, map, range, type,
//     select, delete, lock or new, and JavaScript calls of func, fn, def,
//     map, range, type, select, go, lock, not or lambda (`return func(x)`),
//     are calls; void is an operator in JavaScript (`void run()` calls
//     run); any other file uses the table of all languages above;
//
//   - Python: a POI's calls are those of its own body. The bodies of the
//     functions and classes nested in it (lines indented under a nested def
//     or class) are left out: a class keeps its decorators, base-class
//     expressions, class-level statements and its methods' decorators and
//     default values, not its methods' calls;
//
//   - JavaScript and TypeScript: a class's calls are those of its own body:
//     its decorators, its extends expression, field initializers (an arrow
//     function assigned to a field included) and static blocks, not the
//     bodies of its methods (constructor, getters, setters and static
//     methods included), which are their own POIs. A method is a class
//     body member whose head is only names, modifiers, a computed [name],
//     "*", "?", "!" and type parameters, followed by its parameters, an
//     optional return type and "{";
//
//   - Go: a name followed by "(" at the start of a statement is a call (Go
//     defines functions only after func), so `if x := f(); g(y) {` calls f
//     and g. The scanner follows what the POI declares (receiver,
//     parameters, results, `x := …`, `var x T`, `var ( … )`, closures'
//     parameters, one scope for the whole POI) and writes what the call's
//     form says about its target into the reference's Name. An explicitly
//     instantiated call, f[T](x) or q.F[K, V](x), is a call of f or q.F (an
//     index by a declared name, fns[i](x), is not):
//
//     f()          -> f        a function of the caller's package
//     q.f()        -> q.f      q not declared in the POI: a function of package q
//     r.m()        -> (.T).m   r the method's receiver, of type T (`func (r *T)`)
//     x.m()        -> (.T).m   x of type T of the caller's package (`x *T`,
//     `var x T`, `x := &T{…}`, `x := T{…}`, `x := new(T)`)
//     x.m()        -> (q.T).m  x of type q.T (`x *q.T`, `x := &q.T{…}`);
//     likewise (T{}).m(), (&q.T{}).m(), (*T)(v).m() and y.(*q.T).m()
//     x.m()        -> {f}.m    x the value of a call (`x := f(…)`, `x, err :=
//     f(…)`): a method of f's first result type; likewise {q.F}.m
//     (`x := q.F(…)`), {(.T).M}.m (`x := y.M(…)` with y of type T) and
//     any such call form inside the braces ({{f}.M}.m, {{.T:f}.M}.m)
//     x.f.m()      -> {.T:f}.m  x of type T: a method of the type of T's
//     field f; likewise {q.T:f}.m, and `x := y.f` then x.m()
//     f(…).m()     -> {f}.m    a method called on a call's value directly:
//     the call's reference in braces, as for `x := f(…)` then x.m()
//     ({q.F}.m, {(.T).M}.m for y.M(…).m() with y of type T, and so on)
//     q.V.m()      -> (q).m    q not declared: a method of package q
//     x[i].m(), local of unknown type -> .m   a method of any package
//
//     Only a call whose form pins its target's package or receiver (f,
//     q.F, (.T).M, (q.T).M, {…}.M) gives its value a derived type: the
//     value of a guessed call (`x := y.M()` with y of unknown type, or
//     q.V.M()) is of unknown type, and x.m() is .m. A field of a derived
//     value (x.a.b.m(), or x.f.m() with `x := g()`) is of unknown type too:
//     its struct is known only while resolving. A derived reference nests
//     at most three deep, and its selector chain is at most four names
//     (a.b.c.d.m()); beyond that the call is .m. For `a, b := f()` only a
//     takes f's result type; `x := f().G()` takes
//     G's ({f}.G), and `x := f().g` (a field of a call's value) is of
//     unknown type.
//
//     In a test file of the corpus's root directory (an external test
//     package reaches its package under test through a qualifier the root
//     directory's empty name cannot match), every qualified reference q.N
//     (CALLS or EXTENDS) with N exported also gives ^.N, every member
//     call (q.T).m on a value of an exported type q.T also gives (^.T).m,
//     and every {q.F}.m (a method on the value of q.F(…)) also gives
//     {^.F}.m, which resolves only through the type the root's F returns.
//
//     Not references: builtins and conversions to predeclared types
//     (len(x), close(ch), string(b)), calls of a declared name (a function
//     value: fn(x)), member calls on a value of a predeclared type or
//     one without methods (`err error`, `[]T`, `map[K]V`, `func(…)`),
//     member calls on a local named err or …Err (closeErr) whose type the
//     POI does not show (`_, err := run()`, `if err := x.Do(); …`): by
//     convention an error, whose methods are the error interface's,
//     declared outside the corpus (as .Error it would link to the tree's
//     only Error method), and
//     the methods of sync.Mutex and sync.RWMutex (Lock, Unlock, RLock,
//     RUnlock, TryLock, TryRLock) on a field whose struct the POI does not
//     show (x.a.mu.Lock(), x.mu.Lock() with x a range variable): such a
//     field is a mutex by convention, and the call would otherwise be .m.
//     Embedded types keep their qualifier: `*io.Reader` gives EXTENDS
//     io.Reader. TargetName(ref) is the name a reference looks up (Reader).
//
// A recursive call in the body is returned; Lookup never resolves a reference
// to its own POI, so Extract and Lookup together create no self edge.
// Known misses: a Java method with a generic return type in a class body
// (`List<T> names() {`) reads as a call of names; explicitly instantiated
// TypeScript calls (foo<T>(x)) are not seen.
//
// EXTENDS and IMPLEMENTS, for class_declaration and interface_declaration, are
// read from the first declaration outside any braces only (the class header, or
// a Go type's body):
//
//   - JavaScript, TypeScript, Java: `class A extends B implements C, D {`, with
//     abstract, export, export default, anonymous classes and Java enums;
//     generic arguments are dropped and qualified names give their last segment
//     (`extends foo.Bar<T>` -> Bar). `interface A extends B, C {` gives EXTENDS
//     B and C. A call expression (`extends mix(A, B)`) is not a type; mix is a
//     CALLS reference of a class;
//   - Python: `class A(B, mod.C):` gives EXTENDS B and C. Keyword arguments
//     (metaclass=M), *args and **kwargs, calls, and the markers object, Generic
//     and Protocol (with or without [T] or a module prefix) are skipped; other
//     subscripted bases give their name (Base[T] -> Base);
//   - Go: in `type A struct {…}` and `type R interface {…}`, each line (or
//     ";"-separated element) that is only a type name, optionally a pointer,
//     qualified, instantiated or followed by a struct tag (`*pkg.C`, `List[T]`),
//     is an embedded type and gives EXTENDS (io.Reader -> Reader). Named fields,
//     methods such as `Close() error`, and type unions are not.
//
// The colon syntax of C++, C#, Kotlin and Swift (`class A : B`) is not read.
//
// IMPORTS, for import POIs, are the names the statements in RawCode bring in,
// as the exporting module names them:
//
//   - JavaScript/TypeScript: `import { a, b as c } from './x'` -> a, b;
//     `import X from 'y'` -> X; `import X, { y } from 'z'` -> X, y;
//     `export { a } from './x'` -> a; `import type { T } from` -> T;
//     `import X = require('x')` -> X; `const { a, b: c } = require('./x')` ->
//     a, b; `const X = require('x')` -> X. `import * as ns from 'x'`,
//     `export * from 'x'`, side-effect `import './x'`, dynamic import() and
//     `{ default as X }` import no names;
//   - Python: `from x import a, b as c` and `from x import (a,\n b)` -> a, b;
//     `import x.y` -> y (the last segment, as for Java); `from x import *` -> none;
//   - Go: `import "fmt"` and `import ( "fmt"; m "math" )` -> fmt, math: the
//     last path element, skipping a major version (github.com/x/y/v2 -> y,
//     gopkg.in/yaml.v3 -> yaml); an element that is not an identifier gives
//     nothing. A package is no POI, so these names find no target: a Go
//     import links only through supplied references (relay analyze's
//     typed ones name the functions and types the file uses through it);
//   - Java: `import com.x.Foo;` -> Foo; `import static com.x.U.helper;` ->
//     helper; `import com.x.*;` -> none.
//
// `import "x"` is a Go import unless FilePath has a JavaScript or TypeScript
// extension (.js, .jsx, .mjs, .cjs, .ts, .tsx, .mts, .cts, .vue, .svelte),
// where it is a side-effect import. When RawCode holds no import statement the
// resolver recognizes, the POI's own Name (when not empty) is the one imported
// name; a recognized statement that imports no names yields none.
//
// Extract de-duplicates references and sorts them by Type, then Name.
//
// # Lookup
//
// Accepts says which POI types a relationship can target, and Lookup applies
// the name lookup rule: a candidate in the source file wins over candidates
// elsewhere, and more than one candidate at the deciding level is Ambiguous
// rather than a guess.
//
// A Go source file's CALLS and EXTENDS references follow their form (see
// Extraction); a package is a directory, named after its last element:
//
//   - f (and EXTENDS T): functions (classes, interfaces) of the source's
//     directory, one of the source file first;
//   - q.f (EXTENDS q.T): functions (types) of a directory named q; none when
//     the package is outside the corpus, so io.ReadAll, errors.New and
//     strings.ToLower no longer link to a tree's ReadAll, New, ToLower. The
//     corpus's root directory has no name: qualified references never
//     reach it (its external tests reach it through ^.N);
//   - ().m: methods of the source's directory, one of the source file first
//     (the receiver's own type is usually declared there);
//   - (.T).m: methods declared on type T (Candidate.Receiver, read from
//     the method's header by Receiver) in the source's directory; a method
//     T has only through an embedded type is not found;
//   - (q.T).m: methods declared on type T in a directory named q;
//   - (.).m: methods of the source's directory, without file preference;
//   - (q).m: methods of a directory named q (sync.Mutex's Lock links to
//     nothing);
//   - .m: methods anywhere, without file preference. For ().m, (.).m,
//     (q).m and .m (the receiver's type is not known) a method of a
//     non-test file wins over one of a _test.go file;
//   - {X}.m: methods declared on the type X denotes (Candidate.Receiver),
//     in its package: for a call form X that pins its target (f, q.f,
//     (.T).M, (q.T).M, {…}.M), the first result type of X's target
//     (Candidate.Result: "R" is a type of the target's directory, "q.R"
//     one of a directory named q, "-" a type without methods); for T:f
//     with T of the form .T or q.T, the type of field f of the one struct
//     type T (Candidate.Fields, embedded types as fields named after
//     them); a conversion T(v) to a type of the source's package is of
//     type T. A qualifier q that names no directory declaring the call's
//     target or the struct may name the root package (which has no
//     directory name): then the root's T.M, F or struct T is read, from
//     any file but the root's own non-test ones (pgtype's tests'
//     conn.PgConn().Exec(…) on a conn *pgx.Conn). A type outside the
//     corpus or without methods has none: s.mu.Lock() on a sync.Mutex field
//     links to nothing. When X's type cannot be told (X unresolved,
//     ambiguous or a guess (.M, (.).M, ().M, (q).M), a field of a derived
//     struct, no result or field shown), the call resolves as a method of
//     the package X's form shows: (.).m for a call f; (q).m for q.F,
//     (q.T).M, a field of a type q.T no directory named q declares, and a
//     method called on a value of a type of package q ({Y}.M, Y of type
//     q.R), so rows.Next() on the *sql.Rows of db.Query(…) with db a
//     *sql.DB links to nothing; .m otherwise, and when q may be the root
//     (it declares T, or a method M: (pgx.Tx).M on the root's interface
//     Tx);
//   - ^.N: functions (types for EXTENDS) of the root directory, outside the
//     source file (which declares its own package's names, unqualified);
//   - (^.T).m: methods declared on type T in the root directory, outside
//     the source file (pgx's tests' conn.Query on a conn *pgx.Conn).
//
// ResultType and FieldTypes read a Go POI's header (its first 16 KiB), which
// DecodeSymbol keeps. LookupNames lists the names a reference's lookup
// reads candidates of: its target name and, for {X}.m, the names X spells
// whose candidates the lookup reads (functions, methods, struct types).
// Lookup given only the candidates of LookupNames(ref) resolves ref as
// given every candidate: no form reads a name its reference does not
// spell (a field of a derived struct is not read). When a publish changes
// one of them (a POI's result or fields changing changes its name), the
// reference is resolved again.
//
// A member call never resolves to a function, a plain call never to a
// method. A declaration of a _test.go file is a candidate only for the
// _test.go files of its directory (the package's test build), in every
// form. ReferenceKey gives the name whose change can change a reference's
// resolution (for re-resolution when a POI is published or removed): for a
// Go method called on a value of a known type, its receiver-qualified name
// (ReceiverName, which a publish reports besides the name). ByNameOnly says which files'
// references use the name-only rule.
//
// # Repositories
//
// Every lookup is within one repository: the candidates a caller gives
// Lookup are the POIs of the source's repository, so a name (lexical or
// derived) and a supplied reference by id ("id:…") never resolve across
// repositories. A supplied reference by symbol ("sym:…") that Lookup leaves
// Unknown in its own repository is given to LookupElsewhere with the POIs
// of that symbol in the other repositories: exactly one counting candidate
// resolves it (a SCIP-style symbol names its package and version, so a
// unique match elsewhere means something), two or more are Ambiguous.
package resolver
