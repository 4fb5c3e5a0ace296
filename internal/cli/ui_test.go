package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
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
	r := run(t, nil, "", nil, "worker", "--database-url", unreachable, "--http-addr", "0.0.0.0:0", "--worker-console")
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
