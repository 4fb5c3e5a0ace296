package goanalyze

import (
	"go/ast"
	"go/token"
	"go/types"
)

// UseKind classifies what a declaration's code refers to, per the type
// checker.
type UseKind int

// Use kinds.
const (
	// StaticCall is a call of a declared function or concrete method: Obj is
	// the *types.Func (its generic origin for an instantiation).
	StaticCall UseKind = iota
	// InterfaceCall is a call of an interface method (Name is its name).
	InterfaceCall
	// FuncValueCall is a call of a function value: a variable, field or
	// parameter (Name is its name), or a func literal, a call's result or an
	// index expression (Name is "").
	FuncValueCall
	// Embed is a named type embedded in a struct or interface: Obj is its
	// *types.TypeName.
	Embed
)

// Use is one reference of a declaration.
type Use struct {
	Kind UseKind
	Obj  types.Object
	Name string
	// Pos is the call's "(" or the embedded field's position.
	Pos token.Pos
}

// BodyUses calls fn for every call in body (closures included), in
// source order. Builtins and conversions are not calls.
func BodyUses(info *types.Info, body *ast.BlockStmt, fn func(Use)) {
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			callUse(info, call, fn)
		}
		return true
	})
}

// callUse classifies one call expression.
func callUse(info *types.Info, call *ast.CallExpr, fn func(Use)) {
	fun := ast.Unparen(call.Fun)
	switch x := fun.(type) { // an explicit instantiation: F[int](x)
	case *ast.IndexExpr:
		fun = ast.Unparen(x.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(x.X)
	}
	var obj types.Object
	var name string
	switch x := fun.(type) {
	case *ast.Ident:
		obj, name = info.Uses[x], x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
		if sel, ok := info.Selections[x]; ok {
			if sel.Kind() == types.FieldVal {
				fn(Use{Kind: FuncValueCall, Name: name, Pos: call.Lparen})
				return
			}
			obj = sel.Obj()
			if f, ok := obj.(*types.Func); ok && sel.Kind() == types.MethodVal {
				if recv := f.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
					fn(Use{Kind: InterfaceCall, Name: name, Pos: call.Lparen})
					return
				}
			}
		} else {
			obj = info.Uses[x.Sel]
		}
	default:
		fn(Use{Kind: FuncValueCall, Pos: call.Lparen}) // a func literal, a call's result, an index…
		return
	}
	switch o := obj.(type) {
	case *types.Func:
		o = o.Origin()
		if recv := o.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
			fn(Use{Kind: InterfaceCall, Name: name, Pos: call.Lparen}) // a method expression of an interface
			return
		}
		fn(Use{Kind: StaticCall, Obj: o, Name: o.Name(), Pos: call.Lparen})
	case *types.Var:
		fn(Use{Kind: FuncValueCall, Name: name, Pos: call.Lparen})
	}
}

// EmbedUses calls fn for every named type the struct or interface type of
// ts embeds.
func EmbedUses(info *types.Info, ts *ast.TypeSpec, fn func(Use)) {
	var fields []*ast.Field
	switch t := ts.Type.(type) {
	case *ast.StructType:
		fields = t.Fields.List
	case *ast.InterfaceType:
		fields = t.Methods.List
	default:
		return
	}
	for _, f := range fields {
		if len(f.Names) > 0 {
			continue
		}
		e := ast.Unparen(f.Type)
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		switch x := e.(type) {
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		}
		var id *ast.Ident
		switch x := e.(type) {
		case *ast.Ident:
			id = x
		case *ast.SelectorExpr:
			id = x.Sel
		default:
			continue // a union or a type literal
		}
		if tn, ok := info.Uses[id].(*types.TypeName); ok {
			fn(Use{Kind: Embed, Obj: tn, Name: tn.Name(), Pos: f.Pos()})
		}
	}
}

// DeclPos is where goanalyze's POI of a type spec starts: the spec, or the
// whole declaration when it is not grouped (see Extract).
func DeclPos(d *ast.GenDecl, spec ast.Spec) token.Pos {
	if !d.Lparen.IsValid() {
		return d.Pos()
	}
	return spec.Pos()
}

// Symbol is the stable fully qualified name of a function, method or type
// object, as the go tool's stack traces write it: "example.com/m/pkg.F",
// "example.com/m/pkg.T", "example.com/m/pkg.T.M" for a method of a value
// receiver, "example.com/m/pkg.(*T).M" for a pointer receiver (type
// parameters left out); "" for another object.
func Symbol(obj types.Object) string {
	if obj.Pkg() == nil {
		return ""
	}
	prefix := obj.Pkg().Path() + "."
	switch o := obj.(type) {
	case *types.Func:
		o = o.Origin()
		recv := o.Signature().Recv()
		if recv == nil {
			return prefix + o.Name()
		}
		t := recv.Type()
		ptr := false
		if p, ok := t.(*types.Pointer); ok {
			t, ptr = p.Elem(), true
		}
		var tname string
		switch n := t.(type) {
		case *types.Named:
			tname = n.Obj().Name()
		case *types.Alias:
			tname = n.Obj().Name()
		default:
			return ""
		}
		if ptr {
			return prefix + "(*" + tname + ")." + o.Name()
		}
		return prefix + tname + "." + o.Name()
	case *types.TypeName:
		return prefix + o.Name()
	}
	return ""
}
