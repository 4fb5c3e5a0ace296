package resolver

import "strings"

// GoRef is a Go CALLS or EXTENDS reference read from code: the name it looks
// up and what the call's form says about its target. It is stored as the
// reference's Name, in the grammar ParseGoRef reads and String writes:
//
//	f        GoFunc, Pkg ""        a function of the caller's package (EXTENDS T: a type)
//	q.f      GoFunc, Pkg "q"       q not declared in the POI: a function of package q
//	^.F      GoFunc, Pkg "^"       in an external test of the root package: the root's F
//	().m     GoMethod              r.m() on the method's own receiver r
//	(.).m    GoMethod, Typed       x.m() with x of a type of the caller's package, not named
//	(.T).m   GoMethod, Typed       x.m() with x of type T of the caller's package
//	(q).m    GoMethod, Pkg "q"     x.m() with x of a type of package q, or q.V.m()
//	(q.T).m  GoMethod, Pkg, Typed  x.m() with x of type q.T
//	(^.T).m  GoMethod, Pkg "^"     in an external test of the root package: the root's T
//	.m       GoAnyMethod           any other member call: a method of any package
//	{X}.m    GoDerived, Of X       a method of the type of the expression X (GoExpr)
//
// The name after the last "." is the target's name (Name). Which call
// produces which form, and how each one resolves, is in
// docs/references.md; goref_test.go's TestParseGoRef lists every form.
//
// Analyzers may supply any name (SuppliedReference.RefName), so the grammar
// is read as the resolver always read it, by its punctuation alone: a
// qualifier is any text before the last ".", and a name none of whose
// forms fits is a function of the package that text names. Only a
// qualifier that opens "(" without closing it is no reference.
type GoRef struct {
	Kind GoRefKind
	// Pkg is the package the target is declared in: "" the caller's, "^"
	// the root package (which has no directory name), any other text a
	// package named so (a directory of that name). For GoAnyMethod it is
	// "", or "." when the reference was written "..m", which reads as .m.
	Pkg string
	// Typed is whether a GoMethod's qualifier names a type, (Pkg.Type):
	// (.T), (q.T), (^.T), and (.) whose type is not told (Type ""). It is
	// false for () and (q).
	Typed bool
	// Type is the receiver's type name of a Typed GoMethod.
	Type string
	// Of is the expression X of a GoDerived reference {X}.m (ParseGoExpr).
	Of string
	// Name is the name the reference looks up (TargetName): never holds ".".
	Name string
}

// GoRefKind is the form of a GoRef.
type GoRefKind uint8

// The forms of a Go reference.
const (
	// GoFunc is a plain or qualified call (f, q.f, ^.F), or an embedded type.
	GoFunc GoRefKind = iota
	// GoMethod is a member call on a value whose package or type is told:
	// ().m, (.).m, (.T).m, (q).m, (q.T).m, (^.T).m.
	GoMethod
	// GoAnyMethod is a member call on a value of unknown type: .m.
	GoAnyMethod
	// GoDerived is a member call on the value of a call or field: {X}.m.
	GoDerived
)

// ParseGoRef reads a Go reference name. ok is false only for a name whose
// qualifier opens "(" without closing it ("(q.T.m", "(a)b.m"), which names
// no target. For every name it accepts, String gives the name back.
func ParseGoRef(name string) (r GoRef, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return GoRef{Kind: GoFunc, Name: name}, true
	}
	q, n := name[:i], name[i+1:]
	switch {
	case q == "" || q == ".":
		return GoRef{Kind: GoAnyMethod, Pkg: q, Name: n}, true
	case q[0] == '(':
		if len(q) < 2 || q[len(q)-1] != ')' {
			return GoRef{}, false
		}
		pkg, typ, typed := strings.Cut(q[1:len(q)-1], ".")
		return GoRef{Kind: GoMethod, Pkg: pkg, Typed: typed, Type: typ, Name: n}, true
	case len(q) >= 2 && q[0] == '{' && q[len(q)-1] == '}':
		return GoRef{Kind: GoDerived, Of: q[1 : len(q)-1], Name: n}, true
	}
	return GoRef{Kind: GoFunc, Pkg: q, Name: n}, true
}

