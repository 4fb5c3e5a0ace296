// Package link is relay's linker: the one place where stored references get
// their targets (docs/design.md, "Resolution protocol").
//
// Linking runs in Lanes lanes. A stored reference belongs to the lane of
// its key (LaneOf), and only rounds holding that lane write it; a lane's
// rounds run one at a time, and rounds holding different lanes side by
// side.
//
// A resolve_file job hands the linker its file's references and the names
// its publish changed (Queue: one link_queue row per lane that has work, in
// the job's transaction) and makes sure a link job is on its way for each
// of those lanes (EnsureTx). A lane's link job runs rounds: each holds the
// job's lane and every other lane no round holds (Round), reads their
// queued rows, resolves with resolver.Lookup each row's references of its
// lane's keys and every stored reference of its lanes that looks up a name
// a row changed, writes the targets and deletes the rows it read, in one
// transaction. So once no link job is left, every stored reference has the
// target resolver.Lookup gives it against the final symbol table: the
// references a publish's change can move are those that look the name up
// by their key, all in the name's lane, and the derived ones that depend
// on it, all in lane 0 (LaneOf).
package link

import (
	"context"
	"fmt"
	"hash/fnv"
	"runtime"
	"slices"
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

// Lanes is how many lanes link references side by side. It is part of the
// schema's meaning, not a setting: a stored reference's lane (LaneOf its
// key) decides which lane's rounds resolve it again, so every process must
// agree on it, and changing it needs a migration that re-queues the rows.
const Lanes = 8

// Workers is how many link jobs a worker process runs at once: half the
// CPUs it may use (GOMAXPROCS), at least 1, at most Lanes. A round takes
// every lane no other round holds (Round), so one link worker links every
// lane in rounds as large as one linker's, and more share the lanes out;
// more rounds at once than CPUs to run them would only contend for the
// same indexes.
func Workers() int { return max(1, min(Lanes, runtime.GOMAXPROCS(0)/2)) }

// LaneOf is the lane of a reference key (resolver.ReferenceKey): lane 0 for
// a key that begins with "{" (a derived Go reference is its own key, and
// only lane 0 reads derived references through the names they depend
// on), otherwise FNV-1a of the key, modulo Lanes.
func LaneOf(key string) int {
	if strings.HasPrefix(key, "{") {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % Lanes)
}

// Args are the link job's arguments: its lane; the work is in link_queue.
// A job inserted without one (before lanes) links lane 0.
type Args struct {
	Lane int `json:"lane"`
}

// Kind is Kind.
func (Args) Kind() string { return Kind }

// InsertOpts puts link jobs in their own queue, with enough attempts that a
// linker failing for a while (the database away) is still retried.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueLink, MaxAttempts: 100}
}

// The advisory lock keys the linker and the jobs that hand it work take
// (transaction-scoped, so they hold through a transaction pooler): a
// linker lock per lane (linkerLock + lane) and one gate.
const (
	// linkerLock is held, exclusively, by a lane's round: one at a time in
	// each lane.
	linkerLock int64 = 0x72656c61796c6e6b // "relaylnk"
	// gateLock is held shared by every transaction that queues work and
	// looks for link jobs (EnsureTx), exclusively by a lane's link job
	// while it checks that its lane is empty and completes: a row queued
	// while the link job finishes is seen by it, or finds it finished and
	// inserts the next one.
	gateLock int64 = 0x72656c6179676174 // "relaygat"
)

func linkerKey(lane int) int64 { return linkerLock + int64(lane) }

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

