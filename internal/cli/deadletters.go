package cli

// The plumbing shared by `relay failed` (failed_pois) and `relay dlq`
// (dead_lettered_items), and by the other commands that print JSON or ask
// before destroying something: opening the stores, printing JSON, asking for
// confirmation, reading times and ages, exporting rows and purging them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/csvsafe"
)

// deadLetters is what a dead-letter command works with: a pool opened for
// the command and a store over each dead-letter table.
type deadLetters struct {
	pool   *pgxpool.Pool
	failed *failed.Store // failed_pois
	items  *items.Store  // dead_lettered_items
}

// withDeadLetters opens a pool for one command (role names it in
// application_name) and runs fn with the stores over it.
func (a *app) withDeadLetters(cmd *cobra.Command, role string, fn func(ctx context.Context, dl *deadLetters) error) error {
	ctx := cmd.Context()
	pool, err := a.open(ctx, role)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(ctx, &deadLetters{pool: pool, failed: failed.NewStore(pool), items: items.NewStore(pool, a.logger)})
}

// encodeJSON writes v to w indented, without HTML escaping: signatures hold
// <n> and <str>, which must print as they are.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printJSON writes v to standard output: what every --json prints.
func (a *app) printJSON(v any) error { return encodeJSON(a.out(), v) }

// stdinIsTerminal reports whether someone can answer a prompt on standard
// input: Env.StdinIsTerminal when set, else whether it is a terminal.
func (a *app) stdinIsTerminal() bool {
	if a.env.StdinIsTerminal != nil {
		return a.env.StdinIsTerminal()
	}
	return isInteractive(a.env.Stdin)
}

// isInteractive reports whether r is a terminal someone can answer a prompt
// on: a character device other than /dev/null, not a pipe or a file.
func isInteractive(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// confirmation is what a destructive command asks before it acts.
type confirmation struct {
	yes      bool   // --yes was given: do not ask
	command  string // "purge", "migrate down"
	effect   string // what it would do: "would delete 3 rows"
	undone   string // what is not done when it stops: "deleted", "rolled back"
	question string // asked on a terminal, answered y or yes
}

// yesFlag registers --yes (-y), which every destructive command takes.
func yesFlag(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask for confirmation (needed when standard input is not a terminal)")
}

// confirm returns nil when c may go ahead: --yes was given, or a person
// answered yes on a terminal. When standard input is not a terminal it does
// not ask: whatever is piped in, it refuses (exit 1) and says to pass --yes.
func (a *app) confirm(c confirmation) error {
	if c.yes {
		return nil
	}
	if !a.stdinIsTerminal() {
		return exitError{code: ExitRuntime, msg: fmt.Sprintf("%s %s; standard input is not a terminal, "+
			"so nothing was %s: run it again with --yes to confirm", c.command, c.effect, c.undone)}
	}
	fmt.Fprintf(a.env.Stderr, "%s [y/N] ", c.question)
	line, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("error reading the answer: %w", err)
	}
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return exitError{code: ExitRuntime, msg: fmt.Sprintf("%s cancelled: nothing %s", c.command, c.undone)}
	}
	return nil
}

// actorFlag registers --actor, the name audit events record.
func actorFlag(cmd *cobra.Command, actor *string) {
	cmd.Flags().StringVar(actor, "actor", "", "who to record in the audit trail (dead_letter_events); default: the OS user")
}

func actorOr(actor string) string {
	if strings.TrimSpace(actor) != "" {
		return actor
	}
	return deadletter.DefaultActor()
}

// maxListLimit bounds --limit of the listings; exports stream the rest.
const maxListLimit = 10000

// listLimit validates a listing's --limit; table names the command group.
func listLimit(limit int, table string) error {
	if limit < 1 || limit > maxListLimit {
		return usageError{fmt.Errorf("--limit %d must be between 1 and %d (use relay %s export for more)", limit, maxListLimit, table)}
	}
	return nil
}

// maxAgeDays bounds every age an operator passes (--older-than-days, "7d",
// "24h"): 100 years. Ages are checked before any arithmetic, so a cut-off is
// never computed from an overflowed duration.
const maxAgeDays = 36500

const maxAge = maxAgeDays * 24 * time.Hour

// daysFlag validates a day count such as --older-than-days against
// [min, maxAgeDays] and returns it as a duration.
func daysFlag(flag string, days, min int) (time.Duration, error) {
	if days < min || days > maxAgeDays {
		return 0, usageError{fmt.Errorf("--%s %d must be between %d and %d", flag, days, min, maxAgeDays)}
	}
	return time.Duration(days) * 24 * time.Hour, nil
}

// timeLayouts are the absolute times --since and --until take, read as UTC
// unless they say otherwise.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", time.DateOnly}

