package docexamples

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse_BlocksLanguagesAndMarkers(t *testing.T) {
	t.Parallel()
	doc := "# T\n\ntext\n\n<!-- not-run: needs a Citus cluster -->\n```sql\nSELECT 1;\n```\n\n```sh\nrelay status\n```\n" +
		"  ```json\n  {\"a\": 1}\n  ```\n```\nplain\n````\n"
	blocks, err := Parse("x.md", []byte(doc))
	require.NoError(t, err)
	require.Equal(t, []Block{
		{File: "x.md", Line: 6, Lang: "sql", Text: "SELECT 1;\n", NotRun: "needs a Citus cluster"},
		{File: "x.md", Line: 10, Lang: "sh", Text: "relay status\n"},
		{File: "x.md", Line: 13, Lang: "json", Text: "{\"a\": 1}\n"},
		{File: "x.md", Line: 16, Lang: "", Text: "plain\n"},
	}, blocks)

	_, err = Parse("x.md", []byte("<!-- not-run: -->\n```sql\nSELECT 1;\n```\n"))
	require.ErrorContains(t, err, "x.md:1: a not-run marker must give its reason")
	_, err = Parse("x.md", []byte("```sql\nSELECT 1;\n"))
	require.ErrorContains(t, err, "x.md:1: the code block is never closed")
}

func TestKindOf_RunsEveryLanguageAReaderPastesButJavaScriptAndGo(t *testing.T) {
	t.Parallel()
	for lang, want := range map[string]Kind{"sql": SQL, "sh": Shell, "console": Shell, "python": Python, "py": Python,
		"ts": TypeScript, "typescript": TypeScript, "java": Java, "js": Pasted, "go": Pasted, "json": Data, "": Data} {
		require.Equal(t, want, KindOf(lang), lang)
	}
}

func TestCommands_SplitsAsTheShellWould(t *testing.T) {
	t.Parallel()
	cmds, err := Commands("relay failed stats      # counts\n\nrelay reprocess --status new --yes && relay worker --until-idle\n" +
		"relay failed ignore 2 --reason \"generator bug\"\nrelay dlq retry JOB --filter '$.error_type == \"Timeout\"' \\\n  --wait\n")
	require.NoError(t, err)
	require.Equal(t, []Command{
		{Line: 1, Words: []string{"relay", "failed", "stats"}},
		{Line: 3, Words: []string{"relay", "reprocess", "--status", "new", "--yes"}},
		{Line: 3, Words: []string{"relay", "worker", "--until-idle"}},
		{Line: 4, Words: []string{"relay", "failed", "ignore", "2", "--reason", "generator bug"}},
		{Line: 5, Words: []string{"relay", "dlq", "retry", "JOB", "--filter", `$.error_type == "Timeout"`, "--wait"}},
	}, cmds)
	for _, text := range []string{"curl -s x | grep y", "relay status > out", "export A=$B", `relay "$X"`, "a; b", "echo 'x"} {
		_, err := Commands(text)
		require.Error(t, err, text)
	}
}
