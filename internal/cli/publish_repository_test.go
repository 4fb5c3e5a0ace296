package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// repoLine is an analysis of file with one POI; repo is the JSON of its
// "repository" member, left out when "".
func repoLine(repo, file, filePath string) string {
	member := ""
	if repo != "" {
		member = `"repository":` + repo + `,`
	}
	return `{` + member + `"fileId":"` + file + `","pois":[{"id":"` + file + `#1","type":"function_definition","name":"f",` +
		`"filePath":"` + filePath + `","lineNumber":1}]}`
}

func TestPublish_RepositoryIsTheDefaultOfLinesThatNameNone(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := strings.Join([]string{
		repoLine("", "src/a.js", "src/a.js"),       // 1: none: the flag's
		repoLine(`"own"`, "src/b.js", "src/b.js"),  // 2: its own wins
		repoLine(`""`, "src/c.js", "src/c.js"),     // 3: the default repository, named: wins
		repoLine(`null`, "src/d.js", "src/d.js"),   // 4: null names none
		repoLine("", "src/e.js", "src/other.js"),   // 5: rejected by the publisher, in the flag's repository
		`{"repository":"own","fileId":"src/f.js"}`, // 6: rejected when decoded, in its own
		`{"repository":"own","fileId":"src/g.js",`, // 7: not JSON: no repository is known
		`{"fileId":"","pois":[]}`,                  // 8: rejected without a file id, in the flag's repository
		repoLine(`""`, "src/h.js", "src/other.js"), // 9: rejected in the default repository: named by none
	}, "\n")

	r := run(t, db, input, nil, "publish", "--repository", "flagged", "--json")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	var sum cli.PublishSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, 4, sum.Files)
	for file, repo := range map[string]string{"src/a.js": "flagged", "src/b.js": "own", "src/c.js": "", "src/d.js": "flagged"} {
		require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE file_id = $1 AND repository = $2`, file, repo), file)
		require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job
			WHERE kind = 'resolve_file' AND args->>'fileId' = $1 AND coalesce(args->>'repository', '') = $2`, file, repo), file)
	}

	rejected := map[int]cli.RejectedLine{}
	for _, l := range sum.Rejected {
		rejected[l.Line] = l
	}
	require.Len(t, rejected, 5)
	require.Equal(t, "flagged", rejected[5].Repository)
	require.Equal(t, "own", rejected[6].Repository)
	require.Empty(t, rejected[7].Repository)
	require.Equal(t, "flagged", rejected[8].Repository)
	require.Empty(t, rejected[9].Repository)
	require.Contains(t, r.stdout, `"repository": "flagged"`)

	// The rejections on standard error (without --json, whose summary has
	// them) name the repository when it is not the default one, and only
	// once.
	r = run(t, db, input, nil, "publish", "--repository", "flagged")
	require.Equal(t, cli.ExitRuntime, r.code, r.stderr)
	for _, want := range []string{
		`line 5: rejected: poi "src/e.js#1" (file "src/e.js", repository "flagged"): filePath "src/other.js" does not match`,
		`line 6: rejected: file "src/f.js" (repository "own"): pois is required`,
		"line 7: rejected: invalid JSON",
		`line 8: rejected: repository "flagged": fileId is empty`,
		`line 9: rejected: poi "src/h.js#1" (file "src/h.js"): filePath "src/other.js" does not match`,
	} {
		require.Contains(t, r.stderr, want)
	}
	for line := range strings.Lines(r.stderr) {
		require.LessOrEqual(t, strings.Count(line, "repository"), 1, line)
	}

	// Without the flag a line that names none is in the default
	// repository, as before.
	r = run(t, db, repoLine("", "src/a.js", "src/a.js"), nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE file_id = 'src/a.js' AND repository = ''`))

	r = run(t, nil, "", nil, "publish", "--help")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "--repository name")
	require.Contains(t, r.stdout, `A line's own "repository", even "", wins over the flag.`)
}
