package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// relay ui and the worker's console refuse an address beyond loopback
// without authentication, before connecting to the database (which is
// unreachable here: reaching it would exit 1).
func TestUI_RefusesANonLoopbackAddressWithoutAuthentication(t *testing.T) {
	t.Parallel()
	const unreachable = "postgres://relay@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:8080"} {
		r := run(t, nil, "", nil, "ui", "--database-url", unreachable, "--ui-addr", addr)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", addr, r.stderr)
		require.Contains(t, r.stderr, "only with authentication", addr)
	}
	r := run(t, nil, "", nil, "ui", "--database-url", unreachable, "--addr", "0.0.0.0:8080", "--read-only")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "only with authentication", "read-only needs authentication beyond loopback too")
	r = run(t, nil, "", nil, "ui", "--database-url", unreachable, "--addr", "nonsense")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--addr")
	r = run(t, nil, "", nil, "worker", "--database-url", unreachable, "--http-addr", "0.0.0.0:0", "--worker-console")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "worker_console")
	require.Contains(t, r.stderr, "only with authentication")

	r = run(t, nil, "", nil, "ui", "--database-url", unreachable, "--ui-addr", "0.0.0.0:8080", "--ui-user", "alice")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "ui_password")
	r = run(t, nil, "", nil, "worker", "--database-url", unreachable, "--worker-console")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "needs http_addr")
}

// relay ui serves the console until told to stop; the database URL it
// shows carries no password, and --read-only refuses every post.
func TestUI_ServesTheConsoleWithTheDatabasePasswordHidden(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "s3cret-pw") // trust authentication ignores it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderrR, stderrW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"ui", "--addr", "127.0.0.1:0", "--read-only",
			"--database-url", u.String(), "--database-schema", db.Schema}, cli.Env{
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderrW,
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		_ = stderrW.Close()
	}()
	addrRE := regexp.MustCompile(`serving the web console \(read-only\) on (http://127\.0\.0\.1:\d+)/`)
	lines := bufio.NewScanner(stderrR)
	var base string
	for lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
			break
		}
	}
	require.NotEmpty(t, base, "relay ui never said where it serves")
	go func() { _, _ = io.Copy(io.Discard, stderrR) }()

	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	require.Contains(t, string(page), "read-only")
	require.NotContains(t, string(page), "s3cret-pw")
	require.Contains(t, string(page), ":"+config.Mask+"@", "the database URL is shown redacted")
	resp, err = http.PostForm(base+"/failed/purge", url.Values{"older_than_days": {"1"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, cli.ExitOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("relay ui did not stop within 30s of being told to")
	}
}
