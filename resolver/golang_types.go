package resolver

import (
	"context"
	"path"
	"slices"
	"strings"
)

// What the symbol table keeps of a Go POI's types, read from its RawCode's
// first maxShapeBytes bytes (ResultType, FieldTypes), and how a reference
// whose receiver is a value of such a type resolves (lookupDerived).
//
// A type is written "R" (a type of the declaring POI's package), "q.R" (a
// type of package q) or "-" (a type without methods: predeclared, slice,
// map, func, channel, a literal struct or interface).
//
// A derived reference {X}.m (GoRef, GoExpr) names method m of the type of
// the expression X: the first result of the target of a call that pins
// it, or the type of a field of a named struct type. Any other X has a
// type that cannot be told, and the call resolves as derivedFallback. A
// derived reference nests at most maxTypeDepth braces.

// maxShapeBytes bounds the RawCode that ResultType and FieldTypes read: a
// function's header, a struct's fields. DecodeSymbol decodes at least this
// much, so both read the same prefix whether the POI came whole or not.
const maxShapeBytes = 16 << 10

// maxTypeDepth bounds the nesting of a derived reference's braces.
const maxTypeDepth = 3

// noMethods is the type of a value without methods.
const noMethods = "-"

// shapeCode is the prefix of code that ResultType and FieldTypes read.
func shapeCode(code string) string {
	if len(code) <= maxShapeBytes {
		return code
	}
	return code[:maxShapeBytes]
}

// ResultType returns the type of a Go function's or method's first result,
// as its header shows it: "Tx" for `func (db *DB) Begin() (*Tx, error)`,
// "pgconn.PgConn" for `func f() (c *pgconn.PgConn)`, "List" for `func New()
// *List[T]`, "-" for a result without methods (error, []T). It is "" for a
// function without results, a result whose type is a type parameter (the
// function's or its receiver's: T of `func Must[T any](v T, err error) T`),
// any other POI, and a header it cannot read. It is the Result of the POI's
// Candidate.
func ResultType(p POI) string {
	if (p.Type != TypeFunction && p.Type != TypeMethod) || languageOf(p.FilePath) != langGo {
		return ""
	}
	z := newTokenizer(context.Background(), shapeCode(p.RawCode))
	if !z.next().isIdent("func") {
		return ""
	}
	var params []string // type parameters: the receiver's and the function's
	t := z.next()
	if t.isPunct("(") { // the receiver
		var ok bool
		if params, ok = receiverTypeParams(z); !ok {
			return ""
		}
		t = z.next()
	}
	if t.kind != tokIdent {
		return ""
	}
	t = z.next()
	if t.isPunct("[") { // type parameters
		var ok bool
		if params, ok = typeParamNames(z, params); !ok {
			return ""
		}
		t = z.next()
	}
	if !t.isPunct("(") || !skipBalanced(z, "(", ")") {
		return ""
	}
	var toks []token
	if z.peek().isPunct("(") {
		z.next()
		toks = firstResult(z)
	} else {
		for t := z.next(); t.kind != tokEOF && !t.isPunct("{") && len(toks) < maxParamTokens; t = z.next() {
			if t.nlBefore && len(toks) > 0 {
				break
			}
			toks = append(toks, t)
		}
	}
	return typeNameOutside(toks, params)
}

// typeNameOutside is typeName(toks), or "" (not known) when toks name one
// of the type parameters params: a type parameter is not a named type of
// the package (its methods are its constraint's).
func typeNameOutside(toks []token, params []string) string {
	typ := typeName(toks)
	if slices.Contains(params, typ) {
		return ""
	}
	return typ
}

// typeParamNames consumes a type parameter list whose "[" is consumed, up
// to its "]", and appends its names: the first name of each element (K and
// V of [K comparable, V any], of [K, V any], and of a receiver's [K, V]).
func typeParamNames(z *tokenizer, names []string) ([]string, bool) {
	start := true
	for depth := 1; ; {
		t := z.next()
		switch {
		case t.kind == tokEOF:
			return names, false
		case t.isPunct("[") || t.isPunct("(") || t.isPunct("{"):
			depth++
		case t.isPunct("]") || t.isPunct(")") || t.isPunct("}"):
			if depth--; depth == 0 {
				return names, true
			}
		case depth == 1 && t.isPunct(","):
			start = true
			continue
		case depth == 1 && start && t.kind == tokIdent:
			names = append(names, t.text)
		}
		start = false
	}
}

