package database

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/config"
)

// EnsureExists creates the database named in dbURL when the server says it
// does not exist, connecting to the server's postgres database to do so.
func EnsureExists(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		return fmt.Errorf("error connecting to %s: %w", config.Redact(dbURL), errors.New(config.Redact(err.Error())))
	}
	cfg, perr := pgx.ParseConfig(dbURL)
	if perr != nil {
		return fmt.Errorf("error parsing database URL %s: %w", config.Redact(dbURL), errors.New(config.Redact(perr.Error())))
	}
	name := cfg.Database
	u, perr := url.Parse(dbURL)
	if perr != nil || u.Scheme == "" {
		return fmt.Errorf("database %q does not exist; create it first (createdb %s)", name, name)
	}
	u.Path = "/postgres"
	admin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("database %q does not exist and the server's postgres database is unreachable to create it: %w",
			name, errors.New(config.Redact(err.Error())))
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created concurrently
			return nil
		}
		return fmt.Errorf("error creating database %q: %w", name, err)
	}
	return nil
}

// Drop removes the database name from the server adminURL points at,
// disconnecting its sessions (the benchmark's and the chaos harness's
// throwaway databases).
func Drop(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("error connecting to %s to drop database %q: %w", config.Redact(adminURL), name, errors.New(config.Redact(err.Error())))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("error dropping database %q: %w", name, err)
	}
	return nil
}
