package database

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/config"
)

// usePooler makes a pool work through a transaction pooler, which hands
// each transaction (or statement outside one) to whichever server
// connection is free: a statement prepared on one server connection is
// unknown on the next, so statements run in pgx's exec mode (the extended
// protocol with an unnamed statement, parsed, bound and executed in one
// round trip) and nothing is cached per connection. A URL that chose the
// simple protocol (default_query_exec_mode=simple_protocol) keeps it.
func usePooler(cfg *pgxpool.Config) {
	cc := cfg.ConnConfig
	switch cc.DefaultQueryExecMode {
	case pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec:
		cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	cc.StatementCacheCapacity = 0
	cc.DescriptionCacheCapacity = 0
}

// SessionSettingsError says which of relay's session settings are not in
// effect on the server connections a transaction pooler hands out, and the
// SQL that makes them the defaults of relay's role in its database.
type SessionSettingsError struct {
	// User and Database are the role and database the pooler connects as.
	User, Database string
	// Wrong lists each setting not in effect: "statement_timeout is 0
	// (relay's statement_timeout is 1m0s)".
	Wrong []string
	// Fix is the ALTER ROLE statements that set them, one per line.
	Fix []string
}

func (e *SessionSettingsError) Error() string {
	return fmt.Sprintf("database_pooler is transaction, so relay sends no session settings through the pooler, "+
		"and these are not in effect on its server connections (role %q, database %q): %s. "+
		"Make them the defaults of that role in that database, on PostgreSQL itself (not through the pooler):\n  %s\n"+
		"then have the pooler open new server connections (PgBouncer: RECONNECT on its admin console), "+
		"or change relay's settings to the server's (docs/operations.md, \"Behind a connection pooler\")",
		e.User, e.Database, strings.Join(e.Wrong, "; "), strings.Join(e.Fix, "\n  "))
}

// CheckSessionSettings reads, on one of pool's connections, the settings
// relay would otherwise send at connect and returns a *SessionSettingsError
// when one differs from opts: search_path must put opts.Schema first
// (current_schema()), and statement_timeout and
// idle_in_transaction_session_timeout must equal opts' (a zero option is
// not checked). Through a transaction pooler relay cannot set them per
// session, so they must be the server's defaults for the role and database
// (ALTER ROLE … IN DATABASE … SET, or ALTER DATABASE … SET).
func CheckSessionSettings(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	var (
		user, dbName        string
		schema              *string
		statementMS, idleMS string
	)
	err := pool.QueryRow(ctx, `SELECT current_user, current_database(), current_schema(),
		current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')`).
		Scan(&user, &dbName, &schema, &statementMS, &idleMS)
	if err != nil {
		return fmt.Errorf("error reading the session settings: %w", err)
	}
	e := &SessionSettingsError{User: user, Database: dbName}
	fix := sessionDefaults(user, dbName, opts)
	if opts.Schema != "" && (schema == nil || *schema != opts.Schema) {
		got := "(none)"
		if schema != nil {
			got = *schema
		}
		e.Wrong = append(e.Wrong, fmt.Sprintf("the current schema is %s (relay's database_schema is %s)", got, opts.Schema))
		e.Fix = append(e.Fix, fix["search_path"]+";")
	}
	for _, s := range []struct {
		name, relayKey, got string
		want                time.Duration
	}{
		{"statement_timeout", "statement_timeout", statementMS, opts.StatementTimeout},
		{"idle_in_transaction_session_timeout", "idle_in_transaction_timeout", idleMS, opts.IdleInTransactionTimeout},
	} {
		if s.want <= 0 {
			continue
		}
		got, err := parseDuration(s.got)
		if err != nil {
			return fmt.Errorf("error reading %s: %w", s.name, err)
		}
		if got != s.want {
			e.Wrong = append(e.Wrong, fmt.Sprintf("%s is %s (relay's %s is %s)", s.name, s.got, s.relayKey, s.want))
			e.Fix = append(e.Fix, fix[s.name]+";")
		}
	}
	if len(e.Wrong) > 0 {
		return e
	}
	return nil
}

// sessionDefaults returns, per setting, the ALTER ROLE statement that makes
// opts' value the default of user in database dbName.
func sessionDefaults(user, dbName string, opts Options) map[string]string {
	alter := "ALTER ROLE " + pgx.Identifier{user}.Sanitize() + " IN DATABASE " + pgx.Identifier{dbName}.Sanitize() + " SET "
	out := map[string]string{}
	if opts.Schema != "" {
		out["search_path"] = alter + "search_path = " + pgx.Identifier{opts.Schema}.Sanitize()
	}
	if opts.StatementTimeout > 0 {
		out["statement_timeout"] = alter + "statement_timeout = '" + strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10) + "ms'"
	}
	if opts.IdleInTransactionTimeout > 0 {
		out["idle_in_transaction_session_timeout"] = alter + "idle_in_transaction_session_timeout = '" +
			strconv.FormatInt(opts.IdleInTransactionTimeout.Milliseconds(), 10) + "ms'"
	}
	return out
}

// SetSessionDefaults makes opts' session settings (Schema,
// StatementTimeout, IdleInTransactionTimeout) the defaults of the role
// directURL connects as, in its database (ALTER ROLE … IN DATABASE … SET),
// so that the server connections a transaction pooler opens from then on
// have them. directURL must reach PostgreSQL itself. It is what
// CheckSessionSettings's error asks an operator to run, for harnesses and
// tests that set up their own databases.
func SetSessionDefaults(ctx context.Context, directURL string, opts Options) error {
	red := config.NewRedactor(directURL)
	conn, err := pgx.Connect(ctx, directURL)
	if err != nil {
		return fmt.Errorf("error connecting to %s: %w", config.RedactURL(directURL), redactErr(red, err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var user, dbName string
	if err := conn.QueryRow(ctx, `SELECT current_user, current_database()`).Scan(&user, &dbName); err != nil {
		return fmt.Errorf("error reading the role and database: %w", err)
	}
	for _, sql := range sessionDefaults(user, dbName, opts) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("error setting a session default (%s): %w", sql, err)
		}
	}
	return nil
}

// parseDuration reads a time setting as current_setting shows it: "0",
// "500ms", "60s", "5min", "1h", "1d".
func parseDuration(s string) (time.Duration, error) {
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, "ms"
	if i >= 0 {
		num, unit = s[:i], s[i:]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unexpected time setting %q", s)
	}
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("unexpected time setting %q", s)
	}
	return time.Duration(n) * u, nil
}
