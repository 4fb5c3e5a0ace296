package graph_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/graph"
)

// TestReadNeighbourhood_AnswersWhatGoTypesSays reads the neighbourhood of
// text/template/parse.(*Tree).pipeline, unbounded and bounded, and checks
// it against go/types; then completes names and symbols of the same tree.
func TestReadNeighbourhood_AnswersWhatGoTypesSays(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tr := f.template
	std := "std"
	items, by, err := graph.Find(ctx, f.db.Pool, "text/template/parse.(*Tree).pipeline", &std)
	require.NoError(t, err)
	require.Equal(t, graph.BySymbol, by)
	require.Len(t, items, 1)
	root := items[0]
	pipeline := tr.id(t, "parse/parse.go", "pipeline")
	require.Equal(t, pipeline, root.POIID)

	ids := func(items []graph.Item) []string {
		var out []string
		for _, it := range items {
			require.Equal(t, "std", it.Repository)
			out = append(out, it.POIID)
		}
		slices.Sort(out)
		return out
	}

	n, err := graph.ReadNeighbourhood(ctx, f.db.Pool, root, "CALLS", graph.Limits{Direct: 100, Items: 1000, PerItem: 1000})
	require.NoError(t, err)
	require.False(t, n.Capped)
	require.Equal(t, tr.callersOf(pipeline), ids(n.Callers))
	require.Equal(t, tr.calleesOf(pipeline), ids(n.Callees))
	require.True(t, slices.IsSortedFunc(n.Callers, func(a, b graph.Item) int {
		return cmp.Or(strings.Compare(a.FileID, b.FileID), cmp.Compare(a.Line, b.Line))
	}), "callers by file and line")
	// Depth 2 both ways: callers of callers and callees of callees.
	want := map[string]bool{pipeline: true}
	for id := range tr.levels(pipeline, 2, true) {
		want[id] = true
	}
	for id := range tr.levels(pipeline, 2, false) {
		want[id] = true
	}
	got := map[string]bool{}
	for _, it := range n.Items {
		got[it.POIID] = true
	}
	require.Equal(t, want, got)
	require.Equal(t, root.Key(), n.Items[0].Key())
	edges := map[[2]string]bool{}
	for _, e := range n.Edges {
		require.True(t, tr.calls[e.From.POIID][e.To.POIID], "%s calls %s", e.From.POIID, e.To.POIID)
		edges[[2]string{e.From.POIID, e.To.POIID}] = true
	}
	for _, c := range tr.callersOf(pipeline) {
		require.True(t, edges[[2]string{c, pipeline}])
		for _, cc := range tr.callersOf(c) {
			require.True(t, edges[[2]string{cc, c}], "%s calls %s", cc, c)
		}
	}
	for _, c := range tr.calleesOf(pipeline) {
		require.True(t, edges[[2]string{pipeline, c}])
		for _, cc := range tr.calleesOf(c) {
			require.True(t, edges[[2]string{c, cc}], "%s calls %s", c, cc)
		}
	}

	// Bounded: at most Direct callers and callees, Items items, PerItem of
	// each direct one's; Capped says the neighbourhood has more.
	require.Greater(t, len(tr.callersOf(pipeline)), 2)
	small, err := graph.ReadNeighbourhood(ctx, f.db.Pool, root, "CALLS", graph.Limits{Direct: 2, Items: 4, PerItem: 1})
	require.NoError(t, err)
	require.True(t, small.Capped)
	require.True(t, small.MoreCallers)
	require.Len(t, small.Callers, 2)
	require.Subset(t, tr.callersOf(pipeline), ids(small.Callers))
	require.Len(t, small.Items, 4)

	_, err = graph.ReadNeighbourhood(ctx, f.db.Pool, root, "CALLZ", graph.Limits{Direct: 1, Items: 1, PerItem: 1})
	require.ErrorContains(t, err, `relationship type "CALLZ" is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS`)

	// Completion: names by prefix (the first letter in either case, the
	// exact name first), symbols by prefix, every repository or one.
	for _, prefix := range []string{"pipeline", "Pipeline", "pipel"} {
		c, err := graph.Complete(ctx, f.db.Pool, prefix, nil, 10)
		require.NoError(t, err)
		require.NotEmpty(t, c)
		require.Equal(t, pipeline, c[0].POIID, prefix)
		for _, it := range c {
			require.True(t, strings.HasPrefix(strings.ToLower(it.Name), strings.ToLower(prefix)), "%s for %s", it.Name, prefix)
			require.NotEqual(t, "import", it.Type)
		}
	}
	c, err := graph.Complete(ctx, f.db.Pool, "text/template/parse.(*Tree).pi", &std, 10)
	require.NoError(t, err)
	require.Equal(t, []string{pipeline}, ids(c))
	c, err = graph.Complete(ctx, f.db.Pool, "New", nil, 3)
	require.NoError(t, err)
	require.Len(t, c, 3, "bounded")
	for _, it := range c {
		require.Equal(t, "New", it.Name, "exact names first")
	}
	other := "go/token"
	c, err = graph.Complete(ctx, f.db.Pool, "pipel", &other, 10)
	require.NoError(t, err)
	require.Empty(t, c)
}