// timeRangeHelp documents --since and --until for commands whose rows they
// select by column.
func timeRangeHelp(column string) string {
	return `--since and --until take a time, in UTC unless it says otherwise: RFC 3339
(2026-11-21T04:00:00Z), "2026-11-21 04:00:05", "2026-11-21 04:00",
2026-11-21T04:00 or a date (2026-11-21, midnight); or an age counted back
from now: a Go duration (90m, 24h) or a number of days or weeks (7d, 2w), at
most ` + strconv.Itoa(maxAgeDays) + ` days. They bound (since <= it < until)
` + column + `.`
}

// parseTimeFlag reads an absolute time (timeLayouts) or an age before now
// ("90m", "24h", "7d", "2w") of at most maxAgeDays; "" is the zero time.
func parseTimeFlag(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	bad := fmt.Errorf("%q is not a time (2026-01-21T14:00:00Z, \"2026-01-21 14:00\", 2026-01-21; UTC) or an age (90m, 24h, 7d, 2w)", s)
	var age time.Duration
	if n, unit := strings.TrimRight(s, "dw"), s[len(s)-1]; (unit == 'd' || unit == 'w') && len(n) == len(s)-1 {
		v, err := strconv.ParseFloat(n, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return time.Time{}, bad
		}
		days := v
		if unit == 'w' {
			days *= 7
		}
		if days > maxAgeDays {
			return time.Time{}, fmt.Errorf("age %q is more than %d days", s, maxAgeDays)
		}
		age = time.Duration(days * float64(24*time.Hour))
	} else {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return time.Time{}, bad
		}
		if d > maxAge {
			return time.Time{}, fmt.Errorf("age %q is more than %d days", s, maxAgeDays)
		}
		age = d
	}
	return now.Add(-age).UTC(), nil
}

// timeRange is --since and --until.
type timeRange struct{ since, until string }

func (r *timeRange) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.since, "since", "", "only rows at or after this time or age (see Long help)")
	cmd.Flags().StringVar(&r.until, "until", "", "only rows before this time or age")
}

// parse validates both flags (usage errors).
func (r *timeRange) parse(now time.Time) (since, until time.Time, err error) {
	if since, err = parseTimeFlag(r.since, now); err != nil {
		return since, until, usageError{fmt.Errorf("--since: %w", err)}
	}
	if until, err = parseTimeFlag(r.until, now); err != nil {
		return since, until, usageError{fmt.Errorf("--until: %w", err)}
	}
	return since, until, nil
}

// The export formats.
const (
	formatCSV   = "csv"   // a header and one record per row (csvsafe)
	formatJSONL = "jsonl" // one JSON object per line (JSON Lines)
	formatJSON  = "json"  // one JSON array
)

// exportFlags are the flags of both exports besides the filters.
type exportFlags struct {
	format string
	limit  int64
}

func (e *exportFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&e.format, "format", "", "csv, jsonl (JSON Lines) or json (one JSON array); default: from FILE's extension (.csv, .jsonl or .ndjson, .json), else csv")
	cmd.Flags().Int64Var(&e.limit, "limit", 0, "stop after this many rows (0: all)")
}

const exportHelp = `FILE '-' is standard output. --format csv writes a header line and one
record per row, quoted as RFC 4180 requires, with JSON columns as JSON text;
a cell a spreadsheet would run as a formula (starting with =, +, -, @, a tab
or a carriage return) gets a leading '. --format jsonl writes one JSON object
per line (JSON Lines), --format json one JSON array of the same objects; both
are exact. Without --format the format follows FILE's extension (.csv,
.jsonl or .ndjson, .json), else csv. The file is written with mode 0600 (it
may hold source code) to a temporary name and renamed into place when
complete, so it appears only whole and a link at FILE is replaced, not
followed.`

// validate checks the flags and returns the format for path.
func (e *exportFlags) validate(path string) (string, error) {
	if e.limit < 0 {
		return "", usageError{fmt.Errorf("--limit %d must not be negative", e.limit)}
	}
	switch e.format {
	case formatCSV, formatJSONL, formatJSON:
		return e.format, nil
	case "":
	default:
		return "", usageError{fmt.Errorf("--format %q must be csv, jsonl or json", e.format)}
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return formatJSONL, nil
	case ".json":
		return formatJSON, nil
	}
	return formatCSV, nil
}

// rowExport is one table's export: its CSV columns, each row's cells, and
// the store's streaming Export.
type rowExport[T any] struct {
	noun    string // "row", "item": for the summary line
	columns []string
	record  func(T) []string
	stream  func(ctx context.Context, fn func(T) error) (int64, error)
	// check, when set, runs before the output is opened: an error (an
	// unknown --repository) writes nothing.
	check func(ctx context.Context) error
}