// Queue queues e's link_queue rows on b, to run in the job's transaction,
// and returns their lanes: a row in each lane that has one of Refs or one
// of the changed names (by its key, LaneOf), holding those; lane 0's row,
// queued whenever e changed a name, holds every changed name (lane 0 reads
// the derived references that depend on any of them). With neither, one
// row in lane 0 still reports the publish linked.
func Queue(b *pgx.Batch, e Entry) []int {
	type cols struct{ srcs, names, types, changed []string }
	var byLane [Lanes]*cols
	at := func(l int) *cols {
		if byLane[l] == nil {
			byLane[l] = &cols{}
		}
		return byLane[l]
	}
	for _, r := range e.Refs {
		c := at(LaneOf(resolver.ReferenceKey(r.Name)))
		c.srcs, c.names, c.types = append(c.srcs, r.Source), append(c.names, r.Name), append(c.types, string(r.Type))
	}
	for _, k := range e.Changed {
		if l := LaneOf(k); l != 0 {
			c := at(l)
			c.changed = append(c.changed, k)
		}
	}
	if len(e.Changed) > 0 || byLane[0] != nil || slices.IndexFunc(byLane[:], func(c *cols) bool { return c != nil }) < 0 {
		at(0).changed = append(at(0).changed, e.Changed...)
	}
	// One statement inserts every lane's row: a VALUES row per lane (at
	// most Lanes), the job's values shared. Not INSERT ... SELECT FROM
	// unnest($n): Citus plans an INSERT ... SELECT into a distributed table
	// only after pulling its rows to the coordinator, and refused it with
	// parameters ("could not create distributed plan"); rows in VALUES it
	// routes to the shard of their repository.
	var lanes []int
	args := []any{e.JobID, e.FileID, e.FileVersion, e.Replace, e.PublishedAt, e.PublishXID, e.Repository}
	var rows []string
	for l, c := range byLane {
		if c == nil {
			continue
		}
		lanes = append(lanes, l)
		n := len(args)
		args = append(args, nonNil(c.changed), nonNil(c.srcs), nonNil(c.names), nonNil(c.types), int16(l))
		rows = append(rows, fmt.Sprintf("($1, $2, $3, $4, $5, $%d::text[], $%d::text[], $%d::text[], $%d::text[], $6, $7, $%d::smallint)",
			n+1, n+2, n+3, n+4, n+5))
	}
	b.Queue(`
		INSERT INTO link_queue (job_id, file_id, file_version, replace, published_at, changed, ref_sources, ref_names, ref_types,
		                        publish_xid, repository, lane)
		VALUES `+strings.Join(rows, ", ")+`
		ON CONFLICT (repository, job_id, lane) DO UPDATE SET file_version = excluded.file_version, replace = excluded.replace,
			changed = excluded.changed, ref_sources = excluded.ref_sources, ref_names = excluded.ref_names,
			ref_types = excluded.ref_types`, args...)
	return lanes
}

// EnsureTx makes sure that a link job will read what tx queued in lanes
// (Queue's result): it takes the gate lock shared (held until tx ends) and
// inserts, with the River client in ctx (a worker's,
// river.ClientFromContext), a link job for each of them that has none
// waiting or running. A running link job completes only after it has taken
// the gate exclusively and found its lane empty, so it either sees tx's
// rows or has completed before tx looks, and tx inserts the next.
func EnsureTx(ctx context.Context, tx pgx.Tx, lanes []int) error {
	// Two statements: the look must read a snapshot taken after the lock
	// was granted (a statement's snapshot is taken when it starts).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, gateLock); err != nil {
		return fmt.Errorf("error taking the link gate: %w", err)
	}
	var waiting []int
	if err := tx.QueryRow(ctx, `
		SELECT coalesce(array_agg(DISTINCT coalesce((args->>'lane')::int, 0)), '{}') FROM river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending') AND queue = $1 AND kind = $2`,
		QueueLink, Kind).Scan(&waiting); err != nil {
		return fmt.Errorf("error looking for link jobs: %w", err)
	}
	var params []river.InsertManyParams
	for _, l := range lanes {
		if !slices.Contains(waiting, l) {
			params = append(params, river.InsertManyParams{Args: Args{Lane: l}})
		}
	}
	if len(params) == 0 {
		return nil
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return fmt.Errorf("error inserting link jobs: %w", err)
	}
	if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("error inserting link jobs: %w", err)
	}
	return nil
}

// nonNil is ss, or an empty slice for nil: pgx sends a nil slice as NULL.
func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// EveryLane is a link job for each lane, to insert where no worker's
// context is at hand (EnsureTx needs one): a job whose lane already has one
// waiting finds its lane empty and completes at once.
func EveryLane() []river.InsertManyParams {
	params := make([]river.InsertManyParams, Lanes)
	for l := range params {
		params[l] = river.InsertManyParams{Args: Args{Lane: l}}
	}
	return params
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