// parseDerived is ParseGoRef for a derived reference {X}.m; ok is false
// for a name of any other form, found at its first byte for most (only a
// derived reference's name begins with "{" and holds a "}").
func parseDerived(name string) (r GoRef, ok bool) {
	if name == "" || name[0] != '{' {
		return GoRef{}, false
	}
	r, ok = ParseGoRef(name)
	return r, ok && r.Kind == GoDerived
}

// String writes r in the grammar ParseGoRef reads.
func (r GoRef) String() string {
	switch r.Kind {
	case GoMethod:
		if r.Typed {
			return "(" + r.Pkg + "." + r.Type + ")." + r.Name
		}
		return "(" + r.Pkg + ")." + r.Name
	case GoAnyMethod:
		return r.Pkg + "." + r.Name
	case GoDerived:
		return "{" + r.Of + "}." + r.Name
	}
	if r.Pkg == "" {
		return r.Name
	}
	return r.Pkg + "." + r.Name
}

// goTargetName is the name a Go reference name looks up: the text after
// its last "." (GoRef.Name), whether ParseGoRef accepts it or not.
func goTargetName(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

// isPlain reports whether r is a plain call f(): a function of the
// caller's package, or a conversion T(v) to one of its types.
func (r GoRef) isPlain() bool { return r.Kind == GoFunc && r.Pkg == "" }

// isReceiver reports whether r is a call on the method's own receiver, ().m.
func (r GoRef) isReceiver() bool { return r.Kind == GoMethod && r.Pkg == "" && !r.Typed }

// pinsTarget reports whether r's form pins its target's package or
// receiver, so that the type of its value is its target's first result:
// f, q.f, ^.F, (.T).M, (q.T).M and {…}.M do; .M, (.).M, ().M and (q).M
// are guesses among the methods of a package or of any.
func (r GoRef) pinsTarget() bool {
	switch r.Kind {
	case GoAnyMethod:
		return false
	case GoMethod:
		return r.Typed && (r.Pkg != "" || r.Type != "")
	}
	return true
}

// nesting is how deep derived references nest in r: 0 for a call, 1 for
// {f}.m and {.T:f}.m, 2 for {{f}.M}.m.
func (r GoRef) nesting() int {
	if r.Kind != GoDerived {
		return 0
	}
	return 1 + strings.Count(r.Of, "{")
}

// rootForm is the reference to the root package that q.F or (q.T).M are
// when no directory named q declares their target: ^.F, (^.T).M; ok is
// false for any other form.
func (r GoRef) rootForm() (root GoRef, ok bool) {
	switch {
	case r.Kind == GoFunc && isPackageName(r.Pkg):
		return GoRef{Kind: GoFunc, Pkg: rootPkg, Name: r.Name}, true
	case r.Kind == GoMethod && r.Typed && isPackageName(r.Pkg):
		return GoRef{Kind: GoMethod, Pkg: rootPkg, Typed: true, Type: r.Type, Name: r.Name}, true
	}
	return GoRef{}, false
}

// isRoot reports whether r is one of the forms an external test of the
// root package adds: ^.F (Pkg "^", or beginning "^."), (^.T).M.
func (r GoRef) isRoot() bool {
	switch r.Kind {
	case GoFunc:
		return r.Pkg == rootPkg || strings.HasPrefix(r.Pkg, rootPkg+".")
	case GoMethod:
		return r.Pkg == rootPkg && r.Typed
	}
	return false
}

// rootPkg is the qualifier of the root package, which has no directory name
// of its own for a qualifier to match.
const rootPkg = "^"

// isPackageName reports whether a qualifier q names a package by its
// directory's name (pgconn): not the caller's (""), not the root ("^"), and
// none of the grammar's punctuation, which only a supplied name can put
// there.
func isPackageName(q string) bool {
	return q != "" && !strings.ContainsAny(q, "(){}.^:")
}