// receiverTypeParams consumes a method's receiver whose "(" is consumed, up
// to its ")", and returns the type parameters its type names (T of `(s
// *Stack[T])`).
func receiverTypeParams(z *tokenizer) ([]string, bool) {
	var names []string
	for depth := 1; ; {
		t := z.next()
		switch {
		case t.kind == tokEOF:
			return nil, false
		case t.isPunct("[") && depth == 1:
			var ok bool
			if names, ok = typeParamNames(z, names); !ok {
				return nil, false
			}
		case t.isPunct("("):
			depth++
		case t.isPunct(")"):
			if depth--; depth == 0 {
				return names, true
			}
		}
	}
}

// skipBalanced consumes tokens up to the close matching an open already
// consumed; it reports whether it found it.
func skipBalanced(z *tokenizer, open, close string) bool {
	for depth := 1; ; {
		t := z.next()
		switch {
		case t.kind == tokEOF:
			return false
		case t.isPunct(open):
			depth++
		case t.isPunct(close):
			if depth--; depth == 0 {
				return true
			}
		}
	}
}

// firstResult returns the type tokens of the first result of a result list
// whose "(" is consumed: `(*Tx, error)` -> *Tx, `(n int, err error)` -> int,
// `(a, b *T)` -> *T.
func firstResult(z *tokenizer) []token {
	var elems [][]token
	cur := []token{}
	for depth := 1; ; {
		t := z.next()
		switch {
		case t.kind == tokEOF:
			return nil
		case t.isPunct("(") || t.isPunct("[") || t.isPunct("{"):
			depth++
		case t.isPunct(")") || t.isPunct("]") || t.isPunct("}"):
			depth--
		}
		if depth == 0 || t.isPunct(",") && depth == 1 {
			elems = append(elems, cur)
			if depth == 0 || len(elems) > 8 {
				break
			}
			cur = []token{}
			continue
		}
		if len(cur) < maxParamTokens {
			cur = append(cur, t)
		}
	}
	named := false
	for _, e := range elems {
		if len(e) >= 2 && e[0].kind == tokIdent && !e[1].isPunct(".") && !e[1].isPunct("[") {
			named = true
			break
		}
	}
	if !named {
		return elems[0]
	}
	for _, e := range elems { // (a, b *T): a takes b's type
		if len(e) >= 2 {
			return e[1:]
		}
	}
	return nil
}

// typeName writes the type a type expression's tokens name: "R", "q.R",
// "-" (no methods) or "" (not a type it reads).
func typeName(toks []token) string {
	if len(toks) == 0 {
		return ""
	}
	t := goTypeOf(toks)
	switch {
	case t.kind == goTypeNoMethods:
		return noMethods
	case t.name == "":
		return ""
	case t.kind == goTypePkg:
		return t.pkg + "." + t.name
	}
	return t.name
}

// FieldTypes returns the fields of a Go struct type POI with their types,
// as "name type" pairs separated by spaces: `type Conn struct { pgConn
// *pgconn.PgConn; a, b int; Config }` gives "pgConn pgconn.PgConn a - b -
// Config Config" (an embedded type is the field named after it). Fields
// nested in a literal struct type, and fields whose type is one of the
// struct's type parameters, are left out. It is "" for any other POI.
// It is the Fields of the POI's Candidate.
func FieldTypes(p POI) string {
	if p.Type != TypeClass || languageOf(p.FilePath) != langGo {
		return ""
	}
	z := newTokenizer(context.Background(), shapeCode(p.RawCode))
	var params []string
	for t := z.next(); ; t = z.next() {
		switch {
		case t.kind == tokEOF:
			return ""
		case t.isPunct("["): // type parameters
			var ok bool
			if params, ok = typeParamNames(z, params); !ok {
				return ""
			}
			continue
		case t.isIdent("struct") && z.peek().isPunct("{"):
			z.next()
		case t.kind == tokIdent:
			continue
		default:
			return ""
		}
		break
	}
	var b strings.Builder
	var line []token
	flush := func() {
		if len(line) > 0 {
			writeFields(&b, line, params)
		}
		line = line[:0]
	}
	for depth := 1; ; {
		t := z.next()
		if t.nlBefore && depth == 1 {
			flush()
		}
		switch {
		case t.kind == tokEOF:
			flush()
			return b.String()
		case t.isPunct("{"):
			depth++
		case t.isPunct("}"):
			if depth--; depth == 0 {
				flush()
				return b.String()
			}
		case t.isPunct(";") && depth == 1:
			flush()
			continue
		}
		if len(line) < maxEmbedLineTokens {
			line = append(line, t)
		}
	}
}

