package resolver

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Go CALLS references carry what the call's form says about its target, in
// their Name: a GoRef, which the scanner below writes and Lookup reads
// (docs/references.md lists which call gives which form).
//
// Calls that cannot reach a POI of the corpus are not references: builtins
// and conversions to predeclared types (len(x), string(b)), calls of a
// parameter or local variable (fn(x)), and member calls on a value whose
// type is predeclared or has no methods (err.Error(), s[i], m[k]) or is
// by convention error (isErrorName).

// goTypeKind is what is known of the type of a Go local name.
type goTypeKind uint8

const (
	goTypeUnknown   goTypeKind = iota // declared, type not known
	goTypeNoMethods                   // predeclared, slice, map, func, chan, literal
	goTypeSamePkg                     // a named type of the POI's package
	goTypeRecv                        // the method's own receiver
	goTypePkg                         // a named type of package pkg
)

type goType struct {
	kind goTypeKind
	pkg  string
	name string // the named type, when the tokens show it (T of *T, q.T, T[K])
	// of, when not empty, is the expression X of a derived reference
	// {X}.m (GoExpr: "f", "(.T).M", ".T:fld"): the value of a call's
	// result or of a field; kind is then what the tokens alone show.
	of string
}

// histLen is how many previous tokens the scanner keeps: enough for a
// member call on a chain of four names (a.b.c.d.N).
const histLen = 9

// maxChain is the longest selector chain (a.b.c.d) the scanner reads a
// value's type from.
const maxChain = 4

// goScope is what a Go POI declares: its receiver, parameters, results and
// local variables (closures' included: one scope for the whole POI), with
// their types as far as the tokens show them.
type goScope struct {
	locals map[string]goType

	groups  int  // parameter lists completed
	recv    bool // the POI is a method: its first list is the receiver
	sig     bool // in a func signature
	sigBase int  // paren depth of the func keyword
	group   bool // collecting a parameter list
	elems   [][]token

	// decl is the first name declared with the value of a call, while the
	// chain of calls of that value is read (declState), at paren depth
	// declDepth; chained: a call after the first one (`.G(` of a.F().G()).
	decl      string
	declDepth int
	declState uint8
	chained   bool

	// varGroup: in the parenthesized specs of `var (`, opened at paren
	// depth varDepth.
	varGroup bool
	varDepth int
}

// armDecl starts following the value chain of the declaration of name.
func (g *goScope) armDecl(name string, depth int) {
	g.decl, g.declDepth, g.declState, g.chained = name, depth, declArmed, false
}

// callOpened tells the scope that a call that is a reference opens at
// paren depth depth.
func (g *goScope) callOpened(depth int) {
	if g.declState == declArmed && depth == g.declDepth {
		g.declState = declOpen
	}
}

// callClosed tells the scope that the call of reference ref, opened at
// paren depth depth, closed; next and the two tokens after it follow. A
// declaration whose value is that call takes its value, unless the chain
// goes on: `).G(` makes G's call the value, `).f` or `).(T)` a value of
// unknown type.
func (g *goScope) callClosed(ref string, depth int, next, then1, then2 token) {
	if g.declState != declOpen || depth != g.declDepth {
		return
	}
	if next.isPunct(".") {
		if then1.kind == tokIdent && then2.isPunct("(") {
			g.declState, g.chained = declArmed, true
			return
		}
		g.declare(g.decl, goType{})
		g.declState = declNone
		return
	}
	if g.chained {
		g.declare(g.decl, goType{of: derivedExpr(ref)})
	}
	g.declState = declNone
}

// A declaration's value chain: declared while the calls of `x := a.F().G()`
// are read, so that x takes the value of the chain's last call.
const (
	declNone  uint8 = iota
	declArmed       // the next call at declDepth is the value's
	declOpen        // that call's "(" is open
)

// maxParamTokens bounds the tokens kept per parameter.
const maxParamTokens = 8

func (g *goScope) declare(name string, t goType) {
	if name == "_" || name == "" {
		return
	}
	if g.locals == nil {
		g.locals = make(map[string]goType)
	}
	g.locals[name] = t
}

