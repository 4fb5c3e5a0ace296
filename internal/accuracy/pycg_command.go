package accuracy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/migrations"
)

// PyCGCommand is relay-eval --pycg's settings.
type PyCGCommand struct {
	// Dir is PyCG's micro-benchmark/snippets (or any directory of cases).
	Dir string
	// DatabaseURL is the server the throwaway databases are made on.
	DatabaseURL string
	// Extract says how POIs are extracted.
	Extract PyCGExtract
	// SCIP, when its Indexer is set, indexes each case: the POIs are then
	// relay analyze --scip's (LoadPyCGSCIP), not extract.py's
	// (Extract.ModulePOIs and Parallel still apply).
	SCIP PyCGSCIP
	// Parallel is how many cases' own databases are worked at once.
	Parallel int
	// Layouts are the layouts measured (PyCGOptions.Layouts).
	Layouts []PyCGLayout
	JSON    bool
}

// runPyCGCommand runs relay-eval --pycg and returns the exit code.
func runPyCGCommand(ctx context.Context, cmd PyCGCommand, stdout, stderr io.Writer) int {
	progress := func(msg string) { fmt.Fprintf(stderr, "relay-eval: pycg: %s\n", msg) }
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var cases []*PyCGCase
	var err error
	if cmd.SCIP.Indexer != "" {
		progress(fmt.Sprintf("indexing each case under %s with %s or %s", cmd.Dir, cmd.SCIP.Indexer, cmd.SCIP.TypeScript))
		opts := cmd.SCIP
		opts.ModulePOIs, opts.Parallel = cmd.Extract.ModulePOIs, min(cmd.Parallel, runtime.NumCPU())
		cases, err = LoadPyCGSCIP(ctx, cmd.Dir, opts)
	} else {
		cases, err = LoadPyCG(ctx, cmd.Dir, cmd.Extract)
	}
	if err != nil {
		fmt.Fprintf(stderr, "relay-eval: pycg: %v\n", err)
		return 1
	}
	progress(fmt.Sprintf("%d cases under %s", len(cases), cmd.Dir))
	srv, err := newPyCGServer(ctx, cmd.DatabaseURL, logger)
	if err != nil {
		fmt.Fprintf(stderr, "relay-eval: pycg: %v\n", err)
		return 1
	}
	defer srv.Close()
	progress(fmt.Sprintf("migrated template database %s", srv.template))
	popts := PyCGOptions{NewDatabase: srv.New, Parallel: cmd.Parallel, Logger: logger, Progress: progress, Layouts: cmd.Layouts}
	r, err := RunPyCG(ctx, cmd.Dir, cases, popts)
	if err != nil {
		fmt.Fprintf(stderr, "relay-eval: pycg: %v\n", err)
		return 1
	}
	reports := []*PyCGReport{r}
	r.References = PyCGExtractPy
	if cmd.SCIP.Indexer != "" {
		// The same POIs with no references: relay's lexical rule reads
		// their rawCode, as EvaluateSCIP's lexical does.
		r.References = PyCGSCIPReferences
		lexical, err := withoutReferences(cases)
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: pycg: %v\n", err)
			return 1
		}
		progress("the same POIs without the index's references")
		lr, err := RunPyCG(ctx, cmd.Dir, lexical, popts)
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: pycg: %v\n", err)
			return 1
		}
		lr.References = PyCGSCIPLexical
		reports = append(reports, lr)
	}
	if cmd.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var v any = r
		if len(reports) > 1 {
			v = reports
		}
		if err := enc.Encode(v); err != nil {
			return 1
		}
		return 0
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := WritePyCGTable(stdout, r); err != nil {
			return 1
		}
	}
	return 0
}

// pycgServer makes throwaway relay databases on one PostgreSQL server, as
// internal/testdb does for tests: it migrates relay_eval_<random>_template
// once and copies it (CREATE DATABASE … TEMPLATE) for each database asked
// for, relay_eval_<random>_<n>, which is dropped when released. Close drops
// the template.
type pycgServer struct {
	adminURL string
	prefix   string
	template string
	logger   *slog.Logger

	mu sync.Mutex // serializes CREATE DATABASE … TEMPLATE
	n  int
}

func newPyCGServer(ctx context.Context, adminURL string, logger *slog.Logger) (*pycgServer, error) {
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, fmt.Errorf("error reading random bytes: %w", err)
	}
	s := &pycgServer{adminURL: adminURL, prefix: "relay_eval_" + hex.EncodeToString(suffix), logger: logger}
	s.template = s.prefix + "_template"
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.template}.Sanitize()); err != nil {
		return nil, err
	}
	if err := s.migrateTemplate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *pycgServer) migrateTemplate(ctx context.Context) error {
	u, err := s.databaseURL(s.template)
	if err != nil {
		return err
	}
	pool, err := database.Open(ctx, u, database.Options{Role: "eval", MaxConns: 2,
		StatementTimeout: 5 * time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		return err
	}
	// Closed before any copy: CREATE DATABASE … TEMPLATE needs the
	// template without sessions.
	defer pool.Close()
	m, err := migrations.New(pool, "", s.logger)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("error migrating %s: %w", s.template, err)
	}
	return nil
}

// New returns a new empty, migrated database.
func (s *pycgServer) New(ctx context.Context) (*PyCGDatabase, error) {
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("%s_%d", s.prefix, s.n)
	err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{s.template}.Sanitize())
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := database.Drop(dctx, s.adminURL, name); err != nil {
			s.logger.Warn("could not drop a throwaway database", slog.String("database", name), slog.String("error", err.Error()))
		}
	}
	u, err := s.databaseURL(name)
	if err != nil {
		drop()
		return nil, err
	}
	pool, err := database.Open(ctx, u, database.Options{Role: "eval", MaxConns: 8,
		StatementTimeout: 5 * time.Minute, IdleInTransactionTimeout: time.Minute})
	if err != nil {
		drop()
		return nil, err
	}
	cfg := config.Default()
	cfg.DatabaseURL = u
	return &PyCGDatabase{Pool: pool, Config: cfg, Release: func() {
		pool.Close()
		drop()
	}}, nil
}

// Close drops the template.
func (s *pycgServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := database.Drop(ctx, s.adminURL, s.template); err != nil {
		s.logger.Warn("could not drop the template database", slog.String("database", s.template), slog.String("error", err.Error()))
	}
}

func (s *pycgServer) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return fmt.Errorf("error connecting to %s: %w", config.RedactURL(s.adminURL), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("error running %s on %s: %w", sql, config.RedactURL(s.adminURL), err)
	}
	return nil
}

// databaseURL is the admin URL with its database replaced by name.
func (s *pycgServer) databaseURL(name string) (string, error) {
	u, err := url.Parse(s.adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("invalid --database-url %q: want postgres://user@host:port/db", config.RedactURL(s.adminURL))
	}
	u.Path = "/" + name
	return u.String(), nil
}
