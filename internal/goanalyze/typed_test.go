package goanalyze

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/resolver"
)

func TestWalkWith_TypedGivesSymbolsAndReferences(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `package p

import "strings"

type Base struct{}

type List[T any] struct {
	Base
	items []T
}

func (l *List[T]) Push(v T) { l.items = append(l.items, v); l.Len() }

func (l List[T]) Len() int { return len(l.items) }

type Stringer interface{ String() string }

func Use(s Stringer) string {
	l := &List[int]{}
	f := func() { l.Push(1) }
	f()
	_ = s.String()
	return strings.ToLower(helper())
}

func helper() string { return "" }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(src), 0o644))

	got := map[string]resolver.POI{}
	var warnings []string
	opts := Options{References: ReferencesTyped, Warn: func(w string) { warnings = append(warnings, w) }}
	require.NoError(t, WalkWith(context.Background(), dir, opts, func(f File) error {
		require.Nil(t, f.Err)
		for _, raw := range f.Analysis.POIs {
			var p resolver.POI
			require.NoError(t, json.Unmarshal(raw, &p))
			got[p.Name] = p
			_, err := resolver.DecodePOI(raw)
			require.NoError(t, err, "what relay analyze publishes validates")
		}
		return nil
	}))
	require.Empty(t, warnings)

	calls := func(syms ...string) []resolver.SuppliedReference {
		out := []resolver.SuppliedReference{}
		for _, s := range syms {
			out = append(out, resolver.SuppliedReference{Type: resolver.Calls, Symbol: s})
		}
		return out
	}
	require.Equal(t, "example.com/m/p.(*List).Push", got["Push"].Symbol)
	require.Equal(t, calls("example.com/m/p.List.Len"), got["Push"].References)
	require.Equal(t, "example.com/m/p.List.Len", got["Len"].Symbol)
	require.Equal(t, []resolver.SuppliedReference{}, got["Len"].References, "len is a builtin")
	require.Equal(t, "example.com/m/p.List", got["List"].Symbol)
	require.Equal(t, []resolver.SuppliedReference{{Type: resolver.Extends, Symbol: "example.com/m/p.Base"}}, got["List"].References)
	// The closure's call counts; the interface call, the func value's and
	// strings.ToLower (outside the tree) do not.
	require.Equal(t, calls("example.com/m/p.(*List).Push", "example.com/m/p.helper"), got["Use"].References)
	require.Empty(t, got["strings"].Symbol, "an import has no symbol")
	require.Equal(t, []resolver.SuppliedReference{}, got["strings"].References, "strings is outside the tree")

	err := WalkWith(context.Background(), dir, Options{References: "exact"}, func(File) error { return nil })
	require.ErrorContains(t, err, `references mode "exact" is not one of typed, lexical`)
}

func TestWalkWith_TypedFallsBackToLexicalWithAWarning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // no go.mod: the go command cannot load it
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc A() { B() }\n\nfunc B() {}\n"), 0o644))

	var warnings []string
	var pois []resolver.POI
	opts := Options{Warn: func(w string) { warnings = append(warnings, w) }} // typed by default
	require.NoError(t, WalkWith(context.Background(), dir, opts, func(f File) error {
		for _, raw := range f.Analysis.POIs {
			p, err := resolver.DecodePOI(raw)
			require.NoError(t, err)
			pois = append(pois, p)
		}
		return nil
	}))
	require.Len(t, pois, 2)
	for _, p := range pois {
		require.Nil(t, p.References, "lexical: %s", p.ID)
	}
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], dir+" is not in a Go module (no go.mod in it or in a directory above it), "+
		"so every package fell back to lexical references. For typed references, run 'go mod init MODULE_PATH' in "+dir)
}

func TestWalkWith_OnlyTypedPOIsCarrySymbolAndReferencesFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"),
		[]byte("package a\n\nimport \"fmt\"\n\nfunc A() { fmt.Println() }\n"), 0o644))

	// fields walks dir in mode and returns each POI's JSON fields by name.
	fields := func(mode string) map[string]map[string]json.RawMessage {
		out := map[string]map[string]json.RawMessage{}
		require.NoError(t, WalkWith(context.Background(), dir, Options{References: mode}, func(f File) error {
			for _, raw := range f.Analysis.POIs {
				var p map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(raw, &p))
				var name string
				require.NoError(t, json.Unmarshal(p["name"], &name))
				out[name] = p
			}
			return nil
		}))
		return out
	}

	typed := fields(ReferencesTyped)
	require.JSONEq(t, `"example.com/m.A"`, string(typed["A"]["symbol"]))
	require.JSONEq(t, `[]`, string(typed["A"]["references"]), "no call within the tree: present and empty, not lexical")
	require.NotContains(t, typed["fmt"], "symbol", "an import has no symbol")
	require.JSONEq(t, `[]`, string(typed["fmt"]["references"]), "fmt is outside the tree: present and empty")

	lexical := fields(ReferencesLexical)
	require.Len(t, lexical, 2)
	for name, p := range lexical {
		require.NotContains(t, p, "symbol", name)
		require.NotContains(t, p, "references", name, "absent, not null")
	}
}
