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

// Batch publishes analyses through an outbox publisher FilesPerTx per
// transaction (each under its own savepoint when one is rejected), and
// keeps the summary: Publish's loop, for any source of analyses (relay
// analyze --scip). It is not safe for concurrent use.
type Batch struct {
	ctx     context.Context
	db      Beginner
	pub     *outbox.Publisher
	cfg     PublishConfig
	perTx   int
	start   time.Time
	sum     *Summary
	pending []outbox.Analysis
}

// NewBatch returns a Batch publishing to cfg.Repository.
func NewBatch(ctx context.Context, db Beginner, pub *outbox.Publisher, cfg PublishConfig) *Batch {
	return &Batch{ctx: ctx, db: db, pub: pub, cfg: cfg, perTx: cmp.Or(cfg.FilesPerTx, FilesPerTxDefault), start: time.Now(),
		sum: &Summary{Skipped: []ParseError{}, Rejected: []Rejected{}, Warnings: []string{}}}
}

// Summary returns the summary so far (the batch's own: callers may add to it).
func (b *Batch) Summary() *Summary {
	b.sum.Seconds = time.Since(b.start).Seconds()
	return b.sum
}

// Add queues analysis a (its Repository set to the batch's) and publishes
// the queue when it holds FilesPerTx files.
func (b *Batch) Add(a outbox.Analysis) error {
	a.Repository = b.cfg.Repository
	b.pending = append(b.pending, a)
	if len(b.pending) >= b.perTx {
		return b.Flush()
	}
	return nil
}

// Flush publishes the queued analyses in one transaction. Files the outbox
// rejects are recorded in the summary; a database error is returned (the
// files of committed transactions stay published).
func (b *Batch) Flush() error {
	ctx, pending := b.ctx, b.pending
	if len(pending) == 0 {
		return nil
	}
	var files, pois, jobs int
	var rejected []Rejected
	err := pgx.BeginFunc(ctx, b.db, func(tx pgx.Tx) error {
		files, pois, jobs, rejected = 0, 0, 0, nil
		results, err := b.pub.PublishManyTx(ctx, tx, pending)
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
			res, err := b.pub.PublishTx(ctx, tx, a)
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
	sum := b.sum
	sum.Files, sum.POIs, sum.Jobs = sum.Files+files, sum.POIs+pois, sum.Jobs+jobs
	sum.Rejected = append(sum.Rejected, rejected...)
	b.pending = b.pending[:0]
	if b.cfg.Progress != nil {
		b.cfg.Progress(*b.Summary())
	}
	return nil
}

// Publish walks root and publishes one analysis per Go file through pub,
// FilesPerTx files per transaction. Files that do not parse, and files the
// outbox rejects, are recorded in the summary and skipped; a database error
// stops it (the files of committed transactions stay published, and
// publishing is idempotent, so it can simply be run again).
func Publish(ctx context.Context, db Beginner, pub *outbox.Publisher, root string, cfg PublishConfig) (*Summary, error) {
	b := NewBatch(ctx, db, pub, cfg)
	sum := b.sum
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
		return b.Add(f.Analysis)
	})
	if err == nil {
		err = b.Flush()
	}
	return b.Summary(), err
}
