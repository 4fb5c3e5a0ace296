package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

func analysisLine(fileID string) string {
	return `{"fileId":"` + fileID + `","pois":[{"id":"` + fileID + `#1","type":"function_definition","name":"f","filePath":"` +
		fileID + `","lineNumber":1}]}`
}

func runPublish(t *testing.T, db *testdb.DB, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(append([]string{"publish"}, args...), "--database-url", db.URL, "--database-schema", db.Schema)
	code = Main(context.Background(), args, Env{
		Stdin: stdin, Stdout: &out, Stderr: &errOut,
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	return code, out.String(), errOut.String()
}

// A line over --max-line-bytes is rejected by number and size, and the
// lines around it are still published.
func TestPublish_RejectsALineOverMaxLineBytesAndPublishesTheRest(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	huge := `{"fileId":"src/huge.js","pois":[{"id":"h","type":"function_definition","name":"h","filePath":"src/huge.js",` +
		`"lineNumber":1,"rawCode":"` + strings.Repeat("0", 1<<20) + `"}]}`
	input := strings.Join([]string{analysisLine("src/a.js"), analysisLine("src/b.js"), huge, analysisLine("src/c.js"), huge}, "\n")
	file := filepath.Join(t.TempDir(), "in.ndjson")
	require.NoError(t, os.WriteFile(file, []byte(input), 0o600))

	code, stdout, stderr := runPublish(t, db, strings.NewReader(""), file, "--max-line-bytes", "1024")
	require.Equal(t, ExitRuntime, code, stderr)
	require.Contains(t, stdout, "published 3 files, 3 POIs, 3 jobs; 2 lines rejected")
	size := strconv.Itoa(len(huge))
	require.Contains(t, stderr, "line 3: rejected: 1.0 MiB ("+size+" bytes) exceeds --max-line-bytes 1 KiB (1024 bytes)\n")
	require.Contains(t, stderr, "line 5: rejected: 1.0 MiB ("+size+" bytes) exceeds", "the last line, without a newline")
	require.Contains(t, stderr, "2 of 5 lines rejected")
	require.Equal(t, 3, testdb.Count(t, db.Pool, `SELECT count(*) FROM files`))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM files WHERE file_id = 'src/huge.js'`))

	// The same from stdin, as JSON; under the default limit (64 MiB) the
	// line is published.
	code, stdout, _ = runPublish(t, db, strings.NewReader(input), "--json", "--max-line-bytes", "1024")
	require.Equal(t, ExitRuntime, code)
	var sum PublishSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	require.Equal(t, 5, sum.Lines)
	require.Equal(t, []int{3, 5}, []int{sum.Rejected[0].Line, sum.Rejected[1].Line})
	code, stdout, stderr = runPublish(t, db, strings.NewReader(huge))
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, stdout, "published 1 file, 1 POI")

	code, _, stderr = runPublish(t, db, strings.NewReader(""), "--max-line-bytes", "0")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, stderr, "--max-line-bytes 0 must be at least 1")
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	read := func(input string, max int64) []string {
		lr := newLineReader(strings.NewReader(input), max)
		var out []string
		for {
			line, err := lr.next()
			var tooLong *lineTooLongError
			if errors.As(err, &tooLong) {
				out = append(out, "too long: "+tooLong.Error())
				err = tooLong.readErr
			} else if len(line) > 0 || err == nil {
				out = append(out, string(line))
			}
			if err == io.EOF {
				return out
			}
			require.NoError(t, err)
		}
	}
	require.Equal(t, []string{"abc\n", "\n", "de"}, read("abc\n\nde", 3))
	require.Equal(t, []string{"abc\n", "too long: 4 B (4 bytes) exceeds --max-line-bytes 3 B (3 bytes)", "x\n"}, read("abc\nabcd\nx\n", 3))
	require.Equal(t, []string{"too long: 4 B (4 bytes) exceeds --max-line-bytes 3 B (3 bytes)"}, read("abcd", 3))
	long := strings.Repeat("z", 3*lineReaderChunk+5)
	require.Equal(t, []string{"a\n", "too long: 3.0 MiB (3145733 bytes) exceeds --max-line-bytes 1 MiB (1048576 bytes)", "b"},
		read("a\n"+long+"\nb", 1<<20))
	require.Equal(t, []string{"a\n", long + "\n", "b"}, read("a\n"+long+"\nb", int64(len(long))), "a line of exactly max bytes")
	require.Equal(t, "64 MiB", byteSize(64<<20))
	require.Equal(t, "1.5 GiB", byteSize(3<<29))
	require.Equal(t, "900 B", byteSize(900))
}

// zeros is a reader of n '0' bytes and then a newline: a line that never
// exists in memory.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n < 0 {
		return 0, io.EOF
	}
	if z.n == 0 {
		p[0] = '\n'
		z.n = -1
		return 1, nil
	}
	k := min(int64(len(p)), z.n)
	for i := range k {
		p[i] = '0'
	}
	z.n -= k
	return int(k), nil
}

// Skipping a 100 MiB line keeps the heap within a few MiB: the line is read
// through a 1 MiB buffer and dropped, never gathered.
func TestLineReader_SkipsAHugeLineInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100 MiB")
	}
	lr := newLineReader(io.MultiReader(&zeros{n: 100 << 20}, strings.NewReader("next\n")), 1<<20)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := lr.next()
	var tooLong *lineTooLongError
	require.ErrorAs(t, err, &tooLong)
	require.Equal(t, int64(100<<20), tooLong.size)
	line, err := lr.next()
	require.NoError(t, err)
	require.Equal(t, "next\n", string(line))
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(4<<20), "bytes allocated while skipping a 100 MiB line")
}
