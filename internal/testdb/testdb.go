// Package testdb gives each test its own PostgreSQL schema, migrated with
// relay's real migrations (River's tables included), so tests that commit can
// run in parallel without seeing each other.
//
// The server comes from TEST_DATABASE_URL when it is set; otherwise a
// PostgreSQL container is started once per test binary with testcontainers-go.
// When neither works the test fails (never skips) and says what to set.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/migrations"
)

// EnvURL names the variable that points tests at a PostgreSQL server.
const EnvURL = "TEST_DATABASE_URL"

// DB is one test's isolated schema.
type DB struct {
	// Pool's connections have search_path set to Schema.
	Pool *pgxpool.Pool
	// Schema is the schema's name, unique to the test.
	Schema string
	// URL is the server's URL (without the schema); pass Schema alongside it.
	URL string
}

var (
	containerOnce sync.Once
	containerURL  string
	containerErr  error
)

// ServerURL returns the URL of the server tests use, starting a container if
// TEST_DATABASE_URL is not set. It fails t when no server can be had.
func ServerURL(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(EnvURL); url != "" {
		return url
	}
	containerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var c *tcpostgres.PostgresContainer
		c, containerErr = tcpostgres.Run(ctx, "postgres:15-alpine",
			tcpostgres.WithDatabase("relay_test"),
			tcpostgres.BasicWaitStrategies(),
		)
		if containerErr != nil {
			return
		}
		testcontainers.CleanupContainer(t, c) // Ryuk reaps it when the binary exits
		containerURL, containerErr = c.ConnectionString(ctx, "sslmode=disable")
	})
	if containerErr != nil {
		t.Fatalf("no PostgreSQL for tests: %s is not set and starting a container failed: %v\n"+
			"Set %s, e.g. %s=postgres://root@127.0.0.1:5432/relay_test?sslmode=disable",
			EnvURL, containerErr, EnvURL, EnvURL)
	}
	return containerURL
}

// New creates a schema for t, migrates it and returns a pool bound to it. The
// schema is dropped when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	ctx := context.Background()
	url := ServerURL(t)
	schema := "relay_test_" + randomSuffix(t)

	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("error connecting to %s (set %s to a reachable server): %v", config.Redact(url), EnvURL, err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		t.Fatalf("error creating schema %s: %v", schema, err)
	}
	_ = admin.Close(ctx)

	pool, err := database.Open(ctx, url, database.Options{Role: "test", Schema: schema, MaxConns: 8,
		StatementTimeout: time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		t.Fatalf("error opening pool: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		if os.Getenv("TEST_KEEP_SCHEMA") != "" {
			t.Logf("keeping schema %s", schema)
			return
		}
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("error connecting to drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("error dropping schema %s: %v", schema, err)
		}
	})

	m, err := migrations.New(pool, schema, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("error creating migrator: %v", err)
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("error migrating schema %s: %v", schema, err)
	}
	return &DB{Pool: pool, Schema: schema, URL: url}
}

// Config returns relay's default configuration pointed at db, for tests that
// build real components.
func (db *DB) Config() *config.Config {
	cfg := config.Default()
	cfg.DatabaseURL = db.URL
	cfg.DatabaseSchema = db.Schema
	return cfg
}

// Logger returns a logger that writes through t.Log, so a failing test shows
// what relay logged.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func randomSuffix(t testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("error reading random bytes: %v", err)
	}
	return hex.EncodeToString(b)
}

// Count runs a COUNT(*)-style query and returns its integer result.
func Count(t testing.TB, q pgxQuerier, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := q.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("error running %q: %v", sql, err)
	}
	return n
}

type pgxQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// EnsureDatabase creates the database url names if it does not exist.
func EnsureDatabase(ctx context.Context, url string) error {
	return database.EnsureExists(ctx, url)
}
