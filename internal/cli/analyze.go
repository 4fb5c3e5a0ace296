package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/worker"
)

// AnalyzeSummary is what `relay analyze --json` prints.
type AnalyzeSummary struct {
	goanalyze.Summary
	// Repository is the repository the analyses were published to ("" the
	// default one): --repository, else DIR's module path or name.
	Repository string `json:"repository"`
	// References is the reference mode asked for with --references:
	// "typed" or "lexical"; ReferencesUsed is what the POIs got (Warnings
	// lists the packages typed mode fell back to lexical for).
	References string `json:"references"`
	// SCIP is set with --scip: the index's counts (Files and POIs are the
	// published ones).
	SCIP *SCIPSummary `json:"scip,omitempty"`
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
		references string
		scipIndex  string
		repo       repositoryFlag
	)
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Extract POIs from the Go files under DIR (typed or lexical references), or from a SCIP index of DIR (--scip), and publish one analysis per file",
		Long: `Analyze walks DIR for .go files (skipping testdata, vendor, directories
starting with "." or "_", and files the default build excludes by their build
constraints: a //go:build line or a _GOOS/_GOARCH suffix, as go/build's
Context.MatchFile judges them for this machine), parses each with go/parser, and publishes one
analysis per file through the outbox: its functions, methods, types,
interfaces and imports become POIs whose rawCode is the declaration's source
text, ids are "<path>:<line>:<name>" and fileId is the path relative to DIR.
Files that do not parse are reported with file:line and skipped.

--references says where the POIs' references come from:

  typed (the default)
      DIR's packages, tests included, are first loaded with go/packages and
      type-checked with go/types, as the go command loads them from DIR
      (DIR must be in a Go module: a go.mod in it or above it). Each
      function, method and type POI carries its symbol (its fully qualified
      name, e.g. "example.com/m/p.(*T).Get") and, as supplied references,
      its static calls of functions and methods declared under DIR and the
      types declared under DIR that it embeds; interface calls, calls of
      function values, recursive calls and calls of anything outside DIR
      are left out. Import POIs keep lexical references. A package that does not type-check keeps
      lexical references (its POIs still carry their symbols), with a
      warning naming it and the first error; when the go command cannot
      load DIR at all (no go.mod, or no go command), every package does,
      with one warning.
  lexical
      No type checking: POIs carry no symbol and no references, and relay's
      resolver finds each POI's references by reading its rawCode.

Every warning is printed to standard error (and listed in --json's
"warnings"); warnings do not change the exit code.

Every analysis names the repository it belongs to (file ids and POI ids are
unique within a repository, and names resolve only within one): --repository,
or by default the module path in the go.mod of the module that contains DIR
(the nearest go.mod in DIR or above it), or, outside a module, the base name
of DIR made absolute. --repository "" publishes to the default repository.

--scip INDEX reads a SCIP index (scip-python, scip-typescript, or any
indexer that writes SCIP) of the project whose root is DIR instead of Go
source: one analysis per document, its POIs the functions, methods
(constructors included), classes, interfaces, function-valued class fields
and constants and nested functions the index defines, with their symbols
and references by symbol (CALLS at call sites the index resolves; a
construction calls the class's constructor; EXTENDS and IMPLEMENTS to the
parents the class header names; IMPORTS). A call site the
index resolves nothing at keeps relay's lexical rule (a reference by name),
unless it names a method of the language's built-in types (get, items; trim,
push, ...).
The whole index is read and checked before anything is published: a
truncated or malformed index, or a document whose source under DIR is
missing or does not match its ranges, is an error naming the document and
the occurrence, and nothing is published. --repository defaults to DIR's
base name; --references does not apply (giving it is a usage error), and
an index that holds no documents is an error.

--files-per-tx files share one transaction (each under its own savepoint, so
a rejected file does not undo the others). With --work an in-process worker
then resolves every batch, as 'relay worker --until-idle' would.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dir := args[0]
			if references != goanalyze.ReferencesTyped && references != goanalyze.ReferencesLexical {
				return usageError{fmt.Errorf("--references %q is not one of %s, %s", references,
					goanalyze.ReferencesTyped, goanalyze.ReferencesLexical)}
			}
			if scipIndex != "" && cmd.Flags().Changed("references") {
				return usageError{fmt.Errorf("--references does not apply to --scip: the references come from the index")}
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usageError{fmt.Errorf("%s is not a directory", dir)}
			}
			repository := ""
			if r := repo.value(); r != nil {
				repository = *r
			} else if scipIndex != "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return fmt.Errorf("error resolving %s: %w", dir, err)
				}
				repository = filepath.Base(abs)
			} else {
				var err error
				if repository, err = goanalyze.DefaultRepository(dir); err != nil {
					return err
				}
			}
			worker.SetGCPercent(worker.ConfigFrom(a.cfg), a.logger)
			pool, err := a.open(ctx, "analyze")
			if err != nil {
				return err
			}
			defer pool.Close()
			pub, err := a.publisher(pool)
			if err != nil {
				return err
			}
			stderr := a.env.Stderr
			last := time.Now()
			pcfg := goanalyze.PublishConfig{
				FilesPerTx: filesPerTx,
				References: references,
				Repository: repository,
				Progress: func(s goanalyze.Summary) {
					if time.Since(last) >= time.Second {
						fmt.Fprintf(stderr, "relay analyze: %d files, %d POIs published (%.0f POIs/s)\n", s.Files, s.POIs, float64(s.POIs)/s.Seconds)
						last = time.Now()
					}
				},
			}
			var sum *goanalyze.Summary
			var scipSum *SCIPSummary
			if scipIndex != "" {
				sum, scipSum, err = publishSCIP(ctx, pool, pub, scipIndex, dir, pcfg, stderr)
			} else {
				sum, err = goanalyze.Publish(ctx, pool, pub, dir, pcfg)
			}
			if sum != nil {
				for _, w := range sum.Warnings {
					fmt.Fprintf(stderr, "relay analyze: warning: %s\n", w)
				}
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
			out := AnalyzeSummary{Summary: *sum, Repository: repository, References: references, SCIP: scipSum}
			if scipSum != nil {
				out.References = ReferencesSCIP
			}
			if work {
				w, err := worker.New(pool, worker.ConfigFrom(a.cfg), a.logger)
				if err != nil {
					return err
				}
				start := time.Now()
				if err := a.announced(ctx, pool, w.ID(), func(ctx context.Context) error {
					return w.RunUntilIdle(ctx, nil)
				}); err != nil {
					return err
				}
				out.Worked, out.WorkSeconds = true, time.Since(start).Seconds()
				if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM relationships WHERE repository = $1),
					(SELECT count(*) FROM failed_pois WHERE repository = $1)`, repository).
					Scan(&out.Relationships, &out.FailedPOIs); err != nil {
					return fmt.Errorf("error counting results: %w", err)
				}
			}
			if asJSON {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.out(), "relay analyze: published %s, %s in %s to %s in %.1fs; %s skipped (parse errors), %d rejected; %s, %s\n",
				pluralize(out.Files, "file"), pluralize(out.POIs, "POI"), pluralize(out.Jobs, "job"), repositoryName(out.Repository),
				out.Seconds, pluralize(len(out.Skipped), "file"), len(out.Rejected), referencesUsed(out), pluralize(len(out.Warnings), "warning"))
			if work {
				fmt.Fprintf(a.out(), "relay analyze: resolved in %.1fs: %d relationships, %d failed POIs in %s\n",
					out.WorkSeconds, out.Relationships, out.FailedPOIs, repositoryName(out.Repository))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&work, "work", false, "resolve the published batches with an in-process worker before exiting")
	cmd.Flags().IntVar(&filesPerTx, "files-per-tx", goanalyze.FilesPerTxDefault, "files published per transaction")
	cmd.Flags().StringVar(&references, "references", goanalyze.ReferencesTyped,
		"where references come from: typed (go/types supplies symbols and references; a package that does not type-check falls back to lexical, with a warning) or lexical (relay's resolver reads rawCode)")
	cmd.Flags().StringVar(&scipIndex, "scip", "", "read this SCIP index of the project rooted at DIR (scip-python, scip-typescript, ...) instead of Go source")
	cmd.Flags().Var(&repo, "repository",
		`the repository to publish to (default: the module path of DIR's go.mod, else DIR's base name; "" is the default repository)`)
	return cmd
}

// referencesUsed says which references the POIs carry, and when that is
// not what --references asked for.
func referencesUsed(s AnalyzeSummary) string {
	switch {
	case s.SCIP != nil:
		return fmt.Sprintf("references from the SCIP index (%s left to the lexical rule)", pluralize(s.SCIP.Fallbacks, "call site"))
	case s.References == goanalyze.ReferencesTyped && s.ReferencesUsed == goanalyze.ReferencesLexical:
		return "lexical references (fell back from typed: see the warning)"
	case s.LexicalPackages > 0:
		return fmt.Sprintf("typed references (%s fell back to lexical)", pluralize(s.LexicalPackages, "package"))
	default:
		return s.References + " references"
	}
}

// repositoryName names repository in a sentence: repository "NAME", or the
// default repository.
func repositoryName(repository string) string {
	if repository == "" {
		return "the default repository"
	}
	return fmt.Sprintf("repository %q", repository)
}
