package ops_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/internal/testdb"
)

// startServer serves s (its Handler defaulting to the health endpoints,
// without a database) on a free port and stops it when t ends, waiting
// until every connection is closed.
func startServer(t *testing.T, s *ops.Server) string {
	t.Helper()
	if s.Handler == nil {
		s.Handler = ops.NewHealth(ops.HealthConfig{Metrics: ops.NewMetrics(nil, time.Second, testdb.Logger(t))}).Handler()
	}
	s.Logger = testdb.Logger(t)
	ctx, cancel := context.WithCancel(context.Background())
	addr, done, err := s.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	return addr.String()
}

// dial opens a raw connection that fails the test if any read waits longer
// than patience.
func dial(t *testing.T, addr string, patience time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(patience)))
	return c, bufio.NewReader(c)
}

func send(t *testing.T, c net.Conn, raw string) {
	t.Helper()
	_, err := io.WriteString(c, raw)
	require.NoError(t, err)
}

// requireClosed reads until the server closes the connection; a read
// deadline (the patience given to dial) failing first fails the test.
func requireClosed(t *testing.T, r *bufio.Reader, why string) {
	t.Helper()
	_, err := io.Copy(io.Discard, r)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "%s: the server kept the connection open", why)
		require.NoError(t, err, why)
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// A GET announcing a body that never comes was never answered: net/http
// reads the unread body before writing the response, to reuse the
// connection. It is answered at once now, and the connection closed.
func TestServer_AnswersAGETWhoseBodyNeverComes(t *testing.T) {
	t.Parallel()
	addr := startServer(t, &ops.Server{})
	for _, req := range []string{
		"GET /healthz HTTP/1.1\r\nHost: relay\r\nContent-Length: 100\r\n\r\n",
		"GET /nope HTTP/1.1\r\nHost: relay\r\nContent-Length: 100\r\n\r\npart of it",
		"POST /healthz HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello",
	} {
		// Well inside ReadTimeoutDefault: the answer does not wait for it.
		c, r := dial(t, addr, 3*time.Second)
		send(t, c, req)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err, "%q: no answer while the body is missing", req)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.True(t, resp.Close, "the connection is not reused")
		requireClosed(t, r, req)
	}
}

// HEAD is answered like GET without the body: same status and headers, the
// Content-Length GET's body has, and the connection closed, so a client
// that reads until the end of the response does not hang.
func TestServer_HEADAnswersLikeGETWithoutABody(t *testing.T) {
	t.Parallel()
	addr := startServer(t, &ops.Server{})
	for _, path := range []string{"/healthz", "/metrics", "/nope"} {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())

		c, r := dial(t, addr, 3*time.Second)
		send(t, c, "HEAD "+path+" HTTP/1.1\r\nHost: relay\r\n\r\n")
		head, err := http.ReadResponse(r, &http.Request{Method: http.MethodHead})
		require.NoError(t, err)
		require.Equal(t, resp.StatusCode, head.StatusCode, path)
		require.Equal(t, resp.Header.Get("Content-Type"), head.Header.Get("Content-Type"), path)
		n, err := strconv.Atoi(head.Header.Get("Content-Length"))
		require.NoError(t, err, "%s: HEAD has no Content-Length", path)
		if path != "/metrics" { // the runtime's metrics change between scrapes
			require.Equal(t, len(body), n, path)
		} else {
			require.Positive(t, n)
		}
		rest, err := io.ReadAll(r)
		if err != nil {
			require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "%s: HEAD left the connection open", path)
		}
		require.Empty(t, rest, "%s: HEAD sent a body", path)
	}
}

// An idle keep-alive connection stayed open for good (no IdleTimeout).
func TestServer_ClosesIdleKeepAliveConnections(t *testing.T) {
	t.Parallel()
	addr := startServer(t, &ops.Server{IdleTimeout: 200 * time.Millisecond})
	c, r := dial(t, addr, 5*time.Second)
	send(t, c, "GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n")
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Connection"), "a plain GET keeps the connection for the next scrape")
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	start := time.Now()
	requireClosed(t, r, "idle keep-alive connection")
	require.Less(t, time.Since(start), 4*time.Second)
}

// A client that never finishes its headers (slowloris) is cut off.
func TestServer_CutsOffSlowHeaders(t *testing.T) {
	t.Parallel()
	addr := startServer(t, &ops.Server{ReadHeaderTimeout: 200 * time.Millisecond})
	c, r := dial(t, addr, 5*time.Second)
	send(t, c, "GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
	requireClosed(t, r, "slow headers")
}

// The default still cuts a slowloris client off after 5 seconds.
func TestServer_DefaultCutsOffSlowHeadersAfterFiveSeconds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes 5s")
	}
	addr := startServer(t, &ops.Server{})
	c, r := dial(t, addr, 15*time.Second)
	start := time.Now()
	send(t, c, "GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
	requireClosed(t, r, "slow headers")
	require.InDelta(t, ops.ReadHeaderTimeoutDefault.Seconds(), time.Since(start).Seconds(), 2)
}

// A response the client does not read is abandoned after WriteTimeout.
func TestServer_AbandonsAResponseNobodyReads(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	chunk := []byte(strings.Repeat("x", 64<<10))
	addr := startServer(t, &ops.Server{WriteTimeout: 300 * time.Millisecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for {
				if _, err := w.Write(chunk); err != nil {
					writeErr <- err
					return
				}
			}
		})})
	c, _ := dial(t, addr, 5*time.Second)
	send(t, c, "GET / HTTP/1.1\r\nHost: relay\r\n\r\n")
	select {
	case err := <-writeErr:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server is still writing to a client that does not read")
	}
}

func TestServer_RefusesHugeHeaders(t *testing.T) {
	t.Parallel()
	addr := startServer(t, &ops.Server{})
	c, r := dial(t, addr, 5*time.Second)
	send(t, c, "GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Big: "+strings.Repeat("b", 2*ops.MaxHeaderBytesDefault)+"\r\n\r\n")
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}

// /readyz's body is served to whoever reaches the port; a check's error
// (pgx quotes the host, which a URL with an unencoded '@' in its password
// fills with the password's tail) is redacted.
func TestHealth_ReadyzRedactsCheckErrors(t *testing.T) {
	t.Parallel()
	const u = "postgres://adv_pw:s3cr3t@Rdz9tail@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"
	cfg, err := pgxpool.ParseConfig(u)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	rd := ops.NewHealth(ops.HealthConfig{Pool: pool, Redactor: config.NewRedactor(u)}).Ready(context.Background())
	require.Equal(t, ops.StatusUnavailable, rd.Status)
	require.False(t, rd.Checks["database"].OK)
	require.NotContains(t, rd.Checks["database"].Error, "Rdz9tail")
	require.NotContains(t, strings.Join(rd.Reasons, "\n"), "Rdz9tail")
}