// observe tracks declarations; depth is the paren depth before t.
func (g *goScope) observe(t token, depth int, z *tokenizer, hist *[histLen]token) {
	if g.declState == declArmed && (t.nlBefore && !hist[0].isPunct(".") || depth < g.declDepth) {
		g.declState = declNone // the value was no call the scanner follows (`func() {…}()`)
	}
	if g.group {
		switch {
		case t.isPunct(")") && depth == g.sigBase+1:
			g.group = false
			g.params()
		case t.isPunct(",") && depth == g.sigBase+1:
			g.elems = append(g.elems, nil)
		default:
			if e := &g.elems[len(g.elems)-1]; len(*e) < maxParamTokens {
				*e = append(*e, t)
			}
		}
		return
	}
	switch {
	case t.isIdent("func"):
		g.sig, g.sigBase = true, depth
		return
	case g.sig && t.isPunct("(") && depth == g.sigBase:
		g.group, g.elems = true, [][]token{nil}
		if g.groups == 0 && hist[0].isIdent("func") && hist[1].kind == tokEOF {
			g.recv = true // func (r *T) M(
		}
		return
	case g.sig && (t.isPunct("{") || t.nlBefore || depth < g.sigBase):
		g.sig = false
	}
	switch {
	case t.isPunct(":") && z.peek().isPunct("=") && !z.peek().nlBefore:
		// a, b := value: a value's derived type is its first name's.
		typ, call := g.valueType(z, 1)
		var names []string
		for i := 0; i < len(hist) && hist[i].kind == tokIdent; i += 2 {
			names = append(names, hist[i].text)
			if i+1 >= len(hist) || !hist[i+1].isPunct(",") {
				break
			}
		}
		for i, n := range names {
			t := typ
			if i < len(names)-1 {
				// A later name takes a later result (`c, s := net.Pipe()`):
				// of the call's package at most, its type not shown.
				t.of = ""
			}
			g.declare(n, t)
		}
		if call && len(names) > 0 {
			g.armDecl(names[len(names)-1], depth)
		}
	case t.isIdent("var") && z.peek().kind == tokIdent:
		// var x T, var x = value
		g.varSpec(z.peek().text, z, 1, depth)
	case t.isIdent("var") && z.peek().isPunct("("):
		g.varGroup, g.varDepth = true, depth
	case g.varGroup && t.isPunct(")") && depth == g.varDepth+1:
		g.varGroup = false
	case g.varGroup && t.kind == tokIdent && t.nlBefore && depth == g.varDepth+1:
		// var (\n\tx T\n\ty = value\n)
		g.varSpec(t.text, z, 0, depth)
	}
}

// varSpec declares name, of a var declaration whose type or "=" is the
// token i ahead: `x T`, `x = value`, `x T = value` (the type wins).
func (g *goScope) varSpec(name string, z *tokenizer, i, depth int) {
	nx := z.peekAt(i)
	if nx.isPunct("=") {
		typ, call := g.valueType(z, i+1)
		g.declare(name, typ)
		if call {
			g.armDecl(name, depth)
		}
		return
	}
	if nx.nlBefore {
		return
	}
	var toks []token
	for ; i < lookahead; i++ {
		tk := z.peekAt(i)
		if tk.nlBefore || tk.kind == tokEOF || tk.isPunct("=") {
			break
		}
		toks = append(toks, tk)
	}
	g.declare(name, goTypeOf(toks))
}

// isLocal reports whether name is declared in the POI.
func (g *goScope) isLocal(name string) bool {
	_, ok := g.locals[name]
	return ok
}

// instantiationAt returns the index of the "(" that follows the type
// argument list `[T, q.U, *V, []W, map[K]V]` starting at token i ahead
// (its "["), or 0 when the tokens there are not one on one line followed
// by "(" within the tokenizer's lookahead: an index (`xs[i](`, i local,
// `xs[0](`, `xs[i+1](`) is not.
func (g *goScope) instantiationAt(z *tokenizer, i int) int {
	depth := 0
	for ; i < lookahead; i++ {
		t := z.peekAt(i)
		switch {
		case t.nlBefore && depth > 0:
			return 0
		case t.isPunct("["):
			depth++
		case t.isPunct("]"):
			depth--
			if depth == 0 {
				if i+1 < lookahead && z.peekAt(i+1).isPunct("(") && !z.peekAt(i+1).nlBefore {
					return i + 1
				}
				return 0
			}
		case t.kind == tokIdent:
			if g.isLocal(t.text) {
				return 0
			}
		case t.isPunct(".") || t.isPunct(",") || t.isPunct("*"):
		default:
			return 0
		}
	}
	return 0
}

