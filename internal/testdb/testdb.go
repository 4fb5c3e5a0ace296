// Package testdb gives each test its own PostgreSQL database, migrated with
// relay's real migrations (River's tables included), so tests that commit can
// run in parallel without seeing each other. Each is a copy of one migrated
// template database per version of the migrations (CREATE DATABASE …
// TEMPLATE), so the migrations run once, not once per test. Tests that need
// no commit can use Tx: one transaction, rolled back.
//
// The server comes from TEST_DATABASE_URL when it is set; otherwise a
// PostgreSQL container is started once per test binary with testcontainers-go.
// When neither works the test fails (never skips) and says what to set.
//
// With TEST_CITUS=1, TEST_DATABASE_URL names a Citus coordinator's database
// (make citus-cluster), and each test gets a schema of its own there,
// migrated and distributed by repository (relay migrate distribute), instead
// of a database: make test-citus runs relay's guarantees on Citus this way.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/slotwait"
	"github.com/relay-dev/relay/migrations"
)

// EnvURL names the variable that points tests at a PostgreSQL server.
const EnvURL = "TEST_DATABASE_URL"

// EnvCitus names the variable that, set to 1, gives each test a
// distributed schema in the Citus coordinator's database EnvURL names.
const EnvCitus = "TEST_CITUS"

// Citus reports whether tests run on Citus (EnvCitus).
func Citus() bool { return os.Getenv(EnvCitus) == "1" }

// DB is one test's isolated database, a copy of the migrated template.
type DB struct {
	// Pool's connections have search_path set to Schema.
	Pool *pgxpool.Pool
	// Schema is the schema relay's tables are in (the constant Schema).
	Schema string
	// URL is the test's own database; pass Schema alongside it.
	URL string
	// Name is the test's database's name, unique to the test.
	Name string
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

// New creates a database for t from the migrated template and returns a pool
// bound to its Schema. The database is dropped when t ends.
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

// Create is New for a program that is not a test (relay-torture): a
// database of its own on the server at url, a copy of the migrated
// template, and the function that closes its pool and drops it.
func Create(ctx context.Context, url string) (*DB, func() error, error) {
	return create(ctx, url)
}

// Schema is the schema relay's migrations create in the template database,
// and so in every test's database.
const Schema = "relay"

// templatePrefix begins the name of the migrated template database; the
// rest is migrations.Fingerprint(), so a change to the migrations makes a
// new template and tests never run on a stale one.
const templatePrefix = "relay_test_template_"

// testPrefix begins the name of each test's database.
const testPrefix = "relay_test_db_"

var (
	templateMu    sync.Mutex
	templateReady = map[string]string{} // server URL -> template name
)

// create makes a database of its own on the server at url, a copy of the
// migrated template (CREATE DATABASE … TEMPLATE, which copies files instead
// of replaying every migration), and returns it with the function that
// drops it.
func create(ctx context.Context, url string) (*DB, func() error, error) {
	if Citus() {
		return createDistributed(ctx, url)
	}
	suffix, err := randomSuffix()
	if err != nil {
		return nil, nil, err
	}
	name := fmt.Sprintf("%s%d_%s", testPrefix, time.Now().Unix(), suffix)
	for attempt := 1; ; attempt++ {
		tmpl, err := template(ctx, url)
		if err != nil {
			return nil, nil, err
		}
		err = admin(ctx, url, func(conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tmpl}.Sanitize())
			return err
		})
		var pgErr *pgconn.PgError
		if err != nil && attempt < 3 && errors.As(err, &pgErr) && pgErr.Code == "3D000" {
			// Another run dropped the template meanwhile: build it again.
			templateMu.Lock()
			delete(templateReady, url)
			templateMu.Unlock()
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("error creating test database %s from template %s: %w", name, tmpl, err)
		}
		break
	}
	dbURL, err := withDatabase(url, name)
	if err != nil {
		return nil, nil, err
	}
	drop := func() error {
		if os.Getenv("TEST_KEEP_SCHEMA") != "" {
			return nil
		}
		return admin(context.Background(), url, func(conn *pgx.Conn) error {
			_, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			return err
		})
	}
	pool, err := database.Open(ctx, dbURL, database.Options{Role: "test", Schema: Schema, MaxConns: 8,
		StatementTimeout: time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		_ = drop()
		return nil, nil, fmt.Errorf("error opening pool: %w", err)
	}
	return &DB{Pool: pool, Schema: Schema, URL: dbURL, Name: name}, func() error {
		pool.Close()
		if err := drop(); err != nil {
			return fmt.Errorf("error dropping test database %s: %w", name, err)
		}
		return nil
	}, nil
}

