package testdb

import (
	"context"
	"fmt"
	"io"
)

// serverLockKey is the session advisory lock, in the database of
// TEST_DATABASE_URL, that a whole test run holds (HoldServer).
const serverLockKey = `hashtextextended('relay-test-run', 0)`

// HoldServer waits until no other test run holds the server at url, then
// holds it until release is called (or the process exits: the lock is the
// session's). Two runs of relay's suite side by side on a server of
// PostgreSQL's default 100 connections (two CI runs on one machine)
// refused each other's connections (SQLSTATE 53300); with it the second
// waits for the first instead. It says on out that it waits, and for
// which backend.
func HoldServer(ctx context.Context, url string, out io.Writer) (release func(), err error) {
	conn, err := connectServer(ctx, url)
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+serverLockKey+`)`).Scan(&got); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("error taking the test server's lock: %w", err)
	}
	if !got {
		var holder int32
		_ = conn.QueryRow(ctx, `SELECT coalesce((SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND (classid::bigint << 32 | objid::bigint) = `+serverLockKey+` LIMIT 1), 0)`).Scan(&holder)
		fmt.Fprintf(out, "another test run holds the test server (backend %d); waiting for it to finish\n", holder)
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+serverLockKey+`)`); err != nil {
			_ = conn.Close(context.Background())
			return nil, fmt.Errorf("error waiting for the test server's lock: %w", err)
		}
	}
	return func() { _ = conn.Close(context.Background()) }, nil
}
