package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// maxLineBytesDefault is --max-line-bytes' default: far above a real
// file's analysis, far below what would exhaust a publisher's memory. It
// is fixed rather than derived from max_job_bytes, which bounds one
// resolve_file job: a file's POIs are split across as many jobs as needed,
// so a line may rightly be many times max_job_bytes.
const maxLineBytesDefault = 64 << 20

func newPublishCmd(a *app) *cobra.Command {
	var (
		asJSON       bool
		maxLineBytes int64
		repo         repositoryFlag
	)
	cmd := &cobra.Command{
		Use:   "publish [FILE|-]",
		Short: "Publish newline-delimited file analyses (one JSON object per line)",
		Long: `Publish reads newline-delimited file analyses, {"fileId": ..., "pois": [...]},
from FILE or standard input ("-" or no argument). Each line's POIs enter the
symbol table and one resolve_file job is enqueued for its file. Consecutive
lines are published together, up to 50 files or 8 MiB of input per
transaction. A bad line is reported on stderr with its line number and
fileId, in line order (with --json, in the summary's "rejected" instead),
and the good lines are still published; the exit code is 1 when any line
was rejected.

A line's "repository" names the repository its file belongs to; a line
without one (absent or null) goes to --repository, by default the default
repository (""). A line's own "repository", even "", wins over the flag.

A line longer than --max-line-bytes (default 64 MiB, 67108864 bytes) is
rejected as "N MiB exceeds --max-line-bytes 64 MiB": no more than
--max-line-bytes of it is held in memory (the rest is skipped in 1 MiB
chunks), and the lines after it are still published. Publishing a line
takes a few times its size in memory.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxLineBytes < 1 {
				return usageError{fmt.Errorf("--max-line-bytes %d must be at least 1", maxLineBytes)}
			}
			in := a.env.Stdin
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("error opening input: %w", err)
				}
				defer f.Close()
				in = f
			}
			pool, err := a.open(cmd.Context(), "publish")
			if err != nil {
				return err
			}
			defer pool.Close()
			// With --json the rejections are in the summary only.
			sum, err := publishStreamLimited(cmd.Context(), a, pool, in, maxLineBytes, repo.name, !asJSON)
			if err != nil {
				return err
			}
			if asJSON {
				if err := a.printJSON(sum); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.out(), "published %s, %s, %s; %s rejected\n", pluralize(sum.Files, "file"),
					pluralize(sum.POIs, "POI"), pluralize(sum.Jobs, "job"), pluralize(len(sum.Rejected), "line"))
			}
			if len(sum.Rejected) > 0 {
				return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d lines rejected", len(sum.Rejected), sum.Lines)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().Int64Var(&maxLineBytes, "max-line-bytes", maxLineBytesDefault,
		"reject (and skip, unread) any line longer than this many bytes")
	cmd.Flags().Var(&repo, "repository",
		`the repository of lines that name none (no "repository", or null); a line's own "repository" wins (default "", the default repository)`)
	return cmd
}

// PublishSummary is what publish did.
type PublishSummary struct {
	Lines    int            `json:"lines"`
	Files    int            `json:"files"`
	POIs     int            `json:"pois"`
	Jobs     int            `json:"jobs"`
	JobIDs   []int64        `json:"-"`
	Rejected []RejectedLine `json:"rejected"`
}

// RejectedLine is one input line that was not published. A summary's
// Rejected lists them in input order.
type RejectedLine struct {
	Line int `json:"line"`
	// Repository is the line's repository, its own or --repository's,
	// when it could be read and is not the default one.
	Repository string `json:"repository,omitempty"`
	FileID     string `json:"file_id,omitempty"`
	Error      string `json:"error"`
}

// publishStream publishes every line of r, reporting rejected lines on
// stderr as it goes.
func publishStream(ctx context.Context, a *app, pool *pgxpool.Pool, r io.Reader) (*PublishSummary, error) {
	return publishStreamLimited(ctx, a, pool, r, maxLineBytesDefault, "", true)
}

// Publish batches: consecutive lines go in one transaction (one
// PublishManyTx) until a batch holds publishBatchFiles files or
// publishBatchBytes of input. A batch is cut before a line whose fileId it
// already holds, so a file published twice is published twice, in order.
const (
	publishBatchFiles = 50
	publishBatchBytes = 8 << 20
)

// pendingLine is a decoded line waiting in a batch.
type pendingLine struct {
	no int
	a  outbox.Analysis
}

// publishStreamLimited is publishStream rejecting lines longer than
// maxLineBytes, publishing lines that name no repository to defaultRepo,
// and printing rejected lines on stderr only when printRejected.
//
// Rejections are reported in line order: a line that does not decode is
// rejected at once, one the publisher rejects when its batch is published,
// so both wait in pending until every line before the next batch is
// settled (after each batch, and at the end).
func publishStreamLimited(ctx context.Context, a *app, pool *pgxpool.Pool, r io.Reader, maxLineBytes int64,
	defaultRepo string, printRejected bool) (*PublishSummary, error) {
	pub, err := a.publisher(pool)
	if err != nil {
		return nil, err
	}

	sum := &PublishSummary{Rejected: []RejectedLine{}}
	var pending []RejectedLine
	reject := func(line int, repo, fileID string, err error) {
		pending = append(pending, RejectedLine{Line: line, Repository: repo, FileID: fileID, Error: rejectionMessage(err, repo)})
	}
	settle := func() {
		slices.SortStableFunc(pending, func(x, y RejectedLine) int { return x.Line - y.Line })
		for _, l := range pending {
			if printRejected {
				fmt.Fprintf(a.env.Stderr, "line %d: rejected: %s\n", l.Line, l.Error)
			}
		}
		sum.Rejected = append(sum.Rejected, pending...)
		pending = pending[:0]
	}
	defer settle()
	var (
		batch      []pendingLine
		batchBytes int
		inBatch    = map[string]bool{}
		lastLog    = time.Now()
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		published, err := publishBatch(ctx, pool, pub, batch, func(l pendingLine, err error) {
			var re *outbox.RejectError
			fileID := l.a.FileID
			if errors.As(err, &re) {
				fileID = re.FileID
			}
			reject(l.no, l.a.Repository, fileID, err)
		})
		settle()
		for _, res := range published {
			sum.Files++
			sum.POIs += res.POIs
			sum.Jobs += len(res.JobIDs)
			sum.JobIDs = append(sum.JobIDs, res.JobIDs...)
		}
		if err != nil {
			// The database failed: stop, and say how far we got so the
			// rest can be re-run (publishing is idempotent).
			return fmt.Errorf("error publishing lines %d-%d (%d files published): %w",
				batch[0].no, batch[len(batch)-1].no, sum.Files, err)
		}
		batch, batchBytes = batch[:0], 0
		clear(inBatch)
		if time.Since(lastLog) > 5*time.Second {
			a.logger.InfoContext(ctx, "publishing", slog.Int("lines", sum.Lines), slog.Int("files", sum.Files),
				slog.Int("pois", sum.POIs), slog.Int("rejected", len(sum.Rejected)))
			lastLog = time.Now()
		}
		return nil
	}

	lines := newLineReader(r, maxLineBytes)
	for lineNo := 1; ; lineNo++ {
		line, readErr := lines.next()
		var tooLong *lineTooLongError
		if errors.As(readErr, &tooLong) {
			sum.Lines++
			reject(lineNo, "", "", tooLong)
			readErr = tooLong.readErr
		} else if len(bytes.TrimSpace(line)) > 0 {
			sum.Lines++
			an, err := outbox.DecodeAnalysis(line)
			if err == nil && an.Repository == "" && defaultRepo != "" && !namesRepository(line) {
				an.Repository = defaultRepo
			}
			if err != nil {
				var re *outbox.RejectError
				fileID := ""
				if errors.As(err, &re) {
					fileID = re.FileID
				}
				reject(lineNo, lineRepository(line, defaultRepo), fileID, err)
			} else {
				if inBatch[an.FileID] || len(batch) == publishBatchFiles || batchBytes+len(line) > publishBatchBytes {
					if err := flush(); err != nil {
						return sum, err
					}
				}
				batch = append(batch, pendingLine{no: lineNo, a: an})
				batchBytes += len(line)
				inBatch[an.FileID] = true
			}
		}
		if readErr == io.EOF {
			return sum, flush()
		}
		if readErr != nil {
			if err := flush(); err != nil {
				return sum, err
			}
			return sum, fmt.Errorf("error reading input after line %d: %w", lineNo, readErr)
		}
	}
}

// namesRepository reports whether an analysis's JSON has a "repository"
// that is not null (matched as outbox.DecodeAnalysis matches it). It is
// asked only of lines that decoded with the default repository while
// --repository names another, to tell "repository": "" (which wins) from
// no repository at all.
func namesRepository(line []byte) bool {
	var env struct {
		Repository json.RawMessage `json:"repository"`
	}
	return json.Unmarshal(line, &env) == nil && len(env.Repository) > 0 && string(env.Repository) != "null"
}

// lineRepository is the repository of a line that did not decode, as far
// as it can be read: its own "repository" when that is a string,
// defaultRepo when it names none, "" (unknown) when it cannot be read.
func lineRepository(line []byte, defaultRepo string) string {
	var env struct {
		Repository *string `json:"repository"`
	}
	switch {
	case json.Unmarshal(line, &env) != nil:
		return ""
	case env.Repository == nil:
		return defaultRepo
	default:
		return *env.Repository
	}
}

// rejectionMessage is err's message naming repo, the rejected line's
// repository, when that is not the default one and the message does not
// name it already: a *outbox.RejectError says `(file "F", repository "R")`
// itself once its Repository is set.
func rejectionMessage(err error, repo string) string {
	var re *outbox.RejectError
	switch {
	case repo == "":
		return err.Error()
	case errors.As(err, &re) && err == error(re) && re.FileID != "":
		if re.Repository == "" {
			named := *re
			named.Repository = repo
			return named.Error()
		}
		return err.Error()
	default:
		return fmt.Sprintf("repository %q: %s", repo, err.Error())
	}
}

// publishBatch publishes the batch's analyses in one transaction and returns
// the results of those published. The outcome is the same as publishing the
// lines one by one, in order: when the publisher rejects a file, the lines
// before it are published as a batch, the rejected line alone (so its
// rejection, reported through rejected, is the one it would get on its
// own), then the rest. A deadlock or serialization failure is retried a few
// times; any other error means the lines not yet published were not.
func publishBatch(ctx context.Context, pool *pgxpool.Pool, pub *outbox.Publisher, batch []pendingLine,
	rejected func(pendingLine, error)) ([]*outbox.Result, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	as := make([]outbox.Analysis, len(batch))
	for i, l := range batch {
		as[i] = l.a
	}
	var res []*outbox.Result
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			res, err = pub.PublishManyTx(ctx, tx, as)
			return err
		})
		var pgErr *pgconn.PgError
		if err == nil || attempt == 4 || !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") {
			break
		}
	}
	var re *outbox.RejectError
	switch {
	case err == nil:
		return res, nil
	case !errors.As(err, &re):
		return nil, err
	case len(batch) == 1:
		rejected(batch[0], err)
		return nil, nil
	}
	i := max(0, slices.IndexFunc(batch, func(l pendingLine) bool { return l.a.FileID == re.FileID }))
	var out []*outbox.Result
	for _, part := range [][]pendingLine{batch[:i], batch[i : i+1], batch[i+1:]} {
		r, err := publishBatch(ctx, pool, pub, part, rejected)
		out = append(out, r...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// lineReader reads newline-delimited lines of at most max bytes (newline
// not counted), holding at most max bytes plus one buffer of a line in
// memory whatever the input.
type lineReader struct {
	br  *bufio.Reader
	max int64
	buf []byte
}

// lineReaderChunk is the buffer a too-long line is skipped through.
const lineReaderChunk = 1 << 20

func newLineReader(r io.Reader, max int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, lineReaderChunk), max: max}
}