// params declares the names of a completed parameter list: `(a, b int, c
// *pkg.T)`; a list of types only (`(int, error)`) declares nothing.
func (g *goScope) params() {
	named := false
	for _, e := range g.elems {
		if len(e) >= 2 && e[0].kind == tokIdent && !e[1].isPunct(".") {
			named = true
			break
		}
	}
	if !named {
		return
	}
	g.groups++
	if g.recv && g.groups == 1 {
		if e := g.elems[0]; len(e) >= 2 && e[0].kind == tokIdent {
			g.declare(e[0].text, goType{kind: goTypeRecv, name: goTypeOf(e[1:]).name})
		}
		return
	}
	var pending []string
	for _, e := range g.elems {
		if len(e) == 0 || e[0].kind != tokIdent {
			continue
		}
		pending = append(pending, e[0].text)
		if len(e) == 1 {
			continue // a, b int: a takes b's type
		}
		typ := goTypeOf(e[1:])
		for _, n := range pending {
			g.declare(n, typ)
		}
		pending = pending[:0]
	}
}

// valueType is the type of the value starting i tokens ahead: `&T{`, `T{`,
// `q.T{`, `new(T)`, `new(q.T)`; a call `F(…)` (the POI's package, and the
// result of F), `q.F(…)` (package q, and the result of q.F), `x.M(…)`,
// `x.f.M(…)` (the result of the method call); a field `x.f`; unknown
// otherwise. call reports whether the value starts with a call that is a
// reference (the scanner follows its chain: `x := a.F().G()` is G's value).
func (g *goScope) valueType(z *tokenizer, i int) (typ goType, call bool) {
	t := z.peekAt(i)
	if t.isPunct("&") {
		i++
		t = z.peekAt(i)
	}
	isNew := false
	if t.isIdent("new") && z.peekAt(i+1).isPunct("(") {
		i += 2
		t = z.peekAt(i)
		isNew = true
	}
	if t.kind != tokIdent || t.nlBefore {
		return goType{}, false
	}
	if goBuiltins[t.text] {
		return goType{kind: goTypeNoMethods}, false
	}
	// The selector chain a.b.c and the token after it.
	var buf [maxChain]string
	chain := buf[:0]
	for {
		chain = append(chain, z.peekAt(i).text)
		if d, n := z.peekAt(i+1), z.peekAt(i+2); !d.isPunct(".") || n.kind != tokIdent || len(chain) == maxChain {
			break
		}
		i += 2
	}
	after := z.peekAt(i + 1)
	if after.isPunct("[") && (len(chain) == 1 || len(chain) == 2 && !g.isLocal(chain[0])) {
		if j := g.instantiationAt(z, i+1); j > 0 {
			after = z.peekAt(j) // f[T](…), q.F[T](…): a call of f, q.F
		}
	}
	if after.isPunct(".") {
		return goType{}, false // x.(T), a longer chain
	}
	call = after.isPunct("(") && !isNew
	first := chain[0]
	if _, local := g.locals[first]; local {
		if isNew || len(chain) == 1 {
			return goType{}, false
		}
		if call {
			if ref := g.callRef(chain); ref != "" {
				return goType{of: derivedExpr(ref)}, true
			}
			return goType{}, false
		}
		return goType{of: g.fieldExpr(chain)}, false
	}
	switch len(chain) {
	case 1:
		switch {
		case after.isPunct("{"), isNew && after.isPunct(")"):
			return goType{kind: goTypeSamePkg, name: first}, false // &T{…}, T{…}, new(T)
		case call:
			return goType{kind: goTypeSamePkg, of: derivedExpr(first)}, true // newT(…)
		case after.isPunct(")"):
			return goType{kind: goTypeSamePkg}, false
		}
		return goType{}, false
	case 2:
		typ := goType{kind: goTypePkg, pkg: first}
		switch {
		case after.isPunct("{"), isNew && after.isPunct(")"):
			typ.name = chain[1] // &q.T{…}, new(q.T)
		case call:
			typ.of = derivedExpr(GoRef{Kind: GoFunc, Pkg: first, Name: chain[1]}.String()) // q.New(…)
		}
		return typ, call
	}
	if call {
		return goType{of: derivedExpr(g.callRef(chain))}, true // q.V.M(…)
	}
	return goType{}, false
}

