package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
)

// A bad --http-addr exited 1 after the worker had connected to the
// database; it is a usage error (exit 2) before anything starts. The
// database here is unreachable: reaching it would exit 1.
func TestWorker_BadHTTPAddrIsAUsageError(t *testing.T) {
	t.Parallel()
	const unreachable = "postgres://relay@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"
	for _, addr := range []string{"nonsense", ":99999", "127.0.0.1", "127.0.0.1:port-that-is-no-service", "host name:80"} {
		r := run(t, nil, "", nil, "worker", "--database-url", unreachable, "--http-addr", addr)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", addr, r.stderr)
		require.Contains(t, r.stderr, "invalid http_addr", addr)
		require.NotContains(t, r.stderr, "error connecting", "%q: checked after starting", addr)

		r = run(t, nil, "", map[string]string{"RELAY_HTTP_ADDR": addr}, "worker", "--database-url", unreachable)
		require.Equal(t, cli.ExitUsage, r.code, "%q via the environment: %s", addr, r.stderr)
	}
}
