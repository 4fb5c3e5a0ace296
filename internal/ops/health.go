package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/relay-dev/relay/config"
)

// Health statuses in the /readyz body.
const (
	StatusOK          = "ok"          // HTTP 200
	StatusDegraded    = "degraded"    // HTTP 200: working, but dead letters pile up
	StatusUnavailable = "unavailable" // HTTP 503: cannot work (database, migrations, River)
)

// Readiness is the /readyz JSON body.
type Readiness struct {
	Status      string           `json:"status"`
	Reasons     []string         `json:"reasons"`
	Checks      map[string]Check `json:"checks"`
	DeadLetters DeadLetterLevels `json:"dead_letters"`
	CheckedAt   time.Time        `json:"checked_at"`
}

// Check is one readiness check's outcome.
type Check struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// DeadLetterLevels are the depths compared against the degraded thresholds.
type DeadLetterLevels struct {
	NewFailedPOIs        int64 `json:"new_failed_pois"`
	MaxNewFailedPOIs     int64 `json:"max_new_failed_pois"`
	DeadLetteredItems    int64 `json:"dead_lettered_items"`
	MaxDeadLetteredItems int64 `json:"max_dead_lettered_items"`
}

// HealthConfig wires the health checks.
type HealthConfig struct {
	Pool *pgxpool.Pool
	// MigrationsPending reports whether migrations are missing; its answer
	// is cached for a minute.
	MigrationsPending func(ctx context.Context) (bool, error)
	// RiverRunning reports whether the River client is working.
	RiverRunning func() bool
	// Thresholds above which the status is degraded.
	MaxNewFailedPOIs     int64
	MaxDeadLetteredItems int64
	Metrics              *Metrics
	Logger               *slog.Logger
	// Redactor knows the database URL's password; /readyz's errors go
	// through it (nil: config.Redact, which finds passwords by shape only).
	Redactor *config.Redactor
}

// Health serves /healthz, /readyz and /metrics.
type Health struct {
	cfg HealthConfig

	mu           sync.Mutex
	migrationsAt time.Time
	migrationsOK Check
}

// NewHealth returns the handler set.
func NewHealth(cfg HealthConfig) *Health { return &Health{cfg: cfg} }

// Handler routes the endpoints.
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := h.Ready(r.Context())
		w.Header().Set("Content-Type", "application/json")
		if rd.Status == StatusUnavailable {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rd)
	})
	if h.cfg.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(h.cfg.Metrics.Registry, promhttp.HandlerOpts{}))
	}
	return mux
}

// Ready runs the readiness checks.
func (h *Health) Ready(ctx context.Context) Readiness {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rd := Readiness{Status: StatusOK, Reasons: []string{}, Checks: map[string]Check{}, CheckedAt: time.Now().UTC(),
		DeadLetters: DeadLetterLevels{MaxNewFailedPOIs: h.cfg.MaxNewFailedPOIs, MaxDeadLetteredItems: h.cfg.MaxDeadLetteredItems}}
	fail := func(name string, err error) {
		// The body is served to whoever reaches the port: a driver's
		// error must not show a password (pgx quotes the host, which a
		// mistyped URL can fill with the password's tail).
		msg := config.Redact(err.Error())
		if h.cfg.Redactor != nil {
			msg = h.cfg.Redactor.Redact(err.Error())
		}
		rd.Checks[name] = Check{OK: false, Error: msg}
		rd.Status = StatusUnavailable
		rd.Reasons = append(rd.Reasons, name+": "+msg)
	}

	if err := h.cfg.Pool.Ping(ctx); err != nil {
		fail("database", fmt.Errorf("unreachable: %w", err))
	} else {
		rd.Checks["database"] = Check{OK: true}
	}
	if c := h.migrations(ctx); !c.OK {
		fail("migrations", fmt.Errorf("%s", c.Error))
	} else {
		rd.Checks["migrations"] = c
	}
	if h.cfg.RiverRunning != nil && !h.cfg.RiverRunning() {
		fail("river", fmt.Errorf("the River client is not running"))
	} else {
		rd.Checks["river"] = Check{OK: true}
	}
	if rd.Status == StatusUnavailable {
		return rd
	}
	st, err := Snapshot(ctx, h.cfg.Pool)
	if err != nil {
		fail("dead_letters", err)
		return rd
	}
	rd.Checks["dead_letters"] = Check{OK: true}
	rd.DeadLetters.NewFailedPOIs, rd.DeadLetters.DeadLetteredItems = st.NewFailedPOIs(), st.DeadLettered()
	if rd.DeadLetters.NewFailedPOIs > h.cfg.MaxNewFailedPOIs {
		rd.Status = StatusDegraded
		rd.Reasons = append(rd.Reasons, fmt.Sprintf("%d new failed POIs (threshold %d): see `relay failed analyze`",
			rd.DeadLetters.NewFailedPOIs, h.cfg.MaxNewFailedPOIs))
	}
	if rd.DeadLetters.DeadLetteredItems > h.cfg.MaxDeadLetteredItems {
		rd.Status = StatusDegraded
		rd.Reasons = append(rd.Reasons, fmt.Sprintf("%d dead-lettered items (threshold %d): see `relay dlq analyze`",
			rd.DeadLetters.DeadLetteredItems, h.cfg.MaxDeadLetteredItems))
	}
	return rd
}

func (h *Health) migrations(ctx context.Context) Check {
	if h.cfg.MigrationsPending == nil {
		return Check{OK: true}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.migrationsAt.IsZero() && time.Since(h.migrationsAt) < time.Minute && h.migrationsOK.OK {
		return h.migrationsOK
	}
	pending, err := h.cfg.MigrationsPending(ctx)
	switch {
	case err != nil:
		h.migrationsOK = Check{OK: false, Error: err.Error()}
	case pending:
		h.migrationsOK = Check{OK: false, Error: "migrations pending: run `relay migrate up`"}
	default:
		h.migrationsOK = Check{OK: true}
	}
	h.migrationsAt = time.Now()
	return h.migrationsOK
}