// template returns the name of the migrated template database on the server
// at url, creating it once per fingerprint. Test binaries run in parallel
// share it: the first to need it builds it under a lock on the server, as a
// temporary database renamed into place when migrated, so no test ever
// copies a half-migrated template.
func template(ctx context.Context, url string) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	if name, ok := templateReady[url]; ok {
		return name, nil
	}
	name := templatePrefix + migrations.Fingerprint()
	err := admin(ctx, url, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('relay-test-template', 0))`); err != nil {
			return err
		}
		defer func() {
			_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended('relay-test-template', 0))`)
		}()
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if err := buildTemplate(ctx, conn, url, name); err != nil {
				return err
			}
		}
		// Databases nobody uses that are left over: templates of other
		// migrations built over a day ago (another checkout may still use
		// a newer one), and test databases created over an hour ago (by a
		// killed test binary). Best effort: DROP DATABASE without FORCE
		// fails on one still in use.
		rows, err := conn.Query(ctx, `SELECT datname FROM pg_database d
			WHERE (starts_with(datname, $1) AND datname <> $2 AND
			       coalesce(substring(shobj_description(d.oid, 'pg_database') FROM '^built ([0-9]+)$')::bigint, 0)
			         < extract(epoch FROM now())::bigint - 86400)
			   OR (starts_with(datname, $3) AND
			       split_part(substr(datname, length($3) + 1), '_', 1) ~ '^[0-9]+$' AND
			       split_part(substr(datname, length($3) + 1), '_', 1)::bigint < extract(epoch FROM now())::bigint - 3600)`,
			templatePrefix, name, testPrefix)
		if err != nil {
			return err
		}
		stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, s := range stale {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{s}.Sanitize())
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("error preparing the migrated template database %s on %s (set %s to a reachable server): %w",
			name, config.RedactURL(url), EnvURL, err)
	}
	templateReady[url] = name
	return name, nil
}

// buildTemplate creates the template database name, migrated, as a
// temporary database renamed into place once migrated.
func buildTemplate(ctx context.Context, conn *pgx.Conn, url, name string) error {
	building := name + "_building"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return err
	}
	if err := migrate(ctx, url, building); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+pgx.Identifier{building}.Sanitize()+
		fmt.Sprintf(" IS 'built %d'", time.Now().Unix())); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize())
	return err
}

