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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

func newPublishCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "publish [FILE|-]",
		Short: "Publish newline-delimited file analyses (one JSON object per line)",
		Long: `Publish reads newline-delimited file analyses, {"fileId": ..., "pois": [...]},
from FILE or standard input ("-" or no argument). Each line is published in its
own transaction: its POIs enter the symbol table and one resolve_file job is
enqueued. A bad line is reported with its line number and fileId and the good
lines are still published; the exit code is 1 when any line was rejected.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			sum, err := publishStream(cmd.Context(), a, pool, in)
			if err != nil {
				return err
			}
			if asJSON {
				if err := json.NewEncoder(a.out()).Encode(sum); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.out(), "published %d files, %d POIs, %d jobs; %d lines rejected\n",
					sum.Files, sum.POIs, sum.Jobs, len(sum.Rejected))
			}
			if len(sum.Rejected) > 0 {
				return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d lines rejected", len(sum.Rejected), sum.Lines)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
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

// RejectedLine is one input line that was not published.
type RejectedLine struct {
	Line   int    `json:"line"`
	FileID string `json:"file_id,omitempty"`
	Error  string `json:"error"`
}

// publishStream publishes every line of r, each in its own transaction,
// reporting rejected lines on stderr as it goes.
func publishStream(ctx context.Context, a *app, pool *pgxpool.Pool, r io.Reader) (*PublishSummary, error) {
	client, err := worker.NewInsertClient(pool, a.cfg, a.logger)
	if err != nil {
		return nil, err
	}
	pub := outbox.New(client, &outbox.Config{MaxJobBytes: a.cfg.MaxJobBytes, MaxPOIBytes: a.cfg.MaxPOIBytes,
		MaxAttempts: a.cfg.MaxAttempts}, a.logger)

	sum := &PublishSummary{Rejected: []RejectedLine{}}
	br := bufio.NewReaderSize(r, 1<<20)
	lastLog := time.Now()
	for lineNo := 1; ; lineNo++ {
		line, readErr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			sum.Lines++
			res, err := publishLine(ctx, pool, pub, line)
			switch {
			case err == nil:
				sum.Files++
				sum.POIs += res.POIs
				sum.Jobs += len(res.JobIDs)
				sum.JobIDs = append(sum.JobIDs, res.JobIDs...)
			case errors.Is(err, outbox.ErrRejected):
				rl := RejectedLine{Line: lineNo, Error: err.Error()}
				var re *outbox.RejectError
				if errors.As(err, &re) {
					rl.FileID = re.FileID
				}
				sum.Rejected = append(sum.Rejected, rl)
				fmt.Fprintf(a.env.Stderr, "line %d: rejected: %s\n", lineNo, rl.Error)
			default:
				// The database failed: stop, and say how far we got so the
				// rest can be re-run (publishing is idempotent).
				return sum, fmt.Errorf("error publishing line %d (%d lines published before it): %w", lineNo, sum.Files, err)
			}
			if time.Since(lastLog) > 5*time.Second {
				a.logger.InfoContext(ctx, "publishing", slog.Int("lines", sum.Lines), slog.Int("files", sum.Files),
					slog.Int("pois", sum.POIs), slog.Int("rejected", len(sum.Rejected)))
				lastLog = time.Now()
			}
		}
		if readErr == io.EOF {
			return sum, nil
		}
		if readErr != nil {
			return sum, fmt.Errorf("error reading input after line %d: %w", lineNo, readErr)
		}
	}
}

// publishLine publishes one analysis in its own transaction, retrying a few
// times when PostgreSQL aborts it for a deadlock or serialization failure.
func publishLine(ctx context.Context, pool *pgxpool.Pool, pub *outbox.Publisher, line []byte) (*outbox.Result, error) {
	a, err := outbox.DecodeAnalysis(line)
	if err != nil {
		return nil, err
	}
	var res *outbox.Result
	for attempt := 1; ; attempt++ {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			res, err = pub.PublishTx(ctx, tx, a)
			return err
		})
		var pgErr *pgconn.PgError
		if err != nil && attempt < 4 && errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001") {
			continue
		}
		return res, err
	}
}
