package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The worker's HTTP server's limits. The endpoints take no request body
// and answer in well under a second (/readyz bounds its checks at 5s), so
// every phase of a connection is bounded: a client that trickles its
// headers (slowloris) is cut off after ReadHeaderTimeoutDefault, one that
// never sends its whole request after ReadTimeoutDefault, a response that
// cannot be written (a scraper that stopped reading) after
// WriteTimeoutDefault, and an idle keep-alive connection is closed after
// IdleTimeoutDefault.
const (
	ReadHeaderTimeoutDefault = 5 * time.Second
	ReadTimeoutDefault       = 10 * time.Second
	// WriteTimeoutDefault leaves /metrics (a refresh of the database gauges
	// plus the encoding) ample time; Prometheus' default scrape timeout is
	// 10s.
	WriteTimeoutDefault = 30 * time.Second
	// IdleTimeoutDefault is longer than the usual 15s scrape interval, so a
	// scraper keeps its connection between scrapes.
	IdleTimeoutDefault = 30 * time.Second
	// MaxHeaderBytesDefault: a probe or a scraper sends a few hundred bytes.
	MaxHeaderBytesDefault = 16 << 10
	// shutdownTimeout bounds how long in-flight requests may finish once
	// the server is told to stop.
	shutdownTimeout = 5 * time.Second
)

// Server serves an http.Handler with bounded timeouts. Zero fields take the
// defaults above (tests shorten them).
type Server struct {
	Handler           http.Handler
	Logger            *slog.Logger
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// BodyPrefix, when set, is a path prefix whose requests keep their
	// body (the web console's forms, mounted in the worker's server): the
	// handler under it bounds what it reads. Every other request's body is
	// never read (see bodyless).
	BodyPrefix string
	// Endpoints names what is served, for the log ("/healthz /readyz
	// /metrics" when empty).
	Endpoints string
}

// Serve listens on addr and serves handler with the default limits until
// ctx ends, then shuts down. See Server.Serve.
func Serve(ctx context.Context, addr string, handler http.Handler, logger *slog.Logger) (net.Addr, <-chan error, error) {
	return (&Server{Handler: handler, Logger: logger}).Serve(ctx, addr)
}

// Serve listens on addr and serves until ctx ends, then shuts down. It
// returns once the listener is bound (errors binding are returned), with
// the bound address (useful with port 0) and a channel that receives the
// server's outcome once it has stopped and every connection is closed.
func (s *Server) Serve(ctx context.Context, addr string) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("error listening on %s: %w", addr, err)
	}
	srv := s.httpServer()
	done := make(chan error, 1)
	go func() {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		var err error
		select {
		case err = <-served:
		case <-ctx.Done():
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			if serr := srv.Shutdown(shutdownCtx); serr != nil {
				_ = srv.Close() // requests still running past the deadline
			}
			cancel()
			err = <-served
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	if s.Logger != nil {
		s.Logger.Info("serving HTTP", slog.String("addr", ln.Addr().String()),
			slog.String("endpoints", cmp.Or(s.Endpoints, "/healthz /readyz /metrics")))
	}
	return ln.Addr(), done, nil
}

func (s *Server) httpServer() *http.Server {
	srv := &http.Server{
		Handler:           bodyless(s.Handler, s.BodyPrefix),
		ReadHeaderTimeout: cmp.Or(s.ReadHeaderTimeout, ReadHeaderTimeoutDefault),
		ReadTimeout:       cmp.Or(s.ReadTimeout, ReadTimeoutDefault),
		WriteTimeout:      cmp.Or(s.WriteTimeout, WriteTimeoutDefault),
		IdleTimeout:       cmp.Or(s.IdleTimeout, IdleTimeoutDefault),
		MaxHeaderBytes:    cmp.Or(s.MaxHeaderBytes, MaxHeaderBytesDefault),
	}
	if s.Logger != nil {
		srv.ErrorLog = slog.NewLogLogger(s.Logger.Handler(), slog.LevelDebug)
	}
	return srv
}

// bodyless adapts next, whose endpoints take no request body (it never
// sees one), to clients
// that send one or that send HEAD:
//
//   - A request body is never read: a request announcing one (a GET with
//     Content-Length: 100 whose body never comes) is answered at once and
//     its connection closed. Otherwise net/http, before writing the
//     response and again after it, reads the unread body to reuse the
//     connection, and the answer waits for bytes that may never arrive.
//   - HEAD is answered like GET without the body: the same status and
//     headers, with the Content-Length GET's body would have, and the
//     connection closed, so a client that reads until the end of the
//     response (curl -X HEAD, a script) finishes at once.
func bodyless(next http.Handler, bodyPrefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bodyPrefix != "" && strings.HasPrefix(r.URL.Path, bodyPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength != 0 {
			// Not read: fail at once the reads net/http would make, before
			// the response and after it, to drain the body.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
		if r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		hw := &headWriter{w: w, code: http.StatusOK}
		next.ServeHTTP(hw, r)
		if w.Header().Get("Content-Length") == "" && w.Header().Get("Transfer-Encoding") == "" {
			w.Header().Set("Content-Length", strconv.FormatInt(hw.n, 10))
		}
		w.WriteHeader(hw.code)
	})
}

// headWriter counts the body a handler writes for HEAD and holds back its
// status until the handler is done, so the Content-Length can be set.
type headWriter struct {
	w    http.ResponseWriter
	code int
	n    int64
	sent bool
}

func (h *headWriter) Header() http.Header { return h.w.Header() }

func (h *headWriter) WriteHeader(code int) {
	if !h.sent {
		h.code, h.sent = code, true
	}
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.sent = true
	h.n += int64(len(p))
	return len(p), nil
}