// migrate creates Schema in the database name on the server at url and runs
// relay's migrations into it.
func migrate(ctx context.Context, url, name string) error {
	dbURL, err := withDatabase(url, name)
	if err != nil {
		return err
	}
	// search_path names Schema before it exists: names resolve at each
	// lookup, so the migrations see it once created.
	pool, err := database.Open(ctx, dbURL, database.Options{Role: "test-template", Schema: Schema, MaxConns: 2,
		StatementTimeout: 5 * time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		return fmt.Errorf("error opening the template database: %w", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{Schema}.Sanitize()); err != nil {
		return fmt.Errorf("error creating schema %s: %w", Schema, err)
	}
	m, err := migrations.New(pool, Schema, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("error migrating the template database: %w", err)
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("error migrating the template database: %w", err)
	}
	return nil
}

// admin runs fn on a connection to the server's database in url (tests
// never connect to the template, which CREATE DATABASE … TEMPLATE needs).
func admin(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	conn, err := connectServer(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return fn(conn)
}

// connectServer connects to the server's database in url. A server with
// every slot taken (test binaries and other runs side by side) is waited
// for, as relay's own processes wait (slotwait).
func connectServer(ctx context.Context, url string) (*pgx.Conn, error) {
	var conn *pgx.Conn
	err := slotwait.Wait(ctx, 0, nil, "the test server", func() error {
		var err error
		conn, err = pgx.Connect(ctx, url)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error connecting to %s (set %s to a reachable server): %w", config.RedactURL(url), EnvURL, err)
	}
	return conn, nil
}

// withDatabase returns url with its database replaced by name.
func withDatabase(url, name string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("%s must be a postgres:// URL: %s", EnvURL, config.RedactURL(url))
	}
	u.Path = "/" + name
	return u.String(), nil
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

var (
	sharedMu sync.Mutex
	shared   = map[string]*DB{} // server URL -> the binary's shared database
)

// Tx returns a transaction on a migrated database the test binary's Tx
// tests share, rolled back when t ends: for tests that need no commit (no
// River worker, no second connection), it costs no database of their own.
// Concurrent tests' transactions do not see each other's rows, but two that
// write the same unique key wait for each other: give each test its own
// keys.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	url := ServerURL(t)
	sharedMu.Lock()
	db, ok := shared[url]
	if !ok {
		var err error
		// Main drops it after the package's tests (and a later run's
		// template step, should the binary be killed first).
		db, _, err = create(ctx, url)
		if err != nil {
			sharedMu.Unlock()
			t.Fatal(err)
		}
		shared[url] = db
	}
	sharedMu.Unlock()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatalf("error beginning the test's transaction: %v", err)
	}
	t.Cleanup(func() {
		if err := tx.Rollback(context.Background()); err != nil {
			t.Errorf("error rolling back the test's transaction: %v", err)
		}
	})
	return tx
}

// Main wraps a package's *testing.M so that, after the package's tests,
// the database Tx's tests shared is closed and dropped:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(testdb.Main(m)) }
func Main(m *testing.M) interface{ Run() int } { return mainM{m} }

type mainM struct{ m *testing.M }

func (w mainM) Run() int {
	code := w.m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for url, db := range shared {
		db.Pool.Close()
		_ = admin(context.Background(), url, func(conn *pgx.Conn) error {
			_, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{db.Name}.Sanitize()+" WITH (FORCE)")
			return err
		})
		delete(shared, url)
	}
	return code
}

// GenericPlan returns the EXPLAIN text of sql's generic plan in tx, executed
// with args (SQL literals, e.g. `'{a}', 'b'`): the plan a cached statement
// may run on whatever its parameters. The planner settings tx already has
// apply.
func GenericPlan(t testing.TB, tx pgx.Tx, sql, args string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatalf("error forcing generic plans: %v", err)
	}
	if _, err := tx.Prepare(ctx, "generic_plan", sql); err != nil {
		t.Fatalf("error preparing %q: %v", sql, err)
	}
	// A prepared statement outlives the transaction: the connection goes
	// back to the pool for the next test.
	defer func() { _ = tx.Conn().Deallocate(ctx, "generic_plan") }()
	rows, err := tx.Query(ctx, `EXPLAIN EXECUTE generic_plan(`+args+`)`)
	if err != nil {
		t.Fatalf("error explaining %q: %v", sql, err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("error explaining %q: %v", sql, err)
	}
	return strings.Join(plan, "\n")
}

// WaitBlockedBy waits until some backend waits for a lock that the backend
// pid holds (pg_blocking_pids), and returns that backend's pid: the step
// boundary of a forced interleaving, in place of a sleep. It fails the test
// after a minute, naming what it waited for.
func WaitBlockedBy(t testing.TB, q pgxQuerier, pid uint32) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var waiter int
		err := q.QueryRow(context.Background(),
			`SELECT coalesce(min(pid), 0) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, int(pid)).Scan(&waiter)
		if err != nil {
			t.Fatalf("error looking for a backend blocked by %d: %v", pid, err)
		}
		if waiter != 0 {
			return waiter
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backend waited for a lock of backend %d within a minute", pid)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, not ordering a race
	}
}
