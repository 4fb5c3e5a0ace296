package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// Lines are published in batches, but every line still stands on its own:
// a line rejected inside a batch (here a POI id another file of the same
// batch publishes, which only the database check sees across lines) is
// reported by number and the rest of its batch is published; a file that
// appears twice is published twice, in order; a batch boundary changes
// nothing.
func TestPublish_BatchesKeepEachLineOnItsOwn(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	line := func(file string, ids ...string) string {
		var pois []string
		for _, id := range ids {
			pois = append(pois, fmt.Sprintf(`{"id":%q,"type":"function_definition","name":"n_%s","filePath":%q,"lineNumber":1,"rawCode":"function n_%s() {}"}`,
				id, id, file, id))
		}
		return fmt.Sprintf(`{"fileId":%q,"pois":[%s]}`, file, strings.Join(pois, ","))
	}
	var lines []string
	for i := range publishBatchFiles + 10 { // more than one batch
		lines = append(lines, line(fmt.Sprintf("src/f%03d.js", i), fmt.Sprintf("p%03d", i)))
	}
	lines[3] = line("src/thief.js", "p001")                       // line 4 takes line 2's POI id
	lines[5] = line("src/f002.js", "p002", "p002b")               // line 6 publishes line 3's file again
	lines[publishBatchFiles+2] = line("src/f001.js", "p001", "x") // in the next batch: a re-publish
	code, stdout, stderr := runPublish(t, db, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	require.Equal(t, ExitRuntime, code, stderr)
	require.Contains(t, stdout, "1 line rejected")
	require.Contains(t, stderr, "line 4: rejected:")
	require.Contains(t, stderr, `"src/thief.js"`)
	require.Equal(t, 1, strings.Count(stderr, "rejected:"), stderr)

	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE file_id = 'src/thief.js'`))
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT version FROM files WHERE file_id = 'src/f002.js'`), "published twice, in order")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE file_id = 'src/f002.js'`), "the second analysis stands")
	require.Equal(t, 2, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois WHERE file_id = 'src/f001.js'`))
	require.Equal(t, publishBatchFiles+10-3, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`),
		"every file but the three whose lines were replaced above")
}
