package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/graph"
	"github.com/relay-dev/relay/internal/testdb"
)

// TestSuggest_NearNamesFromTheIndex: Suggest finds near names around the
// target in name order, in both cases of its first letter, also among more
// names of the same first letters than its range (where reading the first
// rows of a table can miss them), and misses what its comment says it
// misses.
func TestSuggest_NearNamesFromTheIndex(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO files (repository, file_id) VALUES ('r', 'a.go'), ('r', 'b.go'), ('s', 'c.go')`,
		// 6,000 names starting "pi_" first (more than the range, and than
		// the 5,000 rows the scan of the table read), then the near ones.
		`INSERT INTO pois (repository, poi_id, file_id, name, type, line_number)
			SELECT 'r', 'n' || i, 'a.go', 'pi_' || i, 'function_definition', i FROM generate_series(1, 6000) AS i`,
		`INSERT INTO pois (repository, poi_id, file_id, name, type, line_number) VALUES
			('r', 'p1', 'b.go', 'pipeline', 'function_definition', 1),
			('r', 'p2', 'b.go', 'Parse', 'function_definition', 2),
			('r', 'p3', 'b.go', 'parseTree', 'function_definition', 3),
			('r', 'p4', 'b.go', 'quux', 'import', 4),
			('r', 'p5', 'b.go', 'zebra', 'function_definition', 5),
			('s', 'p6', 'c.go', 'pipelines', 'function_definition', 6)`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	r := "r"
	for _, c := range []struct {
		target string
		repo   *string
		want   []string
	}{
		{"pipelin", &r, []string{"pipeline"}},               // a prefix, after 6,000 names of its first letters
		{"pipelinx", &r, []string{"pipeline"}},              // a typo, the name just before it
		{"pipelineX", &r, []string{"pipeline"}},             // the name inside the target
		{"x.y:Pipelin", &r, []string{"pipeline"}},           // the last segment; the other case
		{"parze", &r, []string{"Parse"}},                    // the other case of the first letter
		{"pipelin", nil, []string{"pipeline", "pipelines"}}, // every repository
		{"Tree", &r, nil},                                   // not found: contained past the name's first letter
		{"barse", &r, nil},                                  // not found: another first letter
		{"quu", &r, nil},                                    // imports are not names to suggest
	} {
		got, err := graph.Suggest(ctx, db.Pool, c.target, c.repo)
		require.NoError(t, err, c.target)
		require.Equal(t, c.want, got, c.target)
	}
	// Not found: "pi_6000" (one letter from the target) is some 3,000
	// names after "pa_6000" in name order; nearer ones in the range are.
	got, err := graph.Suggest(ctx, db.Pool, "pa_6000", &r)
	require.NoError(t, err)
	require.NotEmpty(t, got)
	require.NotContains(t, got, "pi_6000")
}
