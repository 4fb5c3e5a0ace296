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
	"fmt"
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
	db, drop, err := create(context.Background(), ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// ForExample is New for an Example function, which has no testing.TB: the
// server must come from TEST_DATABASE_URL, and it panics with what to set
// when there is none. Call the returned function when done.
func ForExample() (*DB, func()) {
	url := os.Getenv(EnvURL)
	if url == "" {
		panic("examples need PostgreSQL: set " + EnvURL + ", e.g. " + EnvURL + "=postgres://root@127.0.0.1:5432/relay_test?sslmode=disable")
	}
	db, drop, err := create(context.Background(), url)
	if err != nil {
		panic(err)
	}
	return db, func() {
		if err := drop(); err != nil {
			panic(err)
		}
	}
}

// create makes a migrated schema of its own on the server at url and
// returns it with the function that drops it.
func create(ctx context.Context, url string) (*DB, func() error, error) {
	suffix, err := randomSuffix()
	if err != nil {
		return nil, nil, err
	}
	schema := "relay_test_" + suffix
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("error connecting to %s (set %s to a reachable server): %w", config.RedactURL(url), EnvURL, err)
	}
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	_ = admin.Close(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("error creating schema %s: %w", schema, err)
	}

	pool, err := database.Open(ctx, url, database.Options{Role: "test", Schema: schema, MaxConns: 8,
		StatementTimeout: time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		return nil, nil, fmt.Errorf("error opening pool: %w", err)
	}
	drop := func() error {
		pool.Close()
		if os.Getenv("TEST_KEEP_SCHEMA") != "" {
			return nil
		}
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			return fmt.Errorf("error connecting to drop schema %s: %w", schema, err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("error dropping schema %s: %w", schema, err)
		}
		return nil
	}

	m, err := migrations.New(pool, schema, slog.New(slog.DiscardHandler))
	if err == nil {
		defer m.Close()
		_, err = m.Up(ctx)
	}
	if err != nil {
		_ = drop()
		return nil, nil, fmt.Errorf("error migrating schema %s: %w", schema, err)
	}
	return &DB{Pool: pool, Schema: schema, URL: url}, drop, nil
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

func randomSuffix() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("error reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
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
