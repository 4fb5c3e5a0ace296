// Package console is relay's web console: River UI for jobs and queues, and
// server-rendered pages over both dead-letter tables, MapReduce jobs and
// the graph (html/template and go:embed). Every action calls the store
// method the matching CLI command calls, is confirmed on a page showing
// what it would do, and is audited with the acting user ("ui:<user>").
// Pages work without script; two scripts of static/ (loaded under the
// pages' CSP, 'self' only) add the search box's completion and draw a
// POI's neighbourhood with dagre (static/vendor, pinned).
package console

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/mapreduce"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what a Console needs.
type Config struct {
	// Pool is the database.
	Pool *pgxpool.Pool
	// Jobs inserts the River jobs of reprocesses and retries and backs River
	// UI (an insert-only client, worker.NewInsertClient, is enough).
	Jobs *river.Client[pgx.Tx]
	// Reprocess tunes reprocesses as `relay reprocess` is tuned.
	Reprocess failed.ReprocessConfig
	// HeartbeatTimeout is worker_heartbeat_timeout: which workers are live.
	HeartbeatTimeout time.Duration
	// Database is shown on the overview; it is rendered only through
	// config.RedactURL by the caller.
	Database string
	// ReadOnly hides every action and answers every POST with 403.
	ReadOnly bool
	// Auth authenticates requests (zero: no authentication; CheckAddr
	// decides where that is allowed).
	Auth Auth
	// Prefix is the path the console is mounted under ("" or e.g. "/ui").
	Prefix string
	// Logger logs failed requests.
	Logger *slog.Logger
}

// Console serves the web console.
type Console struct {
	cfg     Config
	pool    *pgxpool.Pool
	failed  *failed.Store
	reproc  *failed.Reprocessor
	items   *items.Store
	mr      *mapreduce.Store
	river   *riverui.Handler
	csrf    *csrf
	pages   map[string]*template.Template
	handler http.Handler
}

// New builds a Console. Start must run before it serves River UI.
func New(cfg Config) (*Console, error) {
	if cfg.Pool == nil || cfg.Jobs == nil {
		return nil, errors.New("console: a pool and a River client are required")
	}
	if err := cfg.Auth.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	if cfg.Prefix != "" && !strings.HasPrefix(cfg.Prefix, "/") {
		return nil, fmt.Errorf("console prefix %q must start with /", cfg.Prefix)
	}
	tok, err := newCSRF()
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	rv, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(cfg.Jobs, nil),
		Logger:    cfg.Logger,
		Prefix:    cfg.Prefix + "/river",
	})
	if err != nil {
		return nil, fmt.Errorf("error building River UI: %w", err)
	}
	rc := cfg.Reprocess
	c := &Console{
		cfg: cfg, pool: cfg.Pool, csrf: tok, pages: pages, river: rv,
		failed: failed.NewStore(cfg.Pool),
		reproc: failed.NewReprocessor(cfg.Pool, cfg.Jobs, &rc, cfg.Logger),
		items:  items.NewStore(cfg.Pool, cfg.Logger),
		mr:     mapreduce.NewStore(cfg.Pool),
	}
	c.handler = c.routes()
	return c, nil
}

// Start starts River UI's background services until ctx ends.
func (c *Console) Start(ctx context.Context) error {
	if err := c.river.Start(ctx); err != nil {
		return fmt.Errorf("error starting River UI: %w", err)
	}
	return nil
}

// ServeHTTP serves the console (paths under Config.Prefix).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// maxFormBytes bounds a POST's body: a form names at most a page of rows.
const maxFormBytes = 1 << 20

// routes builds the handler: authentication, then read-only and CSRF
// checks on every POST, then the pages.
func (c *Console) routes() http.Handler {
	mux := http.NewServeMux()
	p := c.cfg.Prefix
	page := func(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
		mux.Handle(pattern, c.pageHandler(h))
	}
	page("GET "+p+"/{$}", c.overview)
	page("GET "+p+"/failed", c.failedList)
	page("GET "+p+"/failed/groups", c.failedGroups)
	page("GET "+p+"/failed/{id}", c.failedDetail)
	page("POST "+p+"/failed/reprocess", c.failedReprocess)
	page("POST "+p+"/failed/ignore", c.failedIgnore)
	page("POST "+p+"/failed/purge", c.failedPurge)
	page("GET "+p+"/items", c.itemsList)
	page("GET "+p+"/items/groups", c.itemsGroups)
	page("GET "+p+"/items/{job}/{item}", c.itemDetail)
	page("POST "+p+"/items/retry", c.itemsRetry)
	page("POST "+p+"/items/purge", c.itemsPurge)
	page("POST "+p+"/items/clear", c.itemsClear)
	page("GET "+p+"/jobs", c.jobsList)
	page("GET "+p+"/jobs/{id}", c.jobDetail)
	page("GET "+p+"/search", c.search)
	mux.HandleFunc("GET "+p+"/search/complete", c.complete)
	page("GET "+p+"/poi", c.poiPage)
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", http.FileServerFS(static)))
	river := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header(), riverCSP)
		c.river.ServeHTTP(w, r)
	})
	mux.Handle(p+"/river", river)
	mux.Handle(p+"/river/", river)
	mux.Handle(p+"/", c.pageHandler(func(w http.ResponseWriter, r *http.Request) error {
		return httpError{code: http.StatusNotFound, msg: "no such page: " + r.URL.Path}
	}))

	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := c.cfg.Auth.authenticate(r)
		if !ok {
			if c.cfg.Auth.Password != "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="relay console", charset="UTF-8"`)
			}
			securityHeaders(w.Header(), pageCSP)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
		if !safe && c.cfg.ReadOnly {
			securityHeaders(w.Header(), pageCSP)
			http.Error(w, "the console is read-only: actions are disabled", http.StatusForbidden)
			return
		}
		if !safe {
			if err := cop.Check(r); err != nil {
				securityHeaders(w.Header(), pageCSP)
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

type userKey struct{}

// user is the request's authenticated user ("" without authentication).
func user(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// actor is the audit actor of r's actions: "ui:" and the authenticated
// user, or the operating-system user running the console when it has no
// authentication.
func actor(r *http.Request) string {
	return "ui:" + cmp.Or(user(r), deadletter.DefaultActor())
}
