package docexamples_test

import (
	"context"
	"errors"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/docexamples"
)

// The programs' runtimes, as `make clients` installs them: Debian's python3
// with python3-psycopg, Node with node-postgres and TypeScript from
// outbox/testdata/clients (pinned in its package-lock.json), and a JDK with
// Debian's libpostgresql-jdbc-java.
const (
	python3  = "/usr/bin/python3"
	jdbcJar  = "/usr/share/java/postgresql.jar"
	makeHint = "make clients installs the documentation's Python, TypeScript and Java runtimes"
)

// clientsDir is outbox/testdata/clients, whose node_modules hold pg,
// typescript and their types.
func clientsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../outbox/testdata/clients")
	require.NoError(t, err)
	return dir
}

// requirePrograms fails the test, naming what is missing, unless every
// runtime the program blocks need is installed: a block is never skipped.
// It returns the clients' directory (clientsDir; call it before a Chdir).
func requirePrograms(t *testing.T) string {
	t.Helper()
	var missing []string
	if err := exec.Command(python3, "-c", "import psycopg").Run(); err != nil {
		missing = append(missing, python3+" with psycopg 3 (python3-psycopg)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	for _, m := range []string{"pg", "typescript", "@types/pg", "@types/node"} {
		if _, err := os.Stat(filepath.Join(clientsDir(t), "node_modules", m)); err != nil {
			missing = append(missing, "outbox/testdata/clients/node_modules/"+m)
		}
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing = append(missing, "java (a JDK, 11 or later)")
	}
	if _, err := os.Stat(jdbcJar); err != nil {
		missing = append(missing, jdbcJar+" (libpostgresql-jdbc-java)")
	}
	require.Empty(t, missing, makeHint)
	return clientsDir(t)
}

// runProgram runs block b, a program of kind, as a reader would after
// `make demo`: RELAY_DATABASE_URL (Python, TypeScript) or
// JDBC_DATABASE_URL (Java, the same database in JDBC's form) names the demo
// database url; clients is clientsDir. It returns what it ran the block
// with.
func runProgram(t *testing.T, b docexamples.Block, kind docexamples.Kind, url, clients string) string {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(), "RELAY_DATABASE_URL="+url, "JDBC_DATABASE_URL="+jdbcURL(t, url))
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s does not run as written (%s %s):\n%s\n%s", b, name, strings.Join(args, " "), b.Text, out)
	}
	write := func(name string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(b.Text), 0o600))
		return path
	}
	switch kind {
	case docexamples.Python:
		run(python3, write("block.py"))
		return "python3, psycopg 3"
	case docexamples.TypeScript:
		// node resolves pg from the block's directory up: link the
		// clients' node_modules there.
		modules := filepath.Join(clients, "node_modules")
		require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
		src := write("block.mts")
		run("node", filepath.Join(modules, "typescript", "bin", "tsc"), "--strict", "--skipLibCheck", "--module", "nodenext",
			"--target", "es2022", "--types", "node", "--outDir", filepath.Join(dir, "out"), src)
		run("node", filepath.Join(dir, "out", "block.mjs"))
		return "tsc --strict, node, node-postgres"
	case docexamples.Java:
		run("java", "-cp", jdbcJar, write("Block.java"))
		return "java, pgjdbc"
	}
	t.Fatalf("%s: no runner for kind %d", b, kind)
	return ""
}

// jdbcURL is url, a postgres:// URL, in JDBC's form: jdbc:postgresql://
// host:port/db with user, password and sslmode as parameters.
func jdbcURL(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	q := neturl.Values{}
	if u.User != nil {
		q.Set("user", u.User.Username())
		if p, ok := u.User.Password(); ok {
			q.Set("password", p)
		}
	}
	if m := u.Query().Get("sslmode"); m != "" {
		q.Set("sslmode", m)
	}
	return "jdbc:postgresql://" + u.Host + u.Path + "?" + q.Encode()
}

// rowCount is the number of rows of table (0 when it does not exist yet).
func rowCount(t *testing.T, url, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return 0
	}
	require.NoError(t, err)
	return n
}
