package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// publishLine is one analysis of file with one POI whose filePath is path
// (a path other than file makes the publisher reject the line).
func publishLine(file, path string) string {
	return `{"fileId":"` + file + `","pois":[{"id":"` + file + `#1","type":"function_definition","name":"f","filePath":"` +
		path + `","lineNumber":1,"rawCode":"function f() {}"}]}`
}

// rejectedLineNumbers are the N of stderr's "line N: rejected:" lines, in
// the order printed.
func rejectedLineNumbers(stderr string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^line (\d+): rejected: `).FindAllStringSubmatch(stderr, -1) {
		out = append(out, m[1])
	}
	return out
}

// Bad NDJSON as a new user writes it: rejections in line order whether the
// decoder or the publisher rejected the line, text that is not JSON says
// so, counts read as English, and --json prints rejections once, in its
// summary.
func TestPublish_RejectionsReportedInLineOrderOnce(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := strings.Join([]string{
		publishLine("src/a.js", "src/a.js"),
		publishLine("src/b.js", "src/b.js"),
		`not json`,
		publishLine("src/c.js", "src/other.js"), // rejected by the publisher, when its batch is published
		publishLine("src/d.js", "src/d.js"),
		`{"fileId":`, // rejected by the decoder, as it is read
	}, "\n")

	r := run(t, db, input, nil, "publish")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Equal(t, []string{"3", "4", "6"}, rejectedLineNumbers(r.stderr), r.stderr)
	require.Contains(t, r.stderr, `line 3: rejected: not JSON (the text begins "not json"): an analysis is one JSON object`)
	require.Contains(t, r.stdout, "published 3 files, 3 POIs, 3 jobs; 3 lines rejected")

	r = run(t, db, input, nil, "publish", "--json")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Empty(t, rejectedLineNumbers(r.stderr), "--json reports rejections in its summary only: %s", r.stderr)
	var sum cli.PublishSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	var lines []int
	for _, l := range sum.Rejected {
		lines = append(lines, l.Line)
	}
	require.Equal(t, []int{3, 4, 6}, lines)
	require.Contains(t, r.stderr, "3 of 6 lines rejected", "the exit's reason is still said")

	// One of each: singular nouns.
	r = run(t, db, publishLine("src/e.js", "src/e.js")+"\nnot json\n", nil, "publish")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	require.Contains(t, r.stdout, "published 1 file, 1 POI, 1 job; 1 line rejected")
}
