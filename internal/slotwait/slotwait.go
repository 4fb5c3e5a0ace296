// Package slotwait waits for a PostgreSQL server with no free connection
// slot (SQLSTATE 53300) instead of failing at once: what a relay process
// must connect for as it starts (its pools, River's client, its
// announcement) is delayed by a full server, not stopped.
package slotwait

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Default is how long Wait waits, when its wait is zero, for a server that refuses a connection because
// every slot it allows is taken: SQLSTATE 53300 (too_many_connections),
// max_connections or a role's or database's connection limit reached by
// other clients. Slots come free as those clients disconnect, so relay
// waits for one instead of failing at once.
const Default = 2 * time.Minute

// slotRetryMax is the longest pause between two connection attempts while
// waiting for a slot.
const slotRetryMax = time.Second

// tooManyConnections reports whether err is the server refusing a
// connection for want of a free slot.
func tooManyConnections(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53300"
}

// serverMessage is the server's own message in err (it holds no
// password, unlike a connection error's text may).
func serverMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return ""
}

// Wait runs connect until it succeeds, fails for another reason
// than a server with no free connection slot (SQLSTATE 53300), ctx ends,
// or wait (Default when zero) has passed since the first refusal
// (none when wait is negative). It logs the first refusal to logger (may
// be nil), saying what it waits for. A relay process uses it for what it
// must connect for as it starts (its pools, River's client, its
// announcement), so that a full server delays it instead of stopping it.
func Wait(ctx context.Context, wait time.Duration, logger *slog.Logger, what string, connect func() error) error {
	if wait == 0 {
		wait = Default
	}
	pause := 20 * time.Millisecond
	var since time.Time
	for {
		err := connect()
		if err == nil || !tooManyConnections(err) || wait < 0 {
			return err
		}
		if since.IsZero() {
			since = time.Now()
			if logger != nil {
				logger.WarnContext(ctx, "the server has no free connection slot (max_connections or a connection limit reached); waiting for one",
					slog.String("connecting_to", what), slog.Duration("up_to", wait), slog.String("server_says", serverMessage(err)))
			}
		}
		if time.Since(since) >= wait {
			return fmt.Errorf("no free connection slot within %s: %w", wait, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, slotRetryMax)
	}
}
