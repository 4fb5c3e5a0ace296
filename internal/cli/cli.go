// Package cli is relay's command tree. cmd/relay/main.go only calls Main;
// everything here writes to injected streams so tests can run commands.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitRuntime = 1
	ExitUsage   = 2
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	LookupEnv func(string) (string, bool)
}

// usageError marks errors that are the caller's (bad flags or arguments).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries an exit code for failures already reported.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// Main runs relay with args (without the program name) and returns the exit
// code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.LookupEnv == nil {
		env.LookupEnv = os.LookupEnv
	}
	root := newRoot(&env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(env.Stderr, "relay:", config.Redact(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintln(env.Stderr, "relay:", config.Redact(err.Error()))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		fmt.Fprintln(env.Stderr, "Run 'relay --help' for usage.")
		return ExitUsage
	}
	return ExitRuntime
}

const precedenceHelp = `Configuration comes from, highest precedence first: command-line flags,
RELAY_* environment variables (RELAY_DATABASE_URL, ...), a config file given
with --config (YAML, TOML or JSON, keys like database_url), then defaults.`

func newRoot(env *Env) *cobra.Command {
	app := &app{env: env}
	root := &cobra.Command{
		Use:   "relay",
		Short: "relay resolves relationships between code points of interest without losing one",
		Long: `relay stores analysed source files' points of interest (POIs), resolves the
relationships between them with River workers, and dead-letters every POI that
fails into failed_pois, where operators and analysts can see why and retry.

` + precedenceHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return app.load(cmd)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	config.RegisterFlags(root.PersistentFlags())
	root.AddCommand(newMigrateCmd(app), newPublishCmd(app), newWorkerCmd(app), newDemoCmd(app), newStatusCmd(app), newAnalyzeCmd(app), newFailedCmd(app), newReprocessCmd(app), newMapReduceCmd(app), newDLQCmd(app))
	return root
}

// app is the state shared by commands: the loaded config and logger.
type app struct {
	env    *Env
	cfg    *config.Config
	logger *slog.Logger
}

func (a *app) load(cmd *cobra.Command) error {
	cfg, err := config.Load(cmd.Flags(), a.env.LookupEnv)
	if err != nil {
		return usageError{err}
	}
	level, _ := config.ParseLogLevel(cfg.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(a.env.Stderr, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(a.env.Stderr, opts)
	}
	a.cfg, a.logger = cfg, slog.New(h)
	return nil
}

func (a *app) open(ctx context.Context, role string) (*pgxpool.Pool, error) {
	return database.Open(ctx, a.cfg.DatabaseURL, database.OptionsFromConfig(a.cfg, role))
}

func (a *app) out() io.Writer { return a.env.Stdout }

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