// writeFields writes the fields of one struct body line: `a, b T "tag"`,
// `T`, `*q.T`. A field whose type is one of the struct's type parameters
// params is left out: its type is not known.
func writeFields(b *strings.Builder, line []token, params []string) {
	if name := embeddedType(line, true); name != "" {
		_, short, _ := strings.Cut(name, ".")
		if short == "" {
			short = name
		}
		writeField(b, short, name)
		return
	}
	var names []string
	i := 0
	for i < len(line) && line[i].kind == tokIdent {
		names = append(names, line[i].text)
		i++
		if i < len(line) && line[i].isPunct(",") {
			i++
			continue
		}
		break
	}
	if len(names) == 0 || i >= len(line) {
		return
	}
	typ := typeName(line[i:])
	if slices.Contains(params, typ) {
		return
	}
	if typ == "" {
		typ = noMethods
	}
	for _, n := range names {
		writeField(b, n, typ)
	}
}

func writeField(b *strings.Builder, name, typ string) {
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(typ)
}

// typeOfField returns the type of field name in fields (FieldTypes), or "".
func typeOfField(fields, name string) string {
	for fields != "" {
		var n, t string
		n, fields, _ = strings.Cut(fields, " ")
		t, fields, _ = strings.Cut(fields, " ")
		if n == name {
			return t
		}
	}
	return ""
}

// derivedNames appends the names the expression x depends on: every
// name whose candidates typeOf reads (the functions and methods of the
// calls x spells, the struct type T of T:f), so that Lookup given only the
// candidates of LookupNames resolves as given every candidate. A field of
// a derived struct adds none: typeOf reads nothing for it.
func derivedNames(x GoExpr, names []string) []string {
	name, ok := x.name()
	if !ok {
		return names
	}
	names = append(names, name)
	if x.Kind == GoExprCall && x.Call.Kind == GoDerived {
		return derivedNames(ParseGoExpr(x.Call.Of), names)
	}
	return names
}

// goTypeRef is a named type a derived reference found: type name in the
// directory dir, or in any directory named pkg.
type goTypeRef struct {
	dir, pkg, name string
}

// matches reports whether a POI of file fileID is declared in t's package.
func (t goTypeRef) matches(fileID string) bool {
	d := path.Dir(fileID)
	if t.pkg != "" {
		return d != "." && path.Base(d) == t.pkg
	}
	return d == t.dir
}

// typeIn reads a type as written in the symbol table ("R", "q.R", "-") for
// a POI of directory dir; ok is false for "" (not known) and methods false
// for "-".
func typeIn(typ, dir string) (ref goTypeRef, methods, ok bool) {
	switch typ {
	case "":
		return goTypeRef{}, false, false
	case noMethods:
		return goTypeRef{}, false, true
	}
	if q, name, qualified := strings.Cut(typ, "."); qualified {
		return goTypeRef{pkg: q, name: name}, true, true
	}
	return goTypeRef{dir: dir, name: typ}, true, true
}

// typeOf is the type the expression x (GoExpr) denotes for the source
// file sourceFile: ok is false when it cannot be told (its candidates are
// missing or ambiguous, or their headers do not show it), methods false
// when the type has no methods in the corpus' reach.
func typeOf(sourceID, sourceFile string, x GoExpr, cands []Candidate, depth int) (t goTypeRef, methods, ok bool) {
	if depth > maxTypeDepth {
		return goTypeRef{}, false, false
	}
	switch x.Kind {
	case GoExprField:
		return fieldTypeOf(sourceFile, x, cands)
	case GoExprNone:
		return goTypeRef{}, false, false
	}
	r := x.Call
	if !r.pinsTarget() {
		return goTypeRef{}, false, false
	}
	target, outcome := lookupGo(sourceID, sourceFile, r, Calls, cands, depth+1)
	if root, isQ := r.rootForm(); outcome == Unknown && isQ && rootVisible(sourceFile) {
		// q.F or (q.T).M where no directory named q declares it: q may
		// name the root package, which has no directory name.
		target, outcome = lookupGo(sourceID, sourceFile, root, Calls, cands, depth+1)
	}
	if outcome != Resolved {
		if !r.isPlain() || outcome != Unknown {
			return goTypeRef{}, false, false
		}
		// T(v): a conversion to a type of the source's package.
		var found distinctIDs
		for _, c := range cands {
			if c.Name == r.Name && (c.Type == TypeClass || c.Type == TypeInterface) && path.Dir(c.FileID) == path.Dir(sourceFile) &&
				visibleFrom(sourceFile, c.FileID) {
				found.add(c.POIID)
			}
		}
		if found.count != 1 {
			return goTypeRef{}, false, false
		}
		return goTypeRef{dir: path.Dir(sourceFile), name: r.Name}, true, true
	}
	for _, c := range cands {
		if c.POIID == target && c.Name == r.Name {
			return typeIn(c.Result, path.Dir(c.FileID))
		}
	}
	return goTypeRef{}, false, false
}

