package accuracy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scip-code/scip/bindings/go/scip"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

func TestEvaluateSCIP_ScoresAgainstTheIndexersCallEdges(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	src := "export function f(o) {\n  g();\n  o.h();\n}\nexport function g() {}\nexport class K { h() {} }\n"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src/a.ts"), []byte(src), 0o600))
	s := func(d string) string { return "scip-typescript npm p 1.0 src/`a.ts`/" + d }
	def := int32(scip.SymbolRole_Definition)
	index, err := proto.Marshal(&scip.Index{Documents: []*scip.Document{{RelativePath: "src/a.ts", Occurrences: []*scip.Occurrence{
		{Symbol: s("f()."), SymbolRoles: def, Range: []int32{0, 16, 17}, EnclosingRange: []int32{0, 0, 3, 1}},
		{Symbol: s("g()."), Range: []int32{1, 2, 3}},
		// o.h(): o is untyped, the index resolves nothing; the lexical
		// rule finds K's h, which is not among the indexer's edges.
		{Symbol: s("g()."), SymbolRoles: def, Range: []int32{4, 16, 17}, EnclosingRange: []int32{4, 0, 22}},
		{Symbol: s("K#"), SymbolRoles: def, Range: []int32{5, 13, 14}, EnclosingRange: []int32{5, 0, 25}},
		{Symbol: s("K#h()."), SymbolRoles: def, Range: []int32{5, 17, 18}, EnclosingRange: []int32{5, 17, 23}},
	}}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "index.scip")
	require.NoError(t, os.WriteFile(path, index, 0o600))

	r, err := EvaluateSCIP(context.Background(), "p", path, dir, 5, nil)
	require.NoError(t, err)
	require.Equal(t, 4, r.POIs)
	require.Equal(t, 1, r.Truth)
	require.Equal(t, 1, r.Fallbacks)
	require.Equal(t, Counts{TP: 1, Precision: 1, Recall: 1}, r.Fidelity)
	require.Equal(t, Counts{TP: 1, FP: 1, Precision: 0.5, Recall: 1}, r.SCIP)
	require.Equal(t, Counts{TP: 1, FP: 1, Precision: 0.5, Recall: 1}, r.Lexical)
	require.Equal(t, []Edge{{Source: "src/a.ts:1:f", Target: "src/a.ts:6:h", Type: "CALLS"}}, r.FalsePositives)
	require.Zero(t, r.Judged)

	// Read by hand, o.h() calls K's h: counted true apart.
	v, err := ReadVerdicts(strings.NewReader("# project, source, target, verdict, reason\n" +
		"p\tsrc/a.ts:1:f\tsrc/a.ts:6:h\tcall\to.h(): o is a K\n" +
		"other\tsrc/a.ts:1:f\tsrc/a.ts:6:h\tnot\n"))
	require.NoError(t, err)
	r, err = EvaluateSCIP(context.Background(), "p", path, dir, 5, v.For("p"))
	require.NoError(t, err)
	require.Equal(t, Counts{TP: 1, FP: 1, Precision: 0.5, Recall: 1}, r.SCIP)
	require.Equal(t, Counts{TP: 2, Precision: 1, Recall: 1}, r.Judged)
	require.Zero(t, r.Unjudged)
	r, err = EvaluateSCIP(context.Background(), "other", path, dir, 5, v.For("other"))
	require.NoError(t, err)
	require.Equal(t, r.SCIP, r.Judged)
	r, err = EvaluateSCIP(context.Background(), "none", path, dir, 5, map[Edge]Verdict{})
	require.NoError(t, err)
	require.Equal(t, r.SCIP, r.Judged)
	require.Equal(t, 1, r.Unjudged)
}

func TestReadVerdicts_Errors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"p\ta\tb\n",
		"p\ta\tb\tmaybe\twhy\n",
		"p\ta\tb\tcall\tx\np\ta\tb\tnot\ty\n",
	} {
		_, err := ReadVerdicts(strings.NewReader(in))
		require.Error(t, err, in)
		require.Contains(t, err.Error(), "line ", in)
	}
}
