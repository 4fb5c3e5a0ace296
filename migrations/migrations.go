// Package migrations holds relay's schema history: River's tables and relay's
// own, applied by goose from migrations embedded in the binary, so one
// `relay migrate up` brings a database to the version this build expects.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var sqlFiles embed.FS

// RiverVersion is the River schema version migration 1 brings the database
// to. A River upgrade that adds versions gets a new goose migration that
// migrates River further, so the history stays linear.
const RiverVersion = 8

// TableName is goose's version table.
const TableName = "relay_goose_db_version"

// Migrator applies relay's migrations to one database (and schema).
type Migrator struct {
	pool     *pgxpool.Pool
	db       *sql.DB
	provider *goose.Provider
	logger   *slog.Logger
}

// Status is one migration's state.
type Status struct {
	Version   int64     `json:"version"`
	Source    string    `json:"source"`
	Applied   bool      `json:"applied"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// Result is one applied (or rolled back) migration.
type Result struct {
	Version  int64
	Source   string
	Duration time.Duration
}

// New builds a Migrator. schema is the River schema ("" for search_path).
func New(pool *pgxpool.Pool, schema string, logger *slog.Logger) (*Migrator, error) {
	db := stdlib.OpenDBFromPool(pool)
	// Migrations of one schema exclude each other; different schemas (one
	// per test, or per tenant) migrate in parallel.
	lockID := lock.DefaultLockID
	if schema != "" {
		h := fnv.New64a()
		_, _ = h.Write([]byte("relay-migrate:" + schema))
		lockID = int64(h.Sum64() >> 1)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, fmt.Errorf("error creating migration locker: %w", err)
	}
	river := riverMigration(pool, schema, logger)
	provider, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles,
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(river),
		goose.WithTableName(TableName),
		goose.WithSessionLocker(locker),
	)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("error building migration provider: %w", err)
	}
	return &Migrator{pool: pool, db: db, provider: provider, logger: logger}, nil
}

// Close releases the migrator's database handle (not the pool).
func (m *Migrator) Close() error { return m.db.Close() }

// Up applies every pending migration.
func (m *Migrator) Up(ctx context.Context) ([]Result, error) {
	res, err := m.provider.Up(ctx)
	return m.results(res, "up", err)
}

// Down rolls back the most recent migration.
func (m *Migrator) Down(ctx context.Context) ([]Result, error) {
	res, err := m.provider.Down(ctx)
	if err != nil {
		var partial *goose.PartialError
		if errors.As(err, &partial) || res == nil {
			return nil, fmt.Errorf("error migrating down: %w", err)
		}
	}
	if res == nil {
		return nil, err
	}
	return m.results([]*goose.MigrationResult{res}, "down", err)
}

// DownTo rolls back every migration above version (0 removes everything).
func (m *Migrator) DownTo(ctx context.Context, version int64) ([]Result, error) {
	res, err := m.provider.DownTo(ctx, version)
	return m.results(res, "down", err)
}

// Status lists every migration with whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("error reading migration status: %w", err)
	}
	out := make([]Status, 0, len(st))
	for _, s := range st {
		out = append(out, Status{
			Version:   s.Source.Version,
			Source:    s.Source.Path,
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

// Pending reports whether any migration is not applied yet.
func (m *Migrator) Pending(ctx context.Context) (bool, error) {
	p, err := m.provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("error checking for pending migrations: %w", err)
	}
	return p, nil
}

func (m *Migrator) results(res []*goose.MigrationResult, direction string, err error) ([]Result, error) {
	out := make([]Result, 0, len(res))
	for _, r := range res {
		if r.Error != nil {
			continue
		}
		out = append(out, Result{Version: r.Source.Version, Source: r.Source.Path, Duration: r.Duration})
		m.logger.Info("migration applied", slog.String("direction", direction), slog.Int64("version", r.Source.Version),
			slog.String("source", r.Source.Path), slog.Duration("duration", r.Duration))
	}
	if err != nil {
		return out, fmt.Errorf("error migrating %s: %w", direction, err)
	}
	return out, nil
}

// riverMigration is goose migration 1: River's own tables. It runs without a
// goose transaction because River's migrations cannot all run in one
// (version 006 uses an enum value added in the same transaction, SQLSTATE
// 55P04); rivermigrate runs each River version in its own transaction.
func riverMigration(pool *pgxpool.Pool, schema string, logger *slog.Logger) *goose.Migration {
	migrate := func(ctx context.Context, direction rivermigrate.Direction, target int) error {
		migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: logger})
		if err != nil {
			return fmt.Errorf("error creating River migrator: %w", err)
		}
		if _, err := migrator.Migrate(ctx, direction, &rivermigrate.MigrateOpts{TargetVersion: target}); err != nil {
			return fmt.Errorf("error migrating River %s to version %d: %w", direction, target, err)
		}
		return nil
	}
	return goose.NewGoMigration(1,
		&goose.GoFunc{RunDB: func(ctx context.Context, _ *sql.DB) error {
			return migrate(ctx, rivermigrate.DirectionUp, RiverVersion)
		}},
		&goose.GoFunc{RunDB: func(ctx context.Context, _ *sql.DB) error {
			return migrate(ctx, rivermigrate.DirectionDown, -1)
		}},
	)
}