// fieldTypeOf is the type of the field expression x, T:f: the type of
// field f of the one struct type T visible from sourceFile.
func fieldTypeOf(sourceFile string, x GoExpr, cands []Candidate) (t goTypeRef, methods, ok bool) {
	if x.Struct.Derived {
		// A field of a derived struct: the struct's name is known only
		// while resolving, so LookupNames cannot list its candidates.
		return goTypeRef{}, false, false
	}
	var st goTypeRef
	q, name := x.Struct.pkg(), x.Struct.Name
	switch q {
	case ".":
		st = goTypeRef{dir: path.Dir(sourceFile), name: name}
	case rootPkg: // the root package, from its external tests: not the source's file
		st = goTypeRef{dir: ".", name: name}
	default:
		st = goTypeRef{pkg: q, name: name}
	}
	found, fields, dir := findStruct(sourceFile, st, q == rootPkg, cands)
	if found.count == 0 && st.pkg != "" && rootVisible(sourceFile) {
		// No directory named q declares T: q may name the root package.
		found, fields, dir = findStruct(sourceFile, goTypeRef{dir: ".", name: name}, true, cands)
	}
	if found.count != 1 {
		return goTypeRef{}, false, false
	}
	return typeIn(typeOfField(fields, x.Field), dir)
}

// derivedFallback is the reference a derived reference {X}.m resolves as
// when X's type cannot be told: a method of the package X's value belongs
// to as far as X's form shows it (fallbackPackage): (.).m for the
// source's package, (q).m for package q (none when q is outside the
// corpus), .m (any package) when it does not show.
func derivedFallback(sourceID, sourceFile string, x GoExpr, name string, cands []Candidate, depth int) GoRef {
	switch q := fallbackPackage(sourceID, sourceFile, x, cands, depth); q {
	case "":
		return GoRef{Kind: GoAnyMethod, Name: name}
	case ".":
		return GoRef{Kind: GoMethod, Typed: true, Name: name}
	default:
		return GoRef{Kind: GoMethod, Pkg: q, Name: name}
	}
}

// fallbackPackage is the package of the type of x's value when typeOf
// cannot tell the type: "." (the source's package) for the value of a
// call f; q for the value of a call q.F or (q.T).M, of a field of a type
// q.T that no directory named q declares (a type outside the corpus, whose
// fields are of types outside it too), and of a method called on a value
// of a type of package q ({X}.M with X of type q.R, or of package q
// itself); "" when x's form does not show it. A qualifier that may name
// the root package, which has no directory name (the root declares T, or
// a method M: (q.T).M on an interface T of the root), shows nothing.
func fallbackPackage(sourceID, sourceFile string, x GoExpr, cands []Candidate, depth int) string {
	switch x.Kind {
	case GoExprField:
		if q := x.Struct.pkg(); !x.Struct.Derived && isPackageName(q) && !declaresType(sourceFile, q, x.Struct.Name, cands) &&
			!rootDeclares(sourceFile, x.Struct.Name, false, cands) {
			return q
		}
		return ""
	case GoExprNone:
		return ""
	}
	r := x.Call
	switch {
	case r.isPlain():
		return "."
	case r.Kind == GoFunc && isPackageName(r.Pkg):
		return r.Pkg
	case r.Kind == GoMethod:
		if r.Typed && isPackageName(r.Pkg) && !rootDeclares(sourceFile, r.Name, true, cands) {
			return r.Pkg
		}
	case r.Kind == GoDerived:
		y := ParseGoExpr(r.Of)
		if t, methods, ok := typeOf(sourceID, sourceFile, y, cands, depth); ok {
			if methods && isPackageName(t.pkg) && !rootDeclares(sourceFile, r.Name, true, cands) {
				return t.pkg
			}
			return ""
		}
		if depth < maxTypeDepth {
			if q := fallbackPackage(sourceID, sourceFile, y, cands, depth+1); q != "." {
				return q
			}
		}
	}
	return ""
}

