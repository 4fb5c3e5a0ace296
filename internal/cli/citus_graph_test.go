//go:build citus

package cli_test

// The graph reads the console and relay graph make, which Citus cannot
// run in plain PostgreSQL's form (a LATERAL probe per item or repository),
// give on distributed tables what they give on plain PostgreSQL: the same
// corpus on a plain schema and on a distributed one, the reads compared.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/graph"
	"github.com/relay-dev/relay/internal/testdb"
)

type graphOutcome struct {
	Neighbourhood *graph.Neighbourhood
	Complete      map[string][]graph.Item
	Suggest       map[string][]string
	CLI           map[string]string
}

func graphSteps(t *testing.T, db *testdb.DB, distribute func()) graphOutcome {
	t.Helper()
	distribute()
	publishDemoAndRepositories(t, db)

	ctx := t.Context()
	out := graphOutcome{Complete: map[string][]graph.Item{}, Suggest: map[string][]string{}, CLI: map[string]string{}}
	items, _, err := graph.Find(ctx, db.Pool, "demo-math-add", nil)
	require.NoError(t, err)
	require.Len(t, items, 1)
	for _, rel := range graph.RelTypes[:1] {
		out.Neighbourhood, err = graph.ReadNeighbourhood(ctx, db.Pool, items[0], rel, graph.Limits{Direct: 20, Items: 60, PerItem: 10})
		require.NoError(t, err)
	}
	repo := ""
	for _, q := range []string{"ad", "Ad", "m", "S", "demo", "zz"} {
		for _, rp := range []*string{nil, &repo} {
			got, err := graph.Complete(ctx, db.Pool, q, rp, 10)
			require.NoError(t, err)
			out.Complete[q+"|"+map[bool]string{true: "all", false: "one"}[rp == nil]] = got
		}
	}
	for _, q := range []string{"addd", "Ad", "mutliply", "squar", "demo.Multiply"} {
		for _, rp := range []*string{nil, &repo} {
			got, err := graph.Suggest(ctx, db.Pool, q, rp)
			require.NoError(t, err)
			out.Suggest[q+"|"+map[bool]string{true: "all", false: "one"}[rp == nil]] = got
		}
	}
	for _, args := range [][]string{
		{"graph", "callers", "demo-math-add", "--json"},
		{"graph", "callers", "add", "--json"},
		{"graph", "callees", "multiply", "--json"},
		{"graph", "callers", "addd"},
	} {
		r := run(t, db, "", nil, args...)
		out.CLI[args[2]+"|"+args[1]] = r.stdout + r.stderr
	}
	return out
}

func TestCitusGraph_ConsoleCompletionAndSuggestionsAsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	plain := testdb.New(t)
	want := graphSteps(t, plain, func() {})
	require.NotEmpty(t, want.Neighbourhood.Callers)
	require.NotEmpty(t, want.Complete["ad|all"])
	require.NotEmpty(t, want.Suggest["addd|all"])

	db := citusDB(t)
	got := graphSteps(t, db, func() {
		r := run(t, db, "", nil, "migrate", "distribute")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	})
	require.Equal(t, want, got)
}
