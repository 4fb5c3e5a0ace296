package goanalyze

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/outbox"
)

// FilesPerTxDefault is how many files Publish puts in one transaction.
const FilesPerTxDefault = 50

// PublishConfig tunes Publish.
type PublishConfig struct {
	// FilesPerTx is how many files share one transaction (each still under
	// its own savepoint, so one rejected file does not undo the others).
	FilesPerTx int
	// Progress, when set, is called after each transaction commits.
	Progress func(Summary)
	// References is the reference mode: ReferencesTyped (the default) or
	// ReferencesLexical.
	References string
	// Repository is the repository every analysis is published to ("" the
	// default one; DefaultRepository is what `relay analyze` picks).
	Repository string
}

// Summary is what Publish did.
type Summary struct {
	Files int `json:"files"`
	POIs  int `json:"pois"`
	Jobs  int `json:"jobs"`
	// Skipped are files that did not parse; Rejected files the outbox
	// refused (each with its reason).
	Skipped  []ParseError `json:"skipped"`
	Rejected []Rejected   `json:"rejected"`
	// Warnings are the packages typed references fell back to lexical
	// for, each with the reason.
	Warnings []string `json:"warnings"`
	// ReferencesUsed is the references the POIs carry: "typed" (every
	// package type-checked), "lexical" (asked for, or typed was asked for
	// and every package fell back, e.g. outside a Go module), or "typed
	// and lexical" (LexicalPackages packages fell back).
	ReferencesUsed  string `json:"references_used"`
	LexicalPackages int    `json:"lexical_packages"`
	// Seconds is the wall time of the walk and publish.
	Seconds float64 `json:"seconds"`
}

// Rejected is a file the outbox refused.
type Rejected struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// Beginner starts a transaction (a *pgxpool.Pool).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Publish walks root and publishes one analysis per Go file through pub,
// FilesPerTx files per transaction. Files that do not parse, and files the
// outbox rejects, are recorded in the summary and skipped; a database error
// stops it (the files of committed transactions stay published, and
// publishing is idempotent, so it can simply be run again).
func Publish(ctx context.Context, db Beginner, pub *outbox.Publisher, root string, cfg PublishConfig) (*Summary, error) {
	perTx := cmp.Or(cfg.FilesPerTx, FilesPerTxDefault)
	start := time.Now()
	sum := &Summary{Skipped: []ParseError{}, Rejected: []Rejected{}, Warnings: []string{}}
	var pending []outbox.Analysis
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		var files, pois, jobs int
		var rejected []Rejected
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			files, pois, jobs, rejected = 0, 0, 0, nil
			results, err := pub.PublishManyTx(ctx, tx, pending)
			if err == nil {
				for _, res := range results {
					files, pois, jobs = files+1, pois+res.POIs, jobs+len(res.JobIDs)
				}
				return nil
			}
			if !errors.Is(err, outbox.ErrRejected) {
				return err
			}
			// One of them was refused: publish the others one by one.
			for _, a := range pending {
				res, err := pub.PublishTx(ctx, tx, a)
				if errors.Is(err, outbox.ErrRejected) {
					rejected = append(rejected, Rejected{File: a.FileID, Error: err.Error()})
					continue
				}
				if err != nil {
					return err
				}
				files, pois, jobs = files+1, pois+res.POIs, jobs+len(res.JobIDs)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("error publishing %d files starting at %q: %w", len(pending), pending[0].FileID, err)
		}
		sum.Files, sum.POIs, sum.Jobs = sum.Files+files, sum.POIs+pois, sum.Jobs+jobs
		sum.Rejected = append(sum.Rejected, rejected...)
		pending = pending[:0]
		sum.Seconds = time.Since(start).Seconds()
		if cfg.Progress != nil {
			cfg.Progress(*sum)
		}
		return nil
	}
	sum.ReferencesUsed = ReferencesTyped
	if cfg.References == ReferencesLexical {
		sum.ReferencesUsed = ReferencesLexical
	}
	opts := Options{References: cfg.References, Warn: func(w string) { sum.Warnings = append(sum.Warnings, w) },
		Lexical: func(pkg string) {
			switch {
			case pkg == "":
				sum.ReferencesUsed = ReferencesLexical
			case sum.ReferencesUsed != ReferencesLexical:
				sum.LexicalPackages++
				sum.ReferencesUsed = ReferencesTyped + " and " + ReferencesLexical
			}
		}}
	err := WalkWith(ctx, root, opts, func(f File) error {
		if f.Err != nil {
			sum.Skipped = append(sum.Skipped, *f.Err)
			return nil
		}
		a := f.Analysis
		a.Repository = cfg.Repository
		pending = append(pending, a)
		if len(pending) >= perTx {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	sum.Seconds = time.Since(start).Seconds()
	return sum, err
}
