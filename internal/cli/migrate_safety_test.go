package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/migrations"
)

func runOnTerminal(t *testing.T, db *testdb.DB, answer string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--database-url", db.URL, "--database-schema", db.Schema)
	code = Main(context.Background(), args, Env{
		Stdin: strings.NewReader(answer), Stdout: &out, Stderr: &errOut,
		LookupEnv:       func(string) (string, bool) { return "", false },
		StdinIsTerminal: func() bool { return true },
	})
	return code, out.String(), errOut.String()
}

// On a terminal, migrate down lists what it destroys and asks; anything
// but yes rolls nothing back.
func TestMigrateDown_AsksOnATerminal(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO files (file_id) VALUES ('a.go'), ('b.go')`)
	require.NoError(t, err)
	version := func() int {
		return testdb.Count(t, db.Pool, `SELECT max(version_id) FROM `+migrations.TableName)
	}
	latest := version()

	for _, answer := range []string{"", "n\n", "no\n", "whatever\n"} {
		code, stdout, stderr := runOnTerminal(t, db, answer, "migrate", "down", "--to", "1")
		require.Equal(t, ExitRuntime, code, "answer %q: %s", answer, stderr)
		require.Contains(t, stderr, "drops tables: dead_letter_events (0 rows), dead_lettered_items (0 rows), failed_pois (0 rows), files (2 rows)")
		require.Contains(t, stderr, fmt.Sprintf("Roll back %d migrations and destroy this data? [y/N] ", latest-1))
		require.Contains(t, stderr, "migrate down cancelled: nothing rolled back")
		require.Empty(t, stdout)
		require.Equal(t, latest, version())
	}

	code, stdout, stderr := runOnTerminal(t, db, "y\n", "migrate", "down", "--to", "1")
	require.Equal(t, ExitOK, code, stderr)
	require.Equal(t, latest-1, strings.Count(stdout, "rolled back"), stdout)
	require.Equal(t, 1, version())

	// --yes does not ask.
	code, stdout, stderr = runOnTerminal(t, db, "", "migrate", "down", "--yes")
	require.Equal(t, ExitOK, code, stderr)
	require.NotContains(t, stderr, "[y/N]")
	require.Equal(t, "rolled back 00001 River's migrations (Go)\ndropped relay_goose_db_version: nothing of relay is left in the schema\n", stdout)
}

// Without Env.StdinIsTerminal, standard input is a terminal only when it
// is a character device other than /dev/null.
func TestIsInteractive(t *testing.T) {
	t.Parallel()
	require.False(t, isInteractive(strings.NewReader("y\n")))

	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	require.False(t, isInteractive(r), "a pipe")

	f, err := os.Create(filepath.Join(t.TempDir(), "answers"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	require.False(t, isInteractive(f), "a file")

	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	t.Cleanup(func() { _ = null.Close() })
	require.False(t, isInteractive(null), "/dev/null is a character device, not a terminal")
}