// derivedExpr is the expression X of a derived reference {X}.m on the
// value of call reference ref: ref itself, or "" when its type is not
// read: ref's form does not pin its target's package or receiver
// (GoRef.pinsTarget: .M, (.).M, ().M, (q).M are guesses), or {ref}.m
// would nest deeper than maxTypeDepth.
func derivedExpr(ref string) string {
	if ref == "" {
		return ""
	}
	if r, ok := ParseGoRef(ref); !ok || !r.pinsTarget() || r.nesting() >= maxTypeDepth {
		return ""
	}
	return ref
}

// fieldExpr is the expression X of a derived reference on the value of
// the selector x.f, where x is a local name of a named type (.T or q.T):
// .T:f; "" otherwise. A field of a derived value (x.a.b, or x.f with x :=
// g()) has no expression: its struct is known only while resolving, so
// LookupNames could not name it, and a call on it is the plain member
// call .m.
func (g *goScope) fieldExpr(chain []string) string {
	if len(chain) != 2 {
		return ""
	}
	t := g.locals[chain[0]]
	if t.of != "" || t.name == "" {
		return ""
	}
	st := GoStruct{Qualified: true, Name: t.name}
	switch t.kind {
	case goTypeSamePkg, goTypeRecv:
	case goTypePkg:
		st.Pkg = t.pkg
	default:
		return ""
	}
	return GoExpr{Kind: GoExprField, Struct: st, Field: chain[1]}.String()
}

// goTypeOf judges a type expression's tokens.
func goTypeOf(toks []token) goType {
	i := 0
	for i < len(toks) && toks[i].isPunct("*") {
		i++
	}
	if i >= len(toks) {
		return goType{}
	}
	t := toks[i]
	if t.kind != tokIdent {
		return goType{kind: goTypeNoMethods} // []T, [N]T, ...T, <-chan T
	}
	switch t.text {
	case "map", "chan", "func", "struct", "interface":
		return goType{kind: goTypeNoMethods}
	}
	if goBuiltins[t.text] {
		return goType{kind: goTypeNoMethods}
	}
	if i+2 < len(toks) && toks[i+1].isPunct(".") && toks[i+2].kind == tokIdent {
		return goType{kind: goTypePkg, pkg: t.text, name: toks[i+2].text}
	}
	return goType{kind: goTypeSamePkg, name: t.text}
}

// plain returns the reference of a Go call `name(`, or "".
func (g *goScope) plain(name string) string {
	if goBuiltins[name] {
		return ""
	}
	if _, local := g.locals[name]; local {
		return "" // a function value
	}
	return name
}

// member returns the reference of a Go member call `….name(`, given the
// history before it (hist[0] is the "."), or "".
func (g *goScope) member(name string, hist *[histLen]token) string {
	// The selector chain before name: hist[1], hist[3], … back to a name
	// that does not follow a ".".
	var buf [maxChain + 1]string
	n := 0
	for i := 1; ; i += 2 {
		if i+1 >= len(hist) || n == maxChain || hist[i].kind != tokIdent {
			if t, ok := parenType(hist); ok && i == 1 {
				return memberRef(t, name) // (T{}).N(, (*q.T)(x).N(
			}
			return GoRef{Kind: GoAnyMethod, Name: name}.String() // f().N( (the scanner makes it {f}.N), x[i].N(, a long chain
		}
		buf[n] = hist[i].text
		n++
		if !isMemberAccess(hist[i+1]) {
			break
		}
	}
	chain := buf[:n+1]
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	chain[n] = name
	return g.callRef(chain)
}

