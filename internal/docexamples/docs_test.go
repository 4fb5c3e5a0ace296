package docexamples_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/docexamples"
	"github.com/relay-dev/relay/internal/testdb"
)

// docBlocks parses README.md and docs/*.md, in that order.
func docBlocks(t *testing.T) []docexamples.Block {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	slices.Sort(docs)
	var out []docexamples.Block
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		blocks, err := docexamples.Parse(filepath.ToSlash(rel), text)
		require.NoError(t, err)
		out = append(out, blocks...)
	}
	return out
}

// demoDatabase runs `relay demo` on a new database of the test server, as
// `make demo` does on relay's, and returns its URL; the database is dropped
// when t ends.
func demoDatabase(t *testing.T) string {
	t.Helper()
	server := testdb.ServerURL(t)
	u, err := neturl.Parse(server)
	require.NoError(t, err)
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "relay_docs_" + hex.EncodeToString(suffix)
	u.Path = "/" + name
	url := u.String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, database.Drop(ctx, server, name))
	})
	out, code := relay(t, url, "demo")
	require.Equal(t, cli.ExitOK, code, "relay demo: %s", out)
	return url
}

// relay runs relay's command line with args, RELAY_DATABASE_URL set to url,
// and returns its output and exit code.
func relay(t *testing.T, url string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
		LookupEnv: func(k string) (string, bool) {
			if k == "RELAY_DATABASE_URL" {
				return url, true
			}
			return "", false
		},
		StdinIsTerminal: func() bool { return false },
	})
	return out.String(), code
}

// lockRoles holds, until t's cleanups have run, a session advisory lock in
// the test server's database that every run of this test takes: the
// blocks create roles of fixed names (relay_publisher, my_service), which
// are the whole cluster's, so two test processes on one server (two CI
// runs side by side) would otherwise create them at once and fail with
// "role already exists".
func lockRoles(t *testing.T) {
	t.Helper()
	release, err := testdb.HoldLock(context.Background(), testdb.ServerURL(t), "relay-docexamples-roles",
		"another run of the pasted examples holds the roles", io.Discard)
	require.NoError(t, err)
	t.Cleanup(release)
}

// roles are the cluster's role names.
func roles(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT rolname FROM pg_roles`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// TestDocs_PastedExamplesRun runs, as written, every block of README.md and
// docs/*.md that a reader would paste, against the database `relay demo`
// leaves (relay's tables and functions in public, the demo's files and
// failed POIs): each ```sql block through psql (ON_ERROR_STOP), each ```sh
// block's relay commands in order (in a temporary working directory), each
// ```python, ```ts and ```java block as a program (runProgram), in document
// order. A program must commit its own row and its publish: reviews and
// publish_queue each gain one row. Blocks not meant to run carry a not-run
// marker with its reason (package doc); a block of code that has neither a
// runner nor a marker fails the test. It logs what it ran and what it did
// not.
func TestDocs_PastedExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs relay demo and every pasted block: tens of seconds")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatalf("psql runs the documentation's SQL as a reader would: install it (make clients, or apt-get install postgresql-client): %v", err)
	}
	blocks := docBlocks(t)
	var unmarked []string
	for _, b := range blocks {
		if docexamples.KindOf(b.Lang) == docexamples.Pasted && b.NotRun == "" {
			unmarked = append(unmarked, b.String())
		}
	}
	require.Empty(t, unmarked, "code no test runs needs a <!-- not-run: REASON --> marker on the line before its fence")
	clients := requirePrograms(t)

	lockRoles(t)
	url := demoDatabase(t)
	before := roles(t, url)
	var ranSQL strings.Builder // every SQL block run: the roles they create are dropped at the end
	t.Cleanup(func() {
		var created []string
		for _, r := range roles(t, url) {
			if !slices.Contains(before, r) && strings.Contains(ranSQL.String(), r) {
				created = append(created, pgx.Identifier{r}.Sanitize())
			}
		}
		if len(created) == 0 {
			return
		}
		conn, err := pgx.Connect(context.Background(), url)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), fmt.Sprintf("DROP OWNED BY %[1]s; DROP ROLE %[1]s", strings.Join(created, ", ")))
		require.NoError(t, err)
	})
	t.Chdir(t.TempDir()) // files the commands write (relay failed export) land here

	var ran, notRun []string
	for _, b := range blocks {
		switch kind := docexamples.KindOf(b.Lang); {
		case b.NotRun != "":
			notRun = append(notRun, b.String()+": "+b.NotRun)
		case kind == docexamples.SQL:
			cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", "-")
			cmd.Stdin = strings.NewReader(b.Text)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s does not run as written:\n%s\n%s", b, b.Text, out)
			ranSQL.WriteString(b.Text)
			ran = append(ran, b.String())
		case kind == docexamples.Shell:
			cmds, err := docexamples.Commands(b.Text)
			require.NoError(t, err, "%s: only relay commands run here; give the block a not-run marker", b)
			for _, c := range cmds {
				require.Equal(t, "relay", c.Words[0], "%s, line %d: only relay commands run here; give the block a not-run marker", b, c.Line)
				out, code := relay(t, url, c.Words[1:]...)
				require.Equal(t, cli.ExitOK, code, "%s, line %d: %s exits %d:\n%s", b, c.Line, strings.Join(c.Words, " "), code, out)
			}
			ran = append(ran, fmt.Sprintf("%s, %d relay commands", b, len(cmds)))
		case kind == docexamples.Python || kind == docexamples.TypeScript || kind == docexamples.Java:
			reviews, queued := rowCount(t, url, "reviews"), rowCount(t, url, "publish_queue")
			with := runProgram(t, b, kind, url, clients)
			require.Equal(t, reviews+1, rowCount(t, url, "reviews"), "%s: the service's own row is committed", b)
			require.Equal(t, queued+1, rowCount(t, url, "publish_queue"), "%s: the analysis is queued with it", b)
			ran = append(ran, fmt.Sprintf("%s, with %s", b, with))
		}
	}
	t.Logf("ran %d blocks against the database relay demo leaves:\n  %s", len(ran), strings.Join(ran, "\n  "))
	t.Logf("not run, by their markers (%d):\n  %s", len(notRun), strings.Join(notRun, "\n  "))
	require.GreaterOrEqual(t, len(ran), 21, "README's three SQL blocks and its Python, TypeScript and Java programs, docs/failed_pois.md's queries and README's relay commands")
	for _, lang := range []string{"python", "ts", "java"} {
		require.True(t, slices.ContainsFunc(ran, func(r string) bool { return strings.Contains(r, "("+lang+")") }), "README's %s block ran", lang)
	}
}
