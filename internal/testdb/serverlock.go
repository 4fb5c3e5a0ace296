package testdb

import (
	"context"
	"fmt"
	"io"
)

// HoldServer waits until no other test run holds the server at url, then
// holds it until release is called (or the process exits: the lock is the
// session's). Two runs of relay's suite side by side on a server of
// PostgreSQL's default 100 connections (two CI runs on one machine)
// refused each other's connections (SQLSTATE 53300); with it the second
// waits for the first instead. It says on out that it waits, and for
// which backend.
func HoldServer(ctx context.Context, url string, out io.Writer) (release func(), err error) {
	return HoldLock(ctx, url, "relay-test-run", "another test run holds the test server", out)
}

// HoldLock waits for, then holds until release is called, the session
// advisory lock named name in the database of url (the server's, which
// every test process on it shares), on a connection of its own. When
// another session holds it, it writes busy and the holder's backend to
// out before it waits.
func HoldLock(ctx context.Context, url, name, busy string, out io.Writer) (release func(), err error) {
	conn, err := connectServer(ctx, url)
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, name).Scan(&got); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("error taking the lock %q: %w", name, err)
	}
	if !got {
		var holder int32
		_ = conn.QueryRow(ctx, `SELECT coalesce((SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND (classid::bigint << 32 | objid::bigint) = hashtextextended($1, 0) LIMIT 1), 0)`, name).Scan(&holder)
		fmt.Fprintf(out, "%s (backend %d); waiting for it to finish\n", busy, holder)
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, name); err != nil {
			_ = conn.Close(context.Background())
			return nil, fmt.Errorf("error waiting for the lock %q: %w", name, err)
		}
	}
	return func() { _ = conn.Close(context.Background()) }, nil
}