// callRef returns the reference of a Go call of the selector chain
// a.b.….name, or "" when it is no reference.
func (g *goScope) callRef(chain []string) string {
	name := chain[len(chain)-1]
	if len(chain) == 1 {
		return g.plain(name)
	}
	first := chain[0]
	lt, local := g.locals[first]
	if !local {
		switch len(chain) {
		case 2:
			return GoRef{Kind: GoFunc, Pkg: first, Name: name}.String() // q.N(
		case 3:
			return GoRef{Kind: GoMethod, Pkg: first, Name: name}.String() // q.V.N(: a method of package q
		}
		return GoRef{Kind: GoAnyMethod, Name: name}.String()
	}
	if len(chain) == 2 {
		if name == "Error" && lt.name == "" && lt.of == "" && lt.kind != goTypeRecv && isErrorName(first) {
			return "" // err.Error(): a method of the error interface, by convention
		}
		return memberRef(lt, name)
	}
	if t := g.fieldExpr(chain[:len(chain)-1]); t != "" {
		return GoRef{Kind: GoDerived, Of: t, Name: name}.String() // x.f.N(: a method of the type of field f
	}
	if lockerMethods[name] {
		return "" // x.a.mu.Lock(): a field whose struct is not known, a mutex by convention
	}
	return GoRef{Kind: GoAnyMethod, Name: name}.String()
}

// isErrorName reports whether a local name is, by Go's convention, a
// value of the interface type error: err, or a name ending in Err
// (closeErr, parseErr). A call of Error, the error interface's only
// method, on such a local whose type the POI does not show (`_, err :=
// run()`, `if err := c.Execute(); …`, `for _, err := range errs`) is a
// call through that interface, declared outside the corpus, and no
// reference: as (.).Error or .Error it would link to the tree's only
// Error method (cobra's flagCompError's). Any other method is no
// error's, so the local is of another type (`switch err := e.(type)`'s
// err.Field(), `for _, stdErr := range ws`' stdErr.Write) and its call
// keeps its reference. A
// local whose type the POI shows keeps its form: `err := &ParseError{…}`
// gives (.ParseError).Error, `err := parse()` {parse}.Error (none when
// parse returns error), and `err error` is a predeclared type.
func isErrorName(name string) bool {
	return name == "err" || len(name) > 3 && strings.HasSuffix(name, "Err")
}

// lockerMethods are the methods of sync.Mutex and sync.RWMutex. Called on
// a field whose struct the POIs do not show (x.a.mu.Lock(), x.mu.Lock()
// with x a range variable or a field of a derived value), they are not
// references: a field so called is a mutex by convention, and as the plain
// member call .Lock it would link to the tree's only Lock method
// (net/http's fakeLocker).
var lockerMethods = map[string]bool{
	"Lock": true, "Unlock": true, "RLock": true, "RUnlock": true, "TryLock": true, "TryRLock": true,
}

// memberRef returns the reference of a call of method name on a value of
// type t, or "" when it is no reference.
func memberRef(t goType, name string) string {
	if t.of != "" {
		return GoRef{Kind: GoDerived, Of: t.of, Name: name}.String()
	}
	r := GoRef{Kind: GoMethod, Name: name}
	switch t.kind {
	case goTypeNoMethods:
		return ""
	case goTypeSamePkg, goTypeRecv:
		// (.T).m; (.).m on a value of the package, ().m on the receiver
		r.Typed, r.Type = t.name != "" || t.kind != goTypeRecv, t.name
	case goTypePkg:
		r.Pkg, r.Typed, r.Type = t.pkg, t.name != "", t.name // (q.T).m, (q).m
	default:
		r = GoRef{Kind: GoAnyMethod, Name: name}
	}
	return r.String()
}