// runExport is the one exporter of both dead-letter tables: it validates
// the export flags, opens the stores (role names the pool) and writes every
// row the table's export streams to path ("-": standard output, the exact
// bytes) in the format asked for.
func runExport[T any](a *app, cmd *cobra.Command, role, path string, ef *exportFlags, table func(*deadLetters) rowExport[T]) error {
	format, err := ef.validate(path)
	if err != nil {
		return err
	}
	return a.withDeadLetters(cmd, role, func(ctx context.Context, dl *deadLetters) error {
		x := table(dl)
		if x.check != nil {
			if err := x.check(ctx); err != nil {
				return err
			}
		}
		var n int64
		err := writeOutput(path, a.dataOut(), func(w io.Writer) error {
			rows, err := newRowWriter(w, format, x.columns)
			if err != nil {
				return err
			}
			n, err = x.stream(ctx, func(v T) error {
				return rows.write(v, func() []string { return x.record(v) })
			})
			if err != nil {
				return err
			}
			return rows.close()
		})
		if err != nil {
			return err
		}
		if path != "-" {
			fmt.Fprintf(a.env.Stderr, "exported %s to %s (%s)\n", pluralize(int(n), x.noun), path, format)
		}
		return nil
	})
}

// rowWriter writes rows as CSV, JSON Lines or a JSON array.
type rowWriter struct {
	w      io.Writer
	format string
	csv    *csvsafe.Writer
	buf    bytes.Buffer
	enc    *json.Encoder
	n      int
}

func newRowWriter(w io.Writer, format string, columns []string) (*rowWriter, error) {
	rw := &rowWriter{w: w, format: format}
	rw.enc = json.NewEncoder(&rw.buf)
	rw.enc.SetEscapeHTML(false)
	switch format {
	case formatCSV:
		rw.csv = csvsafe.NewWriter(w)
		return rw, rw.csv.Write(columns)
	case formatJSON:
		_, err := io.WriteString(w, "[")
		return rw, err
	}
	return rw, nil
}

// write writes one row: v as JSON, or the cells as CSV.
func (rw *rowWriter) write(v any, cells func() []string) error {
	if rw.csv != nil {
		return rw.csv.Write(cells())
	}
	rw.buf.Reset()
	if err := rw.enc.Encode(v); err != nil {
		return err
	}
	if rw.format == formatJSON {
		sep := ",\n"
		if rw.n == 0 {
			sep = "\n"
		}
		rw.buf.Truncate(rw.buf.Len() - 1) // Encode's newline
		if _, err := io.WriteString(rw.w, sep); err != nil {
			return err
		}
	}
	rw.n++
	_, err := rw.w.Write(rw.buf.Bytes())
	return err
}

// close ends the output (the JSON array's bracket, CSV's buffer).
func (rw *rowWriter) close() error {
	switch rw.format {
	case formatCSV:
		return rw.csv.Flush()
	case formatJSON:
		end := "\n]\n"
		if rw.n == 0 {
			end = "]\n"
		}
		_, err := io.WriteString(rw.w, end)
		return err
	}
	return nil
}

// writeOutput runs write on path through a temporary file in its directory,
// created with mode 0600 and renamed over path once complete (so a link
// planted at path is replaced, not followed, and a failed write leaves
// nothing behind); for "-" write gets stdout.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("error creating %s: %w", path, err)
	}
	defer func() {
		if tmp != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if err := write(bw); err != nil {
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	for _, step := range []func() error{bw.Flush, tmp.Sync, tmp.Close} {
		if err := step(); err != nil {
			return fmt.Errorf("error writing %s: %w", path, err)
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		tmp = nil
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	tmp = nil
	return nil
}

// purgeFlags are the flags of both purges.
type purgeFlags struct {
	days   int
	yes    bool
	asJSON bool
	actor  string
}

func (p *purgeFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().IntVar(&p.days, "older-than-days", 0, what+" more than this many days ago (required, 1 to "+strconv.Itoa(maxAgeDays)+")")
	yesFlag(cmd, &p.yes)
	cmd.Flags().BoolVar(&p.asJSON, "json", false, "print JSON")
	actorFlag(cmd, &p.actor)
	_ = cmd.MarkFlagRequired("older-than-days")
}

// age validates --older-than-days.
func (p *purgeFlags) age() (time.Duration, error) { return daysFlag("older-than-days", p.days, 1) }

// deletion is one run of a destructive dead-letter command (purge, clear):
// count what it would delete, confirm, delete, report.
type deletion struct {
	yes, asJSON bool
	actor       string
	key         string // the JSON key of the count: "purged", "cleared"
	// count says how many rows match; ask is the confirmation for n of them.
	count func() (int64, error)
	ask   func(n int64) confirmation
	// remove deletes them, recording one audit event with actor.
	remove func(actor string) (int64, error)
	// none and done are the human-readable reports.
	none string
	done func(n int64) string
}

func (a *app) runDeletion(d deletion) error {
	n, err := d.count()
	if err != nil {
		return err
	}
	if n > 0 {
		c := d.ask(n)
		c.yes = d.yes
		if err := a.confirm(c); err != nil {
			return err
		}
		if n, err = d.remove(actorOr(d.actor)); err != nil {
			return err
		}
	}
	switch {
	case d.asJSON:
		return a.printJSON(map[string]int64{d.key: n})
	case n == 0:
		fmt.Fprintln(a.out(), d.none)
	default:
		fmt.Fprintln(a.out(), d.done(n))
	}
	return nil
}
