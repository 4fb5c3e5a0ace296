package accuracy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker"
)

const testTree = "testdata/tree"

// TestResolve_EqualsDatabasePath publishes the test tree through the
// outbox, as `relay analyze` does, in each reference mode, works it with
// relay's worker, and requires the relationships to be exactly the
// in-process Resolve's.
func TestResolve_EqualsDatabasePath(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{goanalyze.ReferencesLexical, goanalyze.ReferencesTyped} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()

			g, err := AnalyzeWith(ctx, testTree, goanalyze.Options{References: mode})
			require.NoError(t, err)
			var want []string
			for _, e := range g.Edges {
				want = append(want, e.Source+" "+string(e.Type)+" "+e.Target)
			}
			slices.Sort(want)
			require.NotEmpty(t, want)

			db := testdb.New(t)
			cfg := worker.ConfigFrom(db.Config())
			w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
			require.NoError(t, err)
			pub := outbox.New(w.Client(), nil, testdb.Logger(t))
			sum, err := goanalyze.Publish(ctx, db.Pool, pub, testTree, goanalyze.PublishConfig{References: mode})
			require.NoError(t, err)
			require.Empty(t, sum.Rejected)
			require.Empty(t, sum.Warnings)
			require.NoError(t, w.RunUntilIdle(ctx, nil))

			rows, err := db.Pool.Query(ctx, `SELECT source_poi_id || ' ' || type || ' ' || target_poi_id FROM relationships ORDER BY 1`)
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			slices.Sort(got)
			require.Equal(t, want, got)
		})
	}
}

// TestScore_TestTreeTyped: typed references are the truth's edges, no
// more, no fewer (both come from goanalyze's walk of the type checker's
// information).
func TestScore_TestTreeTyped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	g, err := AnalyzeWith(ctx, testTree, goanalyze.Options{References: goanalyze.ReferencesTyped})
	require.NoError(t, err)
	truth, err := ComputeTruth(ctx, testTree, g, true)
	require.NoError(t, err)
	r := Score("tree", testTree, g, truth, 5)
	require.Equal(t, 0, r.Calls.FP+r.Calls.FN+r.Extends.FP+r.Extends.FN, "%+v", r.Examples)
	require.Equal(t, "example.com/tree/store.(*Store).Put", g.POIs["store/store.go:33:Put"].Symbol)
	require.Contains(t, g.POIs["cmdx/main.go:9:main"].References,
		resolver.SuppliedReference{Type: resolver.Calls, Symbol: "example.com/tree/store.(*Cache).Close"})
}

// TestAnalyzeWith_FallsBackToLexicalPerPackage: a package that does not
// type-check keeps lexical references, with a warning naming it; the
// others are typed.
func TestAnalyzeWith_FallsBackToLexicalPerPackage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	write("go.mod", "module example.com/fb\n\ngo 1.22\n")
	write("good/good.go", "package good\n\nfunc A() { B() }\n\nfunc B() {}\n")
	write("bad/bad.go", "package bad\n\nfunc C() { D(undefinedThing) }\n\nfunc D(int) {}\n")

	var warnings []string
	g, err := AnalyzeWith(context.Background(), dir, goanalyze.Options{References: goanalyze.ReferencesTyped,
		Warn: func(w string) { warnings = append(warnings, w) }})
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "package example.com/fb/bad: lexical references (does not type-check: ")
	require.Contains(t, warnings[0], "undefinedThing")
	require.NotNil(t, g.POIs["good/good.go:3:A"].References)
	require.Nil(t, g.POIs["bad/bad.go:3:C"].References)
	require.Equal(t, "example.com/fb/bad.C", g.POIs["bad/bad.go:3:C"].Symbol)
	require.Contains(t, g.Edges, Edge{Source: "good/good.go:3:A", Target: "good/good.go:5:B", Type: resolver.Calls})
	require.Contains(t, g.Edges, Edge{Source: "bad/bad.go:3:C", Target: "bad/bad.go:5:D", Type: resolver.Calls}, "lexical")
}

// TestScore_TestTree checks the truth and the score on the test tree by
// hand: every edge below was read off the source.
func TestScore_TestTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	g, err := Analyze(ctx, testTree)
	require.NoError(t, err)
	truth, err := ComputeTruth(ctx, testTree, g, true)
	require.NoError(t, err)
	require.Empty(t, truth.Errors)

	var edges []string
	for e := range truth.Edges {
		edges = append(edges, e.Source+" "+string(e.Type)+" "+e.Target)
	}
	slices.Sort(edges)
	require.Equal(t, []string{
		"cmdx/main.go:9:main CALLS cmdx/main.go:19:run",
		"cmdx/main.go:9:main CALLS store/store.go:24:New",
		"cmdx/main.go:9:main CALLS store/store.go:33:Put",
		"cmdx/main.go:9:main CALLS store/store.go:47:Close",      // in a closure
		"cmdx/main.go:9:main CALLS store/store.go:69:Close",      // (*Cache).Close
		"store/store.go:17:Store EXTENDS store/store.go:11:Base", // embedded
		"store/store.go:24:New CALLS store/store.go:30:reset",    //
		"store/store.go:33:Put CALLS store/store.go:49:check",    //
		"store/store.go:47:Close CALLS store/store.go:30:reset",  //
		"store/store.go:49:check CALLS store/store.go:57:New2",   //
		"store/store.go:69:Close CALLS store/store.go:47:Close",  // c.s.Close()
	}, edges)
	require.Equal(t, 1, truth.FuncValueCalls, "f() in run")

	r := Score("tree", testTree, g, truth, 5)
	// errors.New() and strings.ToLower() link to nothing; s.mu.Lock() (a
	// field of type sync.Mutex, as the struct POI Store shows) links to
	// nothing, not to the tree's only Lock method.
	require.Zero(t, r.Calls.FP, "%+v", r.Examples)
	require.Equal(t, 1.0, r.Extends.Recall)
	require.GreaterOrEqual(t, r.Calls.Recall, 0.8)
}

func TestResolve_RejectsDuplicateIDs(t *testing.T) {
	t.Parallel()
	p := resolver.POI{ID: "a", Type: resolver.TypeFunction, Name: "f", FilePath: "a.go"}
	_, err := Resolve(context.Background(), []resolver.POI{p, p})
	require.ErrorIs(t, err, errDuplicateID)
}
