// Package database opens relay's PostgreSQL connection pool with the session
// settings every relay process uses, and keeps passwords out of its errors.
package database

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/slotwait"
	"github.com/relay-dev/relay/outbox"
)

// ApplicationName is reported to PostgreSQL (pg_stat_activity) for every
// connection relay opens, suffixed with the process's role.
const ApplicationName = "relay"

// Options are the pool settings that do not come from the URL.
type Options struct {
	// Role is appended to the application name, e.g. "worker" gives
	// "relay-worker" in pg_stat_activity.
	Role string
	// Schema, when set, becomes the search_path of every connection.
	Schema string
	// StatementTimeout and IdleInTransactionTimeout become the session's
	// statement_timeout and idle_in_transaction_session_timeout.
	StatementTimeout         time.Duration
	IdleInTransactionTimeout time.Duration
	// MaxConns caps the pool; zero keeps pgx's default (max(4, NumCPU)).
	MaxConns int32
	// SlotWait is how long Open waits for a free connection slot when the
	// server refuses its first connection for want of one (SQLSTATE
	// 53300): zero waits slotwait.Default, a negative value not at all.
	SlotWait time.Duration
	// Logger, when set, is told when Open starts waiting for a slot.
	Logger *slog.Logger
	// SynchronousCommit, when set, becomes the session's
	// synchronous_commit. It cannot be combined with TransactionPooler.
	SynchronousCommit string
	// TransactionPooler says the URL reaches a transaction pooler
	// (config.PoolerTransaction): statements run in pgx's exec mode (no
	// prepared statements, one round trip each), no session setting is
	// sent at connect (the pooler would refuse or drop it), and Open
	// checks instead that Schema, StatementTimeout and
	// IdleInTransactionTimeout are the server's defaults for the role and
	// database (CheckSessionSettings).
	TransactionPooler bool
}

// riverConns is the connections a River client needs besides its running
// jobs: the LISTEN connection its notifier holds, fetches, the completer's
// batches and the maintenance services.
const riverConns = 4

// workerExtraConns is what a worker process runs beside its batches on the
// pool: the SQL publish queue's drain loops, a link job per lane, the connection
// its heartbeat holds (liveness.Liveness.Run) and the one --until-idle's
// queue reads hold (worker.WaitIdle).
const workerExtraConns = outbox.DrainLoopsDefault + linkLanes + 2

// linkLanes is worker/link.Lanes, which this package cannot import (link's
// tests open databases through it); TestOptionsFromConfig_PoolFitsTheWorkersAndRiver
// keeps the two equal.
const linkLanes = 8

// OptionsFromConfig picks the pool settings out of relay's configuration.
// The pool holds a connection for every batch a worker runs at once, for
// its drain loops and link job, and River's own (pgx's default, max(4,
// NumCPU), would make batches queue for connections behind River's
// notifier and fetches).
func OptionsFromConfig(cfg *config.Config, role string) Options {
	return Options{
		Role:                     role,
		MaxConns:                 int32(cfg.WorkerConcurrency + riverConns + workerExtraConns),
		Schema:                   cfg.DatabaseSchema,
		StatementTimeout:         cfg.StatementTimeout,
		IdleInTransactionTimeout: cfg.IdleInTransactionTimeout,
		TransactionPooler:        cfg.TransactionPooler(),
	}
}

// RiverOptionsFromConfig picks the settings of a worker's second pool,
// for River's own statements (see config.Config.RiverSynchronousCommit):
// its notifier's LISTEN, fetches, the completer's batches, maintenance.
func RiverOptionsFromConfig(cfg *config.Config, role string) Options {
	o := OptionsFromConfig(cfg, role+"-river")
	o.MaxConns = 2 * riverConns
	if !o.TransactionPooler {
		// Through a transaction pooler a session setting would outlive
		// River's statements on a server connection relay's batches use
		// next; River's statements then commit with the server's setting
		// (RiverSynchronousCommitApplied).
		o.SynchronousCommit = cfg.RiverSynchronousCommit
	}
	return o
}

// RiverSynchronousCommitApplied reports whether cfg's
// river_synchronous_commit is applied to River's connections: not through
// a transaction pooler, where River's statements commit with the server's
// synchronous_commit (the worker says so when it starts).
func RiverSynchronousCommitApplied(cfg *config.Config) bool { return !cfg.TransactionPooler() }