// rootDeclares reports whether the root package declares, visibly from
// sourceFile through a qualifier (rootVisible), a method (method) or a
// type named name.
func rootDeclares(sourceFile, name string, method bool, cands []Candidate) bool {
	if !rootVisible(sourceFile) {
		return false
	}
	for _, c := range cands {
		if c.Name != name || path.Dir(c.FileID) != "." || c.FileID == sourceFile || !visibleFrom(sourceFile, c.FileID) {
			continue
		}
		if method && c.Type == TypeMethod || !method && (c.Type == TypeClass || c.Type == TypeInterface) {
			return true
		}
	}
	return false
}

// declaresType reports whether a directory named q declares a type named
// name visible from sourceFile, among cands.
func declaresType(sourceFile, q, name string, cands []Candidate) bool {
	t := goTypeRef{pkg: q, name: name}
	for _, c := range cands {
		if c.Name == name && (c.Type == TypeClass || c.Type == TypeInterface) && t.matches(c.FileID) && visibleFrom(sourceFile, c.FileID) {
			return true
		}
	}
	return false
}

// lookupDerived resolves the derived reference {x}.name: among the methods
// named name declared on the type x denotes, in its package; as
// derivedFallback when that type cannot be told.
func lookupDerived(sourceID, sourceFile string, x GoExpr, name string, cands []Candidate, depth int) (string, Outcome) {
	t, methods, ok := typeOf(sourceID, sourceFile, x, cands, depth)
	if !ok {
		if x.isRoot() {
			// {^.F}.m, {(^.T).M}.m and {^.T:f}.m only add what the root
			// package's types tell ({q.F}.m, which an external test of the
			// root package gives with it, keeps its own fallback).
			return "", Unknown
		}
		fallback := derivedFallback(sourceID, sourceFile, x, name, cands, depth)
		return lookupGo(sourceID, sourceFile, fallback, Calls, cands, depth)
	}
	if !methods {
		return "", Unknown
	}
	ids := findMethods(sourceID, sourceFile, t, name, false, cands)
	if ids.count == 0 && t.pkg != "" && rootVisible(sourceFile) {
		// No directory named q declares q.T's method: q may name the root
		// package.
		ids = findMethods(sourceID, sourceFile, goTypeRef{dir: ".", name: t.name}, name, true, cands)
	}
	return decide(ids)
}

// findMethods counts the methods named name declared on type t visible
// from sourceFile, other than the source POI; notOwnFile leaves out those
// of sourceFile (a root form's lookup from an external test).
func findMethods(sourceID, sourceFile string, t goTypeRef, name string, notOwnFile bool, cands []Candidate) distinctIDs {
	var ids distinctIDs
	for _, c := range cands {
		if c.Name == name && c.Type == TypeMethod && c.Receiver == t.name && c.POIID != sourceID && t.matches(c.FileID) &&
			visibleFrom(sourceFile, c.FileID) && (!notOwnFile || c.FileID != sourceFile) {
			ids.add(c.POIID)
		}
	}
	return ids
}

// findStruct counts the struct types st visible from sourceFile, and
// returns the fields and directory of the first; notOwnFile leaves out
// those of sourceFile.
func findStruct(sourceFile string, st goTypeRef, notOwnFile bool, cands []Candidate) (found distinctIDs, fields, dir string) {
	for _, c := range cands {
		if c.Name == st.name && c.Type == TypeClass && st.matches(c.FileID) && visibleFrom(sourceFile, c.FileID) &&
			(!notOwnFile || c.FileID != sourceFile) {
			if found.add(c.POIID); found.count == 1 {
				fields, dir = c.Fields, path.Dir(c.FileID)
			}
		}
	}
	return found, fields, dir
}

// rootVisible reports whether code of sourceFile may refer to the root
// package through a qualifier: any file but the root package's own
// non-test files (its external tests, package x_test, do).
func rootVisible(sourceFile string) bool {
	return path.Dir(sourceFile) != "." || isGoTestFile(sourceFile)
}
