package database

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/slotwait"
)

// EnsureExists creates the database named in dbURL when the server says it
// does not exist, connecting to the server's postgres database to do so.
// When nothing listens there, the error is an *UnreachableError; a server
// with no free connection slot is waited for up to slotwait.Default.
func EnsureExists(ctx context.Context, dbURL string) error {
	red := config.NewRedactor(dbURL)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return parseError(dbURL, red, err)
	}
	var conn *pgx.Conn
	err = slotwait.Wait(ctx, 0, nil, config.RedactURL(dbURL), func() (err error) {
		conn, err = pgx.ConnectConfig(ctx, cfg.Copy())
		return err
	})
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		return unreachable(fmt.Errorf("error connecting to %s: %w", config.RedactURL(dbURL), redactErr(red, err)))
	}
	// The same server, user and password, any URL or DSN syntax: change
	// only the database (net/url cannot parse every URL pgx accepts).
	name := cfg.Database
	adminCfg := cfg.Copy()
	adminCfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, adminCfg)
	if err != nil {
		return fmt.Errorf("database %q does not exist and the server's postgres database is unreachable to create it: %w",
			name, redactErr(red, err))
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created concurrently
			return nil
		}
		return fmt.Errorf("error creating database %q: %w", name, redactErr(red, err))
	}
	return nil
}

// Drop removes the database name from the server adminURL points at,
// disconnecting its sessions (the benchmark's and the chaos harness's
// throwaway databases).
func Drop(ctx context.Context, adminURL, name string) error {
	red := config.NewRedactor(adminURL)
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("error connecting to %s to drop database %q: %w", config.RedactURL(adminURL), name, redactErr(red, err))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("error dropping database %q: %w", name, redactErr(red, err))
	}
	return nil
}
