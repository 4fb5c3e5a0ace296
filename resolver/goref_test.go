package resolver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseGoRef lists every form of a Go reference with the fields it
// parses into; String writes each back as it was. docs/references.md
// says which call gives which form and how each resolves.
func TestParseGoRef(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, ref string
		want      GoRef
	}{
		{"PlainCall", "f", GoRef{Kind: GoFunc, Name: "f"}},
		{"QualifiedCall", "strings.ToLower", GoRef{Kind: GoFunc, Pkg: "strings", Name: "ToLower"}},
		{"RootPackageCall", "^.New", GoRef{Kind: GoFunc, Pkg: "^", Name: "New"}},
		{"OwnReceiver", "().Close", GoRef{Kind: GoMethod, Name: "Close"}},
		{"TypeOfThePackageNotNamed", "(.).Close", GoRef{Kind: GoMethod, Typed: true, Name: "Close"}},
		{"TypeOfThePackage", "(.Conn).Close", GoRef{Kind: GoMethod, Typed: true, Type: "Conn", Name: "Close"}},
		{"TypeOfAPackageNotNamed", "(sync).Lock", GoRef{Kind: GoMethod, Pkg: "sync", Name: "Lock"}},
		{"TypeOfAPackage", "(pgconn.PgConn).Exec", GoRef{Kind: GoMethod, Pkg: "pgconn", Typed: true, Type: "PgConn", Name: "Exec"}},
		{"TypeOfTheRootPackage", "(^.Conn).Query", GoRef{Kind: GoMethod, Pkg: "^", Typed: true, Type: "Conn", Name: "Query"}},
		{"AnyMethod", ".Close", GoRef{Kind: GoAnyMethod, Name: "Close"}},
		{"ValueOfACall", "{f}.m", GoRef{Kind: GoDerived, Of: "f", Name: "m"}},
		{"ValueOfAQualifiedCall", "{sql.Open}.Begin", GoRef{Kind: GoDerived, Of: "sql.Open", Name: "Begin"}},
		{"ValueOfAMethodCall", "{(.DB).Begin}.Commit", GoRef{Kind: GoDerived, Of: "(.DB).Begin", Name: "Commit"}},
		{"ValueOfADerivedCall", "{{sql.Open}.Begin}.Commit", GoRef{Kind: GoDerived, Of: "{sql.Open}.Begin", Name: "Commit"}},
		{"FieldOfATypeOfThePackage", "{.Server:pool}.Put", GoRef{Kind: GoDerived, Of: ".Server:pool", Name: "Put"}},
		{"FieldOfATypeOfAPackage", "{pgx.Conn:pgConn}.Exec", GoRef{Kind: GoDerived, Of: "pgx.Conn:pgConn", Name: "Exec"}},
		{"ValueOfARootCall", "{^.Connect}.PgConn", GoRef{Kind: GoDerived, Of: "^.Connect", Name: "PgConn"}},
		// What only an analyzer's supplied name can hold reads by punctuation alone.
		{"DottedQualifier", "yaml.v3.Marshal", GoRef{Kind: GoFunc, Pkg: "yaml.v3", Name: "Marshal"}},
		{"DottedType", "(a.b.c).m", GoRef{Kind: GoMethod, Pkg: "a", Typed: true, Type: "b.c", Name: "m"}},
		{"TwoLeadingDots", "..m", GoRef{Kind: GoAnyMethod, Pkg: ".", Name: "m"}},
		{"BracesWithoutADot", "{x}", GoRef{Kind: GoFunc, Name: "{x}"}},
		{"Empty", "", GoRef{Kind: GoFunc}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseGoRef(tt.ref)
			require.True(t, ok)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.ref, got.String())
		})
	}
}

// TestParseGoRef_RejectsAnUnclosedParenthesis: a qualifier that opens "("
// without closing it names no target.
func TestParseGoRef_RejectsAnUnclosedParenthesis(t *testing.T) {
	t.Parallel()

	for _, ref := range []string{"(.m", "(q.T.m", "(a)b.m", "(.T)x.m"} {
		_, ok := ParseGoRef(ref)
		require.False(t, ok, ref)
	}
}

// TestParseGoExpr lists every form of a derived reference's expression.
func TestParseGoExpr(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, x string
		want    GoExpr
	}{
		{"Call", "newRows", GoExpr{Kind: GoExprCall, Call: GoRef{Kind: GoFunc, Name: "newRows"}}},
		{"MethodCall", "(pgx.Conn).PgConn", GoExpr{Kind: GoExprCall, Call: GoRef{Kind: GoMethod, Pkg: "pgx", Typed: true, Type: "Conn", Name: "PgConn"}}},
		{"DerivedCall", "{sql.Open}.Begin", GoExpr{Kind: GoExprCall, Call: GoRef{Kind: GoDerived, Of: "sql.Open", Name: "Begin"}}},
		{"FieldOfATypeOfThePackage", ".Server:pool", GoExpr{Kind: GoExprField, Struct: GoStruct{Qualified: true, Name: "Server"}, Field: "pool"}},
		{"FieldOfATypeOfAPackage", "pgx.Conn:pgConn", GoExpr{Kind: GoExprField, Struct: GoStruct{Qualified: true, Pkg: "pgx", Name: "Conn"}, Field: "pgConn"}},
		{"FieldOfATypeOfTheRoot", "^.Conn:pgConn", GoExpr{Kind: GoExprField, Struct: GoStruct{Qualified: true, Pkg: "^", Name: "Conn"}, Field: "pgConn"}},
		{"FieldOfADerivedStruct", "{f}:x", GoExpr{Kind: GoExprField, Struct: GoStruct{Derived: true, Of: "f"}, Field: "x"}},
		{"ColonInsideBracesIsNotTheField", "{.T:f}.M", GoExpr{Kind: GoExprCall, Call: GoRef{Kind: GoDerived, Of: ".T:f", Name: "M"}}},
		{"UnqualifiedStruct", "T:f", GoExpr{Kind: GoExprField, Struct: GoStruct{Name: "T"}, Field: "f"}},
		{"UnclosedParenthesis", "(^.T", GoExpr{Kind: GoExprNone, text: "(^.T"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ParseGoExpr(tt.x)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.x, got.String())
		})
	}
}

// FuzzGoRef checks that String gives back every name ParseGoRef accepts,
// and every expression ParseGoExpr reads.
func FuzzGoRef(f *testing.F) {
	for _, s := range []string{"f", "q.f", "^.F", "().m", "(.).m", "(.T).m", "(q).m", "(q.T).m", "(^.T).m", ".m", "..m",
		"{f}.m", "{{q.F}.M}.m", "{.T:f}.m", "{q.T:f}.m", "{{.T:f}.M}.m", "(a.b", "yaml.v3.F", "{(^.T}.m", "{{f}:x}.m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, ok := ParseGoRef(s); ok {
			require.Equal(t, s, r.String())
			require.Equal(t, goTargetName(s), r.Name)
		}
		require.Equal(t, s, ParseGoExpr(s).String())
	})
}
