package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/internal/ops"
	"github.com/relay-dev/relay/worker"
)

// uiWriteTimeout bounds a console response: an action (a reprocess of many
// rows) answers once it is done. An action whose answer is cut off still
// completes: it does not depend on the request.
const uiWriteTimeout = 10 * time.Minute

func newUICmd(a *app) *cobra.Command {
	var (
		addr     string
		readOnly bool
	)
	cmd := &cobra.Command{
		Use:   "ui [--addr HOST:PORT] [--read-only]",
		Short: "Serve the web console: River UI, failed POIs, dead-lettered items, MapReduce jobs",
		Long: `UI serves relay's web console on --addr (default 127.0.0.1:8080) until
SIGINT or SIGTERM: River UI under /river/ for jobs and queues, and relay's
pages for failed_pois (list, filters, signature groups, detail; reprocess,
ignore, purge), dead_lettered_items (list, groups, detail; retry with a
JSONPath filter, purge, clear) and MapReduce jobs. Every action is confirmed
on a page showing what it would do (a dry run), runs the same store call as
the CLI command of the same name, and is audited as ui:<user>.

On an address other than loopback it refuses to start without
authentication: --ui-user and --ui-password (HTTP basic auth) or --ui-token
(Authorization: Bearer). --read-only (ui_read_only) hides the actions and
answers every POST with 403. See docs/operations.md, "Web console".`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("addr") {
				if _, port, err := net.SplitHostPort(addr); err != nil || !validPort(port) {
					return usageError{fmt.Errorf("--addr %q must be host:port with a port from 0 to 65535", addr)}
				}
				a.cfg.UIAddr = addr
			}
			if cmd.Flags().Changed("read-only") {
				a.cfg.UIReadOnly = readOnly
			}
			auth := uiAuth(a.cfg)
			if err := console.CheckAddr(a.cfg.UIAddr, auth); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			pool, err := a.open(ctx, "ui")
			if err != nil {
				return err
			}
			defer pool.Close()
			c, err := newConsole(a, pool, "")
			if err != nil {
				return err
			}
			if err := c.Start(ctx); err != nil {
				return err
			}
			srv := &ops.Server{Handler: c, Logger: a.logger, BodyPrefix: "/", WriteTimeout: uiWriteTimeout,
				Endpoints: "web console"}
			addr, served, err := srv.Serve(ctx, a.cfg.UIAddr)
			if err != nil {
				return err
			}
			mode := ""
			if a.cfg.UIReadOnly {
				mode = " (read-only)"
			}
			fmt.Fprintf(a.env.Stderr, "relay ui: serving the web console%s on http://%s/\n", mode, addr)
			err = <-served
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", config.UIAddrDefault, "where to serve the console (ui_addr; overrides --ui-addr)")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "no actions: none shown, every POST answered 403 (ui_read_only)")
	return cmd
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

func uiAuth(cfg *config.Config) console.Auth {
	return console.Auth{User: cfg.UIUser, Password: cfg.UIPassword, Token: cfg.UIToken}
}

// newConsole builds the web console over pool, mounted under prefix, with
// the reprocess settings `relay reprocess` uses.
func newConsole(a *app, pool *pgxpool.Pool, prefix string) (*console.Console, error) {
	client, err := worker.NewInsertClient(pool, worker.ConfigFrom(a.cfg), a.logger)
	if err != nil {
		return nil, err
	}
	return console.New(console.Config{
		Pool: pool, Jobs: client,
		Reprocess:        failed.ReprocessConfig{MaxAttempts: a.cfg.MaxAttempts, MaxJobBytes: a.cfg.MaxJobBytes},
		HeartbeatTimeout: a.cfg.WorkerHeartbeatTimeout,
		Database:         config.RedactURL(a.cfg.DatabaseURL),
		ReadOnly:         a.cfg.UIReadOnly, Auth: uiAuth(a.cfg), Prefix: prefix,
		Logger: a.logger.With(slog.String("component", "console")),
	})
}

// mountConsole serves the console under /ui/ next to health, returning
// the combined handler; ctx bounds River UI's background services. The
// worker checked http_addr with console.CheckAddr before it started.
func mountConsole(ctx context.Context, a *app, pool *pgxpool.Pool, health http.Handler) (http.Handler, error) {
	c, err := newConsole(a, pool, workerConsolePrefix)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(workerConsolePrefix+"/", c)
	mux.Handle("/", health)
	return mux, nil
}

// workerConsolePrefix is where worker_console mounts the console.
const workerConsolePrefix = "/ui"
