package cli_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// batchesCompleted reads N from the worker's "N batches completed" summary.
func batchesCompleted(t *testing.T, stdout string) int {
	t.Helper()
	m := regexp.MustCompile(`(\d+) batches completed`).FindStringSubmatch(stdout)
	require.NotNil(t, m, "no summary in %q", stdout)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

func TestWorker_UntilIdleSummaryCountsThisRunOnly(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	input := strings.Join([]string{
		`{"fileId":"src/a.js","pois":[{"id":"a1","type":"function_definition","name":"a","filePath":"src/a.js","lineNumber":1,"rawCode":"function a() { b(); }"}]}`,
		`{"fileId":"src/b.js","pois":[{"id":"b1","type":"function_definition","name":"b","filePath":"src/b.js","lineNumber":1,"rawCode":"function b() {}"}]}`,
	}, "\n")
	r := run(t, db, input, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)

	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 2, batchesCompleted(t, r.stdout), r.stdout)

	// Nothing queued: the second run finished nothing, whatever River's
	// table still holds from the first.
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 0, batchesCompleted(t, r.stdout), r.stdout)
	require.Contains(t, r.stdout, "(this run: 0 batches completed, 0 discarded)")

	// One more file: the third run counts it alone.
	r = run(t, db, `{"fileId":"src/c.js","pois":[{"id":"c1","type":"function_definition","name":"c","filePath":"src/c.js","lineNumber":1,"rawCode":"function c() {}"}]}`, nil, "publish")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, db, "", nil, "worker", "--until-idle")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, 1, batchesCompleted(t, r.stdout), r.stdout)
}