// Open parses url, applies opts and opens a pool, checking that the server
// answers; a server that refuses the connection for want of a free slot
// (SQLSTATE 53300) is waited for, up to opts.SlotWait. When nothing listens where url points, the error is an
// *UnreachableError, which says how to point relay at a database. Errors
// never contain the password: the URL is shown through
// config.RedactURL, and pgx's messages are scrubbed of every form of the
// password (a Redactor that knows it), keeping the error chain so
// errors.As still finds *pgconn.PgError.
func Open(ctx context.Context, url string, opts Options) (*pgxpool.Pool, error) {
	red := config.NewRedactor(url)
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, parseError(url, red, err)
	}
	if opts.TransactionPooler {
		if opts.SynchronousCommit != "" {
			return nil, fmt.Errorf("error opening database pool for %s: synchronous_commit cannot be set through a transaction pooler",
				config.RedactURL(url))
		}
		usePooler(poolCfg)
	}
	params := poolCfg.ConnConfig.RuntimeParams
	name := ApplicationName
	if opts.Role != "" {
		name += "-" + opts.Role
	}
	if params["application_name"] == "" {
		params["application_name"] = name
	}
	if !opts.TransactionPooler {
		if opts.StatementTimeout > 0 {
			params["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
		}
		if opts.IdleInTransactionTimeout > 0 {
			params["idle_in_transaction_session_timeout"] = strconv.FormatInt(opts.IdleInTransactionTimeout.Milliseconds(), 10)
		}
		if opts.Schema != "" {
			params["search_path"] = opts.Schema
		}
		if opts.SynchronousCommit != "" {
			params["synchronous_commit"] = opts.SynchronousCommit
		}
	}
	if opts.MaxConns > 0 {
		poolCfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("error opening database pool for %s: %w", config.RedactURL(url), redactErr(red, err))
	}
	if err := slotwait.Wait(ctx, opts.SlotWait, opts.Logger, config.RedactURL(url), func() error { return pool.Ping(ctx) }); err != nil {
		pool.Close()
		return nil, missingOrUnreachable(&poolCfg.ConnConfig.Config,
			fmt.Errorf("error connecting to database %s: %w", config.RedactURL(url), redactErr(red, err)))
	}
	if opts.TransactionPooler {
		if err := CheckSessionSettings(ctx, pool, opts); err != nil {
			pool.Close()
			return nil, fmt.Errorf("error checking the session settings of %s: %w", config.RedactURL(url), redactErr(red, err))
		}
	}
	return pool, nil
}

// parseError reports that connString does not parse. pgx's message starts
// with its own rendering of the connection string ("cannot parse `...`: "),
// whose redaction is best effort (a keyword/value password holding an
// escaped quote shows its tail); it is replaced by config.RedactURL's, and
// the reason that follows is scrubbed of the password.
func parseError(connString string, red *config.Redactor, err error) error {
	reason := err.Error()
	if strings.HasPrefix(reason, "cannot parse `") {
		if i := strings.LastIndex(reason, "`: "); i >= 0 {
			reason = reason[i+len("`: "):]
		}
	}
	msg := red.Redact(reason)
	if scheme, ok := foreignScheme(connString); ok {
		// The example URL is not the user's: it is added after redaction.
		msg = fmt.Sprintf("%q is not a PostgreSQL URL scheme: relay needs a PostgreSQL database, "+
			"as postgres://USER@HOST:5432/DATABASE (postgresql:// too) or host=HOST dbname=DATABASE; "+
			"pgx read it as key=value and said: %s", red.Redact(scheme), msg)
	}
	return fmt.Errorf("error parsing database URL %s: %w", config.RedactURL(connString),
		&redactedError{msg: msg, err: err})
}

// foreignScheme returns the scheme of a URL-shaped connString whose scheme
// is not PostgreSQL's (mysql://, sqlite://, http://): pgx then reads it as
// key=value, and says only that this failed.
func foreignScheme(connString string) (string, bool) {
	scheme, _, found := strings.Cut(connString, "://")
	if !found || scheme == "" {
		return "", false
	}
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "", false
		}
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return "", false
	}
	return scheme, true
}

// redactErr keeps the error chain (so errors.As still finds *pgconn.PgError)
// while making sure its text holds no password.
func redactErr(red *config.Redactor, err error) error {
	msg := err.Error()
	if r := red.Redact(msg); r != msg {
		return &redactedError{msg: r, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
