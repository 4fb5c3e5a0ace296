package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// AnalyzeSummary is what `relay analyze --json` prints.
type AnalyzeSummary struct {
	goanalyze.Summary
	// Worked is set with --work: the batches were resolved in-process.
	Worked        bool    `json:"worked"`
	WorkSeconds   float64 `json:"work_seconds,omitempty"`
	Relationships int64   `json:"relationships,omitempty"`
	FailedPOIs    int64   `json:"failed_pois,omitempty"`
}

func newAnalyzeCmd(a *app) *cobra.Command {
	var (
		asJSON     bool
		work       bool
		filesPerTx int
	)
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Extract POIs from the Go files under DIR and publish one analysis per file",
		Long: `Analyze walks DIR for .go files (skipping testdata, vendor, directories
starting with "." or "_", and files the default build excludes by their build
constraints: a //go:build line or a _GOOS/_GOARCH suffix, as go/build's
Context.MatchFile judges them for this machine), parses each with go/parser, and publishes one
analysis per file through the outbox: its functions, methods, types,
interfaces and imports become POIs whose rawCode is the declaration's source
text, ids are "<path>:<line>:<name>" and fileId is the path relative to DIR.
Files that do not parse are reported with file:line and skipped.

--files-per-tx files share one transaction (each under its own savepoint, so
a rejected file does not undo the others). With --work an in-process worker
then resolves every batch, as 'relay worker --until-idle' would.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dir := args[0]
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usageError{fmt.Errorf("%s is not a directory", dir)}
			}
			worker.SetGCPercent(a.cfg, a.logger)
			pool, err := a.open(ctx, "analyze")
			if err != nil {
				return err
			}
			defer pool.Close()
			inserter, err := worker.NewInsertClient(pool, a.cfg, a.logger)
			if err != nil {
				return err
			}
			pub := outbox.New(inserter, &outbox.Config{MaxJobBytes: a.cfg.MaxJobBytes, MaxPOIBytes: a.cfg.MaxPOIBytes,
				MaxAttempts: a.cfg.MaxAttempts}, a.logger)
			stderr := a.env.Stderr
			last := time.Now()
			sum, err := goanalyze.Publish(ctx, pool, pub, dir, goanalyze.PublishConfig{
				FilesPerTx: filesPerTx,
				Progress: func(s goanalyze.Summary) {
					if time.Since(last) >= time.Second {
						fmt.Fprintf(stderr, "relay analyze: %d files, %d POIs published (%.0f POIs/s)\n", s.Files, s.POIs, float64(s.POIs)/s.Seconds)
						last = time.Now()
					}
				},
			})
			if sum != nil {
				for _, s := range sum.Skipped {
					fmt.Fprintf(stderr, "relay analyze: skipped %s\n", s.Error())
				}
				for _, r := range sum.Rejected {
					fmt.Fprintf(stderr, "relay analyze: rejected %s\n", r.Error)
				}
			}
			if err != nil {
				return err
			}
			out := AnalyzeSummary{Summary: *sum}
			if work {
				client, err := worker.NewClient(pool, a.cfg, a.logger, nil)
				if err != nil {
					return err
				}
				start := time.Now()
				if err := a.announced(ctx, pool, client, func(ctx context.Context) error {
					return worker.RunUntilIdle(ctx, client, pool, a.logger, nil)
				}); err != nil {
					return err
				}
				out.Worked, out.WorkSeconds = true, time.Since(start).Seconds()
				if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM relationships), (SELECT count(*) FROM failed_pois)`).
					Scan(&out.Relationships, &out.FailedPOIs); err != nil {
					return fmt.Errorf("error counting results: %w", err)
				}
			}
			if asJSON {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.out(), "relay analyze: published %d files, %d POIs in %d jobs in %.1fs; %d files skipped (parse errors), %d rejected\n",
				out.Files, out.POIs, out.Jobs, out.Seconds, len(out.Skipped), len(out.Rejected))
			if work {
				fmt.Fprintf(a.out(), "relay analyze: resolved in %.1fs: %d relationships, %d failed POIs in the database\n",
					out.WorkSeconds, out.Relationships, out.FailedPOIs)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&work, "work", false, "resolve the published batches with an in-process worker before exiting")
	cmd.Flags().IntVar(&filesPerTx, "files-per-tx", goanalyze.FilesPerTxDefault, "files published per transaction")
	return cmd
}
