// Package link is relay's linker: the one place where stored references get
// their targets (docs/design.md, "Resolution protocol").
//
// A resolve_file job hands the linker its file's references and the names
// its publish changed (Queue, one link_queue row, in the job's transaction)
// and makes sure a link job is on its way (EnsureTx). The link job, one at a
// time, runs rounds: each reads queued rows, resolves with resolver.Lookup
// the rows' references and every stored reference that looks up a name a
// row changed, writes the targets and deletes the rows it read, in one
// transaction. So once no link job is left, every stored reference has the
// target resolver.Lookup gives it against the final symbol table.
package link

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/relay-dev/relay/resolver"
)

// Kind is the link job's kind, QueueLink its queue.
const (
	Kind      = "link"
	QueueLink = "relay_link"
)

// Args are the link job's arguments: none; the work is in link_queue.
type Args struct{}

// Kind is Kind.
func (Args) Kind() string { return Kind }

// InsertOpts puts link jobs in their own queue, with enough attempts that a
// linker failing for a while (the database away) is still retried.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueLink, MaxAttempts: 100}
}

// The advisory lock keys the linker and the jobs that hand it work take
// (transaction-scoped, so they hold through a transaction pooler).
const (
	// linkerLock is held, exclusively, by a linker round: one at a time.
	linkerLock int64 = 0x72656c61796c6e6b // "relaylnk"
	// gateLock is held shared by every transaction that queues work and
	// looks for a link job (EnsureTx), exclusively by a link job while it
	// checks that nothing is queued and completes: a row queued while the
	// link job finishes is seen by it, or finds it finished and inserts the
	// next one.
	gateLock int64 = 0x72656c6179676174 // "relaygat"
)

// Ref is one reference a job hands the linker: its source POI and the
// reference.
type Ref struct {
	Source string
	resolver.Reference
}

// Entry is one resolve_file job's hand-over.
type Entry struct {
	JobID int64
	// Repository is the file's repository.
	Repository string
	FileID     string
	// FileVersion is the version of the file Refs belong to; nil when the
	// job's publish was superseded (then Refs are ignored: the newer
	// publish's job hands its own).
	FileVersion *int64
	// Replace: Refs are all of the file's references (a publish); false for
	// a reprocess job, whose references are added to the file's.
	Replace bool
	// PublishedAt is when the publish (the job) was created: freshness runs
	// from it.
	PublishedAt time.Time
	// PublishXID is the publish's transaction id (0: unknown): a stored
	// reference resolved under a snapshot whose xmin is above it saw the
	// publish, and is not resolved again for Changed.
	PublishXID int64
	// Changed are the reference keys (resolver.ReferenceKey) whose
	// definitions the publish changed: every stored reference that looks
	// one up is resolved again.
	Changed []string
	Refs    []Ref
}

// Queue queues e's link_queue row on b, to run in the job's transaction.
func Queue(b *pgx.Batch, e Entry) {
	srcs, names, types := make([]string, len(e.Refs)), make([]string, len(e.Refs)), make([]string, len(e.Refs))
	for i, r := range e.Refs {
		srcs[i], names[i], types[i] = r.Source, r.Name, string(r.Type)
	}
	changed := e.Changed
	if changed == nil {
		changed = []string{}
	}
	b.Queue(`
		INSERT INTO link_queue (job_id, file_id, file_version, replace, published_at, changed, ref_sources, ref_names, ref_types,
		                        publish_xid, repository)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (repository, job_id) DO UPDATE SET file_version = excluded.file_version, replace = excluded.replace,
			changed = excluded.changed, ref_sources = excluded.ref_sources, ref_names = excluded.ref_names,
			ref_types = excluded.ref_types`,
		e.JobID, e.FileID, e.FileVersion, e.Replace, e.PublishedAt, changed, srcs, names, types, e.PublishXID, e.Repository)
}

// EnsureTx makes sure that a link job will read what tx queued: it takes the
// gate lock shared (held until tx ends) and, unless a link job is already
// waiting or running, inserts one with the River client in ctx (a worker's,
// river.ClientFromContext). A running link job completes only after it has
// taken the gate exclusively and found link_queue empty, so it either sees
// tx's rows or has completed before tx looks, and tx inserts the next.
func EnsureTx(ctx context.Context, tx pgx.Tx) error {
	// Two statements: the look must read a snapshot taken after the lock
	// was granted (a statement's snapshot is taken when it starts).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, gateLock); err != nil {
		return fmt.Errorf("error taking the link gate: %w", err)
	}
	var waiting bool
	if err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM river_job
		               WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending') AND queue = $1 AND kind = $2)`,
		QueueLink, Kind).Scan(&waiting); err != nil {
		return fmt.Errorf("error looking for a link job: %w", err)
	}
	if waiting {
		return nil
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return fmt.Errorf("error inserting a link job: %w", err)
	}
	if _, err := client.InsertTx(ctx, tx, Args{}, nil); err != nil {
		return fmt.Errorf("error inserting a link job: %w", err)
	}
	return nil
}

// keysOf returns the reference keys of names (resolver.ReferenceKey).
func keysOf(names []string) []string {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = resolver.ReferenceKey(n)
	}
	return keys
}

// dependsOf is what poi_references.depends holds for ref: the names a
// derived reference looks up, space-separated (Go names hold no space), ""
// for any other reference.
func dependsOf(ref resolver.Reference) string {
	if !resolver.IsDerived(ref) {
		return ""
	}
	return strings.Join(resolver.LookupNames(ref), " ")
}
