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
// # Extraction
//
// Extract reads a POI's RawCode with a hand-written tokenizer that understands
// JavaScript, TypeScript, Python, Go and Java (and most C-like code) well
// enough to find references. It is not a parser: it works on tokens, in one
// pass, in time linear in the size of the code, checking its context every
// 4 KiB. Everything inside comments and string literals is ignored:
//
//   - comments: // and # to end of line (# is a comment everywhere, so a JS
//     private name like #save or a C preprocessor line is skipped), /* … */;
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
// A recursive call in the body is returned; Lookup never resolves a reference
// to its own POI, so Extract and Lookup together create no self edge.
// Known misses: a Java method with a generic return type in a class body
// (`List<T> names() {`) reads as a call of names; explicitly instantiated
// generic calls (TypeScript foo<T>(x), Go Map[int](xs)) are not seen.
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
//     nothing;
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
package resolver