// parenType is the type of the parenthesized value whose ")" is hist[1]
// (hist[0] the "." of a member call on it), when the tokens show it: a
// composite literal without elements, `(T{})`, `(&q.T{})`; a conversion
// of a name, `(*T)(x)`, `(q.T)(v)`; a type assertion, `x.(*net.TCPConn)`.
// ok is false for anything else (a call's value, `f(T{}).M(`, is the
// scanner's).
func parenType(hist *[histLen]token) (t goType, ok bool) {
	i, assertion := 2, false
	switch {
	case hist[2].isPunct("}") && hist[3].isPunct("{"):
		i = 4 // (T{})
	case hist[2].kind == tokIdent && hist[3].isPunct("(") && hist[4].isPunct(")"):
		i = 5 // (T)(x)
	default:
		assertion = true // x.(T)
	}
	if hist[i].kind != tokIdent {
		return goType{}, false
	}
	j := i + 1
	var buf [3]token
	toks := append(buf[:0], hist[i])
	if hist[j].isPunct(".") && hist[j+1].kind == tokIdent {
		toks = append(buf[:0], hist[j+1], hist[j], hist[i]) // q.T
		j += 2
	}
	if j < histLen && (hist[j].isPunct("*") || !assertion && hist[j].isPunct("&")) {
		j++
	}
	switch {
	case assertion:
		if j+1 >= histLen || !hist[j].isPunct("(") || !hist[j+1].isPunct(".") {
			return goType{}, false
		}
	case j >= histLen:
	case !hist[j].isPunct("("):
		return goType{}, false
	case j+1 < histLen && !hist[j].nlBefore:
		if p := hist[j+1]; p.kind == tokIdent && goKeywords[p.text] == kwNone || p.isPunct(")") || p.isPunct("]") || p.isPunct("}") {
			return goType{}, false // f(T{}).M(, f(*T)(x): a call's value
		}
	}
	return goTypeOf(toks), true
}

// Receiver returns the name of the type a Go method POI is declared on, as
// its header shows it: Conn for `func (c *Conn) Query(`, List for
// `func (l *List[T]) Push(`. It is "" for any other POI, and for a header
// it cannot read. It is the Receiver of the POI's Candidate.
func Receiver(p POI) string {
	if p.Type != TypeMethod || languageOf(p.FilePath) != langGo {
		return ""
	}
	z := newTokenizer(context.Background(), p.RawCode)
	if !z.next().isIdent("func") || !z.next().isPunct("(") {
		return ""
	}
	var last string
	for i := 0; i < maxParamTokens; i++ {
		switch t := z.next(); {
		case t.kind == tokIdent:
			last = t.text
		case t.isPunct("*"):
		case t.isPunct(")") || t.isPunct("["):
			return last
		default:
			return ""
		}
	}
	return ""
}

// isRootTestFile reports whether filePath is a Go test file in the corpus's
// root directory, whose external test package (package x_test) reaches the
// root package only through a qualifier: the root directory has no name
// for the qualifier to match.
func isRootTestFile(filePath string) bool {
	return languageOf(filePath) == langGo && !strings.Contains(filePath, "/") && strings.HasSuffix(filePath, "_test.go")
}

// addRootForms adds, for each qualified reference q.N of refs with N
// exported, its root form ^.N: N of the root package, whatever q is; for
// each member call (q.T).N on a value of an exported type q.T, its root
// form (^.T).N: method N of the root package's type T; and for each
// {q.F}.N and {q.T:f}.N, {^.F}.N and {^.T:f}.N.
func addRootForms(refs *refSet) {
	for _, ref := range refs.refs {
		if ref.Type != Calls && ref.Type != Extends {
			continue
		}
		r, ok := ParseGoRef(ref.Name)
		switch {
		case !ok:
		case r.Kind == GoDerived && ref.Type == Calls:
			// {q.F}.m: a method of the type q.F's result has; {^.F}.m when
			// q is the root package (and {q.T:f}.m likewise).
			if x, ok := ParseGoExpr(r.Of).rootForm(); ok {
				refs.add(Calls, GoRef{Kind: GoDerived, Of: x.String(), Name: r.Name}.String())
			}
		case r.Kind == GoMethod && ref.Type == Calls:
			if r.Typed && r.Pkg != "" && r.Pkg != rootPkg && isExported(r.Type) {
				refs.add(Calls, GoRef{Kind: GoMethod, Pkg: rootPkg, Typed: true, Type: r.Type, Name: r.Name}.String())
			}
		case r.Kind == GoFunc && isPackageName(r.Pkg) && isExported(r.Name):
			refs.add(ref.Type, GoRef{Kind: GoFunc, Pkg: rootPkg, Name: r.Name}.String())
		}
	}
}

// isExported reports whether a Go name starts with an upper-case letter.
func isExported(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r)
}