// next returns the next line with its newline (none at the end of input),
// valid until the next call, and io.EOF with the last line. A line longer
// than max is not returned: it is read through and dropped in chunks, and
// next returns a *lineTooLongError carrying its length and the error that
// ended it (nil, or io.EOF at the end of input).
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	if cap(lr.buf) > 4*lineReaderChunk {
		lr.buf = nil // keep no big line's buffer alive for the small ones
	}
	var size int64 // the line's bytes so far, without the newline
	over := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		size += int64(len(chunk))
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			size--
		}
		if !over && size > lr.max {
			over, lr.buf = true, nil
		}
		if !over {
			lr.buf = append(lr.buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			return nil, &lineTooLongError{size: size, max: lr.max, readErr: err}
		}
		return lr.buf, err
	}
}

// lineTooLongError is a line longer than --max-line-bytes.
type lineTooLongError struct {
	size, max int64
	readErr   error // what ended the line: nil, io.EOF or a read error
}

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("%s (%d bytes) exceeds --max-line-bytes %s (%d bytes)", byteSize(e.size), e.size, byteSize(e.max), e.max)
}

// byteSize writes n in the largest binary unit it reaches: "64 MiB",
// "1.5 GiB", "900 B".
func byteSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	if i == 0 || v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// publisher is the publisher of the commands that publish (publish,
// analyze, outbox retry): an insert-only River client on pool and the
// configured limits (max_job_bytes, max_poi_bytes, max_attempts).
func (a *app) publisher(pool *pgxpool.Pool) (*outbox.Publisher, error) {
	wcfg := worker.ConfigFrom(a.cfg)
	client, err := worker.NewInsertClient(pool, wcfg, a.logger)
	if err != nil {
		return nil, err
	}
	return outbox.New(client, &wcfg.Publish, a.logger), nil
}

// PublishNDJSON is `relay publish` without its flags: it publishes every
// line of r on pool as the command does (batches of consecutive lines, a
// rejected line reported on stderr and the others still published), with
// cfg's publish limits. The torture test (internal/torture) runs the
// command's path through it without opening a pool per publish.
func PublishNDJSON(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool, r io.Reader, stderr io.Writer, logger *slog.Logger) (*PublishSummary, error) {
	a := &app{env: &Env{Stderr: stderr}, cfg: cfg, logger: logger, redactor: config.NewRedactor()}
	return publishStreamLimited(ctx, a, pool, r, maxLineBytesDefault, "", true)
}
