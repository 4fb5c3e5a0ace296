package database

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// HowToGetADatabase says how to give relay a database.
const HowToGetADatabase = "Point relay at your PostgreSQL with --database-url, RELAY_DATABASE_URL or database_url " +
	"in a --config file, or start one (sudo systemctl start postgresql; or docker compose up -d postgres " +
	"in relay's repository)."

// UnreachableHint is how an UnreachableError's message ends.
const UnreachableHint = HowToGetADatabase + " `relay demo` (make demo) starts a throwaway PostgreSQL of its own " +
	"when no database is configured and nothing answers at localhost:5432."

// UnreachableError is a failure to connect because nothing listens where
// the URL points: every address tried refused the connection, or a Unix
// socket does not exist. PostgreSQL is not running there, or the URL
// names the wrong place; its message says so and how to fix it.
type UnreachableError struct {
	// Addrs are the addresses tried, e.g. "127.0.0.1:5432".
	Addrs []string
	// Err is the connection error.
	Err error
}

func (e *UnreachableError) Error() string {
	return e.Err.Error() + "\n(nothing is listening at " + strings.Join(e.Addrs, ", ") + ": is PostgreSQL running? " +
		UnreachableHint + ")"
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachable returns err as an *UnreachableError when it says nothing
// listens at any address tried, and err otherwise.
func unreachable(err error) error {
	if addrs, ok := nothingListening(err); ok {
		return &UnreachableError{Addrs: addrs, Err: err}
	}
	return err
}

// nothingListening reports whether every cause at the leaves of err's tree
// is a refused connection (or a missing Unix socket), returning the
// addresses dialled. One cause of another kind (a server that answered
// with an error, a timeout, a TLS failure) means something may be there.
func nothingListening(err error) ([]string, bool) {
	var addrs []string
	ok := true
	var walk func(error)
	walk = func(err error) {
		if !ok || err == nil {
			return
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			ok = false
			return
		}
		if op, isOp := err.(*net.OpError); isOp && op.Op == "dial" {
			refused := errors.Is(op.Err, syscall.ECONNREFUSED) ||
				(op.Net == "unix" && errors.Is(op.Err, syscall.ENOENT))
			if !refused {
				ok = false
				return
			}
			if op.Addr != nil && !slices.Contains(addrs, op.Addr.String()) {
				addrs = append(addrs, op.Addr.String())
			}
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		default:
			ok = false // a cause that is not a refused dial
		}
	}
	walk(err)
	return addrs, ok && len(addrs) > 0
}

// MissingDatabaseError is a failure to connect because the server answered
// that the database does not exist (SQLSTATE 3D000). Its message says how
// to create it on that server.
type MissingDatabaseError struct {
	// Name is the database the URL names; Host, Port and User are the
	// server and role the URL names.
	Name, Host, User string
	Port             uint16
	// Err is the connection error.
	Err error
}

func (e *MissingDatabaseError) Error() string {
	return fmt.Sprintf("%s\n(the server answered, but has no database %q: create it with "+
		"createdb -h %s -p %d -U %s %s (or CREATE DATABASE %s; in psql), then run relay migrate up; "+
		"or point relay at an existing database. `relay demo` creates the database it is given.)",
		e.Err.Error(), e.Name, shellQuote(e.Host), e.Port, shellQuote(e.User), shellQuote(e.Name), pgx.Identifier{e.Name}.Sanitize())
}

func (e *MissingDatabaseError) Unwrap() error { return e.Err }

// missingOrUnreachable returns err as a *MissingDatabaseError when the
// server cfg names says its database does not exist, as an
// *UnreachableError when nothing listens, and err otherwise.
func missingOrUnreachable(cfg *pgconn.Config, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
		return &MissingDatabaseError{Name: cfg.Database, Host: cfg.Host, Port: cfg.Port, User: cfg.User, Err: err}
	}
	return unreachable(err)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
