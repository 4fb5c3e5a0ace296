// Package migrations holds relay's schema history: River's tables and relay's
// own, applied by goose from migrations embedded in the binary, so one
// `relay migrate up` brings a database to the version this build expects.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
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
	// newProvider builds a fresh provider: goose checks for its version
	// table once per provider, so DropVersionTable replaces it.
	newProvider func() (*goose.Provider, error)
	logger      *slog.Logger
	lockID      int64
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
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
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
	newProvider := func() (*goose.Provider, error) {
		provider, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles,
			goose.WithDisableGlobalRegistry(true),
			goose.WithGoMigrations(riverMigration(pool, schema, logger)),
			goose.WithTableName(TableName),
			goose.WithSessionLocker(locker),
		)
		if err != nil {
			return nil, fmt.Errorf("error building migration provider: %w", err)
		}
		return provider, nil
	}
	provider, err := newProvider()
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &Migrator{pool: pool, db: db, provider: provider, newProvider: newProvider, logger: logger, lockID: lockID}, nil
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

// Version returns the highest version applied (0 when none).
func (m *Migrator) Version(ctx context.Context) (int64, error) {
	v, err := m.provider.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("error reading the schema version: %w", err)
	}
	return v, nil
}

// Latest returns the highest version this build has a migration for.
func (m *Migrator) Latest() int64 {
	var v int64
	for _, s := range m.provider.ListSources() {
		v = max(v, s.Version)
	}
	return v
}

// Known reports whether this build has a migration with version.
func (m *Migrator) Known(version int64) bool {
	for _, s := range m.provider.ListSources() {
		if s.Version == version {
			return true
		}
	}
	return false
}

// PlanDown returns the applied migrations above target, newest first, with
// what rolling each back destroys (DownEffects). It changes nothing;
// DownTo(ctx, target) carries the plan out.
func (m *Migrator) PlanDown(ctx context.Context, target int64) ([]Rollback, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	var out []Rollback
	for _, s := range st {
		if s.Applied && s.Version > target {
			out = append(out, Rollback{Version: s.Version, Source: s.Source, Effect: DownEffectOf(s.Version)})
		}
	}
	sortRollbacks(out)
	return out, nil
}

// RowCountLimit is where RowCounts stops counting a table's rows.
const RowCountLimit = 100_000

// RowCounts counts the rows of each of tables that exists in the search
// path, stopping at limit: a count equal to limit means "limit or more". It
// reads at most limit rows per table, so it is cheap on big tables and exact
// on small ones. A view counts too (relationships is a view over
// poi_references from migration 8 on; rolling 8 back turns its rows into a
// table's). Names that are neither are left out.
func (m *Migrator) RowCounts(ctx context.Context, tables []string, limit int64) (map[string]int64, error) {
	out := make(map[string]int64, len(tables))
	for _, t := range tables {
		ident := pgx.Identifier{t}.Sanitize()
		var exists bool
		if err := m.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_class WHERE oid = to_regclass($1) AND relkind IN ('r', 'p', 'v'))`,
			ident).Scan(&exists); err != nil {
			return nil, fmt.Errorf("error looking up table %s: %w", t, err)
		}
		if !exists {
			continue
		}
		var n int64
		if err := m.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT FROM `+ident+` LIMIT $1) s`, limit).Scan(&n); err != nil {
			return nil, fmt.Errorf("error counting the rows of %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

// DropVersionTable drops goose's version table once no migration is
// applied, so that a rollback of everything leaves nothing of relay behind.
// It holds the migration lock while it checks and drops, and does nothing
// when the table does not exist.
func (m *Migrator) DropVersionTable(ctx context.Context) error {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error acquiring a connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, m.lockID); err != nil {
		return fmt.Errorf("error taking the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, m.lockID) }()
	ident := pgx.Identifier{TableName}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ident).Scan(&exists); err != nil {
		return fmt.Errorf("error looking up %s: %w", TableName, err)
	}
	if !exists {
		return nil
	}
	var applied int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+ident+` WHERE version_id <> 0`).Scan(&applied); err != nil {
		return fmt.Errorf("error reading %s: %w", TableName, err)
	}
	if applied > 0 {
		return fmt.Errorf("error dropping %s: %d migrations are still applied", TableName, applied)
	}
	if _, err := conn.Exec(ctx, `DROP TABLE `+ident); err != nil {
		return fmt.Errorf("error dropping %s: %w", TableName, err)
	}
	m.logger.Info("migration version table dropped", slog.String("table", TableName))
	provider, err := m.newProvider()
	if err != nil {
		return err
	}
	m.provider = provider
	return nil
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
		// At debug: every caller reports what it applied (Result) in its
		// own words, once, and a first migrate applies dozens.
		m.logger.Debug("migration applied", slog.String("direction", direction), slog.Int64("version", r.Source.Version),
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
		migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema,
			Logger: slog.New(infoAsDebug{logger.Handler()})})
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

// Fingerprint identifies this build's migrations (relay's SQL files and
// River's version): two builds with the same fingerprint migrate a schema to
// the same shape. Tests key their migrated template database on it.
func Fingerprint() string {
	h := sha256.New()
	entries, _ := fs.ReadDir(sqlFiles, ".")
	for _, e := range entries {
		b, _ := fs.ReadFile(sqlFiles, e.Name())
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "river %d\n", RiverVersion)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// infoAsDebug passes River's migrator's records on at debug level instead of
// info: "Applied migration" per River version is the detail behind goose
// migration 1, which callers report.
type infoAsDebug struct{ h slog.Handler }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (d infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, demote(l))
}

func (d infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.h.Handle(ctx, r)
}

func (d infoAsDebug) WithAttrs(attrs []slog.Attr) slog.Handler {
	return infoAsDebug{d.h.WithAttrs(attrs)}
}
func (d infoAsDebug) WithGroup(name string) slog.Handler { return infoAsDebug{d.h.WithGroup(name)} }
