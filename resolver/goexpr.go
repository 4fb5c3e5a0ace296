package resolver

import "strings"

// GoExpr is the expression X of a derived reference {X}.m: the value whose
// type's method m is called. It is one of
//
//	a call reference that pins its target (f, q.F, (.T).M, {…}.M; GoExprCall):
//	    X's value is the first result of X's target
//	T:f with T one of .T, q.T, ^.T (GoExprField): X's value is field f of
//	    struct type T; {…}:f, a field of a derived struct, is not told
//
// and ParseGoExpr reads it, String writes it. A call reference whose form
// does not pin its target (.M, (q).M) has a type that cannot be told: the
// reference resolves as a method of the package X's form shows (see
// docs/references.md).
type GoExpr struct {
	Kind GoExprKind
	// Call is X when Kind is GoExprCall.
	Call GoRef
	// Struct and Field are T and f of T:f when Kind is GoExprField.
	Struct GoStruct
	Field  string
	// text is X when Kind is GoExprNone.
	text string
}

// GoExprKind is the form of a GoExpr.
type GoExprKind uint8

// The forms of a derived reference's expression.
const (
	// GoExprCall is the value of a call: X is a GoRef.
	GoExprCall GoExprKind = iota
	// GoExprField is a field of a struct: X is T:f.
	GoExprField
	// GoExprNone is text that is neither: a call whose qualifier opens
	// "(" without closing it. Its type is never told.
	GoExprNone
)

// GoStruct is the struct type T of a field expression T:f: a named type
// (Pkg.Name, or Name alone), or the type of a derived expression ({Of}).
type GoStruct struct {
	// Derived is whether T is {Of}: a field of a derived struct, whose
	// name is known only while resolving.
	Derived bool
	Of      string
	// Qualified is whether T is written Pkg.Name: Pkg "" (.T) is the
	// caller's package, as is "." (..T, which reads as .T), "^" the root
	// package, any other text a package named so. A T without qualifier
	// names no struct.
	Qualified bool
	Pkg       string
	Name      string
}

// ParseGoExpr reads the expression X of a derived reference {X}.m. Every
// text is one: String gives it back.
func ParseGoExpr(x string) GoExpr {
	if typ, field, ok := cutField(x); ok {
		e := GoExpr{Kind: GoExprField, Field: field}
		switch i := strings.LastIndexByte(typ, '.'); {
		case len(typ) >= 2 && typ[0] == '{' && typ[len(typ)-1] == '}':
			e.Struct = GoStruct{Derived: true, Of: typ[1 : len(typ)-1]}
		case i >= 0:
			e.Struct = GoStruct{Qualified: true, Pkg: typ[:i], Name: typ[i+1:]}
		default:
			e.Struct = GoStruct{Name: typ}
		}
		return e
	}
	if r, ok := ParseGoRef(x); ok {
		return GoExpr{Kind: GoExprCall, Call: r}
	}
	return GoExpr{Kind: GoExprNone, text: x}
}

// cutField splits a field expression "T:f" at its last ":" outside braces;
// ok is false when there is none (a call reference).
func cutField(x string) (typ, field string, ok bool) {
	depth := 0
	for i := len(x) - 1; i >= 0; i-- {
		switch x[i] {
		case '}':
			depth++
		case '{':
			depth--
		case ':':
			if depth == 0 {
				return x[:i], x[i+1:], true
			}
		}
	}
	return "", "", false
}

// String writes e in the grammar ParseGoExpr reads.
func (e GoExpr) String() string {
	switch e.Kind {
	case GoExprField:
		return e.Struct.String() + ":" + e.Field
	case GoExprNone:
		return e.text
	}
	return e.Call.String()
}

// String writes s as T of T:f.
func (s GoStruct) String() string {
	switch {
	case s.Derived:
		return "{" + s.Of + "}"
	case s.Qualified:
		return s.Pkg + "." + s.Name
	}
	return s.Name
}

// pkg is the package a named struct type is declared in: "." the caller's,
// "^" the root's, "" none (a T without qualifier), any other text a
// package named so.
func (s GoStruct) pkg() string {
	switch {
	case !s.Qualified:
		return ""
	case s.Pkg == "":
		return "."
	}
	return s.Pkg
}

// isRoot reports whether e is one of the forms an external test of the
// root package adds: ^.F, (^.T).M, ^.T:f.
func (e GoExpr) isRoot() bool {
	switch e.Kind {
	case GoExprCall:
		return e.Call.isRoot()
	case GoExprField:
		q := e.Struct.Pkg
		return e.Struct.Qualified && (q == rootPkg || q == "("+rootPkg ||
			strings.HasPrefix(q, rootPkg+".") || strings.HasPrefix(q, "("+rootPkg+"."))
	}
	return strings.HasPrefix(e.text, "("+rootPkg+".")
}

// name is the last name X spells: a call's target, a field's struct type
// (none for a derived struct's), the text after the last "." otherwise.
func (e GoExpr) name() (string, bool) {
	switch e.Kind {
	case GoExprCall:
		return e.Call.Name, true
	case GoExprField:
		return e.Struct.Name, !e.Struct.Derived
	}
	return goTargetName(e.text), true
}

// rootForm is the expression an external test of the root package adds for
// e, q.F -> ^.F and q.T:f -> ^.T:f with F or T exported; ok is false for
// any other expression.
func (e GoExpr) rootForm() (root GoExpr, ok bool) {
	switch e.Kind {
	case GoExprCall:
		if r := e.Call; r.Kind == GoFunc && isPackageName(r.Pkg) && isExported(r.Name) {
			return GoExpr{Kind: GoExprCall, Call: GoRef{Kind: GoFunc, Pkg: rootPkg, Name: r.Name}}, true
		}
	case GoExprField:
		if s := e.Struct; s.Qualified && isPackageName(s.Pkg) && isExported(s.Name) {
			root = e
			root.Struct.Pkg = rootPkg
			return root, true
		}
	}
	return GoExpr{}, false
}
