package ops

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every phase of a connection is bounded by default; the worker's server
// had only ReadHeaderTimeout (an idle keep-alive connection, a request
// body, a response nobody reads could each hold a connection for good).
func TestServer_DefaultLimits(t *testing.T) {
	t.Parallel()
	srv := (&Server{Handler: http.NotFoundHandler()}).httpServer()
	require.Equal(t, 5*time.Second, srv.ReadHeaderTimeout, "slowloris is cut off after 5s")
	require.Equal(t, ReadTimeoutDefault, srv.ReadTimeout)
	require.Equal(t, WriteTimeoutDefault, srv.WriteTimeout)
	require.Equal(t, IdleTimeoutDefault, srv.IdleTimeout)
	require.Equal(t, MaxHeaderBytesDefault, srv.MaxHeaderBytes)
	for _, d := range []time.Duration{srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout} {
		require.Positive(t, d)
		require.LessOrEqual(t, d, time.Minute)
	}
}
