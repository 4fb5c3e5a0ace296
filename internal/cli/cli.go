// Package cli is relay's command tree. cmd/relay/main.go only calls Main;
// everything here writes to injected streams so tests can run commands.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/termout"
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
	// StopNow is closed at a second interrupt (Ctrl-C): ctx is cancelled at
	// the first, and commands that then wait for running work to finish
	// (mapreduce run/resume --wait) stop it at once. nil: never.
	StopNow <-chan struct{}
	// StdinIsTerminal says whether a person can answer a prompt on Stdin:
	// a destructive command without --yes asks there, and refuses when it
	// is not a terminal. nil: detect it (a character device other than
	// /dev/null).
	StdinIsTerminal func() bool
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
	// Everything a command prints goes through a termout.Writer: control
	// characters from data are shown escaped, and the first write error is
	// kept, so output lost to a full disk or a closed pipe fails the command.
	// An export to standard output bypasses the escaping (it is the stored
	// data, byte for byte) but not the error check.
	data := &stickyWriter{w: env.Stdout}
	stdout, stderr := termout.NewWriter(data), termout.NewWriter(env.Stderr)
	env.Stdout, env.Stderr = stdout, stderr
	code := execute(ctx, args, &env, data)
	if err := cmp.Or(stdout.Flush(), data.err); err != nil {
		fmt.Fprintln(stderr, "relay: error writing output:", err)
		code = max(code, ExitRuntime)
	}
	_ = stderr.Flush()
	return code
}

// stickyWriter keeps the first error of w and returns it from every later
// Write, so one check at the end of a command covers all of its output.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	s.err = err
	return n, err
}

func execute(ctx context.Context, args []string, env *Env, data io.Writer) int {
	a := &app{env: env, data: data, redactor: config.NewRedactor()}
	root := newRoot(a)
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
			fmt.Fprintln(env.Stderr, "relay:", a.redactor.Redact(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintln(env.Stderr, "relay:", a.redactor.Redact(err.Error())+migrateHint(err))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		fmt.Fprintln(env.Stderr, "Run 'relay --help' for usage.")
		return ExitUsage
	}
	return ExitRuntime
}

// migrateHint points at `relay migrate up` when err says a table, function
// or schema relay needs is missing: the database was never migrated, or
// --database-schema names another schema.
func migrateHint(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case "42P01", "42883", "3F000": // undefined_table, undefined_function, invalid_schema_name
		return "\n(relay's schema is missing or older than this relay: run `relay migrate up`, and check --database-schema)"
	}
	return ""
}

const precedenceHelp = `Configuration comes from, highest precedence first: command-line flags,
RELAY_* environment variables (RELAY_DATABASE_URL, ...), a config file given
with --config (YAML, TOML or JSON, keys like database_url), then defaults.`

func newRoot(app *app) *cobra.Command {
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
	root.AddCommand(newMigrateCmd(app), newPublishCmd(app), newWorkerCmd(app), newDemoCmd(app), newStatusCmd(app), newAnalyzeCmd(app), newFailedCmd(app), newReprocessCmd(app), newMapReduceCmd(app), newDLQCmd(app), newOutboxCmd(app), newUICmd(app), newRepositoryCmd(app), newGraphCmd(app))
	return root
}

// app is the state shared by commands: the loaded config and logger.
type app struct {
	env    *Env
	data   io.Writer // standard output without termout's escaping
	cfg    *config.Config
	logger *slog.Logger
	// redactor knows the loaded database URL's password: every error the
	// CLI prints goes through it.
	redactor *config.Redactor
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
	a.redactor.Add(cfg.DatabaseURL)
	a.redactor.Add(cfg.DatabaseDirectURL)
	return nil
}

func (a *app) open(ctx context.Context, role string) (*pgxpool.Pool, error) {
	opts := database.OptionsFromConfig(a.cfg, role)
	opts.Logger = a.logger
	return database.Open(ctx, a.cfg.DatabaseURL, opts)
}

// out is standard output for text a person reads: control characters from
// data are escaped (termout).
func (a *app) out() io.Writer { return a.env.Stdout }

// dataOut is standard output for an export: the data exactly as stored.
func (a *app) dataOut() io.Writer { return a.data }

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
