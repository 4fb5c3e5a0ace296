package link

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/internal/indexplans"
	"github.com/relay-dev/relay/resolver"
)

// Beginner starts transactions: a *pgxpool.Pool, or a test's pgx.Tx (whose
// Begin is a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// RoundRowsDefault is how many link_queue rows a round reads at most.
const RoundRowsDefault = 1000

// Limits bound what one round reads.
type Limits struct {
	// Rows is how many link_queue rows the round reads at most.
	Rows int
	// Delay is how long after its publish a row is linked at the earliest:
	// a reference linked later finds the names published just after its
	// file, instead of being resolved again when they arrive. Zero: rows
	// are linked as soon as they are queued.
	Delay time.Duration
}

// Summary is what one round did.
type Summary struct {
	// Rows is the link_queue rows the round read and deleted; Postponed
	// the rows it left for a later round (their file is being published).
	Rows, Postponed int
	// Wait is set when the round found queued rows but none old enough to
	// link (Limits.Delay): how long until the oldest of them is.
	Wait time.Duration
	// Files is the files whose references the round stored, References
	// how many.
	Files, References int
	// Relationships counts the resolved references written (stored, or
	// resolved again to another target).
	Relationships int64
	// Unknown and Ambiguous count the stored references without a target.
	Unknown, Ambiguous int
	// Reresolved counts the references resolved again: stored before the
	// round, looking up a name a row changed.
	Reresolved int
	// Final are the publishes whose relationships the round made final.
	Final    []Final
	Duration time.Duration
}

// Final is a publish a round made final: its file, and the time from the
// publish to (just before) the round's commit.
type Final struct {
	FileID    string
	Freshness time.Duration
}

// row is one link_queue row.
type row struct {
	jobID       int64
	fileID      string
	fileVersion *int64
	publishXID  int64
	replace     bool
	publishedAt time.Time
	changed     []string
	srcs, names []string
	types       []string
}

// stored is a reference to resolve and store: its key, source file and
// the target it has now (nil when new or unresolved).
type stored struct {
	src, file, name, typ string
	target               *string
	// jobID is the job that handed the linker an own reference.
	jobID int64
}

type refKey struct{ src, typ, name string }

func (s stored) key() refKey { return refKey{s.src, s.typ, s.name} }

func (s stored) ref() resolver.Reference {
	return resolver.Reference{Name: s.name, Type: resolver.RelType(s.typ)}
}

// Round runs one linker round in one transaction (below). It returns a
// Summary with Rows and Postponed zero when link_queue held no row at least
// lim.Delay old, and Wait set when it held younger ones.
//
// A round holds the linker lock (one round at a time), reads up to lim.Rows
// queued rows at least lim.Delay old in job order and share-locks their files' rows, skipping a
// file whose row a publish holds (its rows wait for a later round). It
// resolves, against the symbol table as its statements read it, the rows'
// references whose file is still at the row's version, and every stored
// reference that looks up a name a row changed; it writes the targets and
// deletes the rows it read. A publish or job that commits after the round
// read something has a row of its own, read by a later round.
func Round(ctx context.Context, db Beginner, lim Limits) (*Summary, error) {
	start := time.Now()
	tx, err := indexplans.Begin(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("error beginning a link round: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := readRows(ctx, tx, lim)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return waiting(ctx, tx, lim.Delay)
	}
	sum := &Summary{}
	apply, done, err := lockFiles(ctx, tx, rows, sum)
	if err != nil {
		return nil, err
	}
	own := ownRefs(apply, sum)
	// The round's snapshot, taken before it reads the symbol table: every
	// publish it sees, the round's reading sees.
	var round int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO link_rounds (snapshot, files, reresolved, freshness_seconds) VALUES (pg_current_snapshot(), 0, 0, '{}')
		RETURNING id`).Scan(&round); err != nil {
		return nil, fmt.Errorf("error starting a link round: %w", err)
	}
	others, err := readChanged(ctx, tx, done, own)
	if err != nil {
		return nil, err
	}
	sum.Reresolved = len(others)
	cands, err := readCandidates(ctx, tx, own, others)
	if err != nil {
		return nil, err
	}
	for _, r := range apply {
		sum.Final = append(sum.Final, Final{FileID: r.fileID, Freshness: time.Since(r.publishedAt)})
	}
	if err := write(ctx, tx, round, resolve(own, others, cands, sum), done, sum); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("error committing a link round: %w", err)
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// readRows takes the linker lock and reads up to lim.Rows queued rows at
// least lim.Delay old, in job order.
func readRows(ctx context.Context, tx pgx.Tx, lim Limits) ([]row, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, linkerLock); err != nil {
		return nil, fmt.Errorf("error taking the linker lock: %w", err)
	}
	rs, err := tx.Query(ctx, `
		SELECT job_id, file_id, file_version, publish_xid, replace, published_at, changed, ref_sources, ref_names, ref_types
		FROM link_queue WHERE published_at <= clock_timestamp() - $2::interval ORDER BY job_id LIMIT $1`, lim.Rows, lim.Delay)
	if err != nil {
		return nil, fmt.Errorf("error reading link_queue: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.jobID, &x.fileID, &x.fileVersion, &x.publishXID, &x.replace, &x.publishedAt, &x.changed, &x.srcs, &x.names, &x.types)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading link_queue: %w", err)
	}
	return out, nil
}

// waiting returns the Summary of a round that read no row: Wait is how long
// until the oldest queued row is delay old, zero when none is queued.
func waiting(ctx context.Context, tx pgx.Tx, delay time.Duration) (*Summary, error) {
	if delay <= 0 {
		return &Summary{}, nil
	}
	var wait *time.Duration
	if err := tx.QueryRow(ctx, `SELECT min(published_at) + $1::interval - clock_timestamp() FROM link_queue`,
		delay).Scan(&wait); err != nil {
		return nil, fmt.Errorf("error reading link_queue's oldest row: %w", err)
	}
	if wait == nil {
		return &Summary{}, nil
	}
	return &Summary{Wait: min(max(*wait, time.Millisecond), delay)}, nil
}

// lockFiles share-locks the files of rows that carry references, in
// file_id order, skipping those a publish holds. It returns the rows whose
// references are stored (their file is still at the row's version) and the
// rows the round deletes (all but those of skipped files).
func lockFiles(ctx context.Context, tx pgx.Tx, rows []row, sum *Summary) (apply, done []row, err error) {
	var files []string
	for _, r := range rows {
		if r.fileVersion != nil {
			files = append(files, r.fileID)
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	version := make(map[string]int64, len(files))
	if len(files) > 0 {
		rs, err := tx.Query(ctx, `SELECT file_id, version FROM files WHERE file_id = ANY($1) ORDER BY file_id FOR SHARE SKIP LOCKED`, files)
		if err != nil {
			return nil, nil, fmt.Errorf("error locking %d files to link: %w", len(files), err)
		}
		var id string
		var v int64
		if _, err := pgx.ForEachRow(rs, []any{&id, &v}, func() error { version[id] = v; return nil }); err != nil {
			return nil, nil, fmt.Errorf("error locking %d files to link: %w", len(files), err)
		}
	}
	// A file not locked is held by a publish (its rows wait for a later
	// round) or gone (its rows are stale): one read tells which.
	var unlocked []string
	for _, f := range files {
		if _, ok := version[f]; !ok {
			unlocked = append(unlocked, f)
		}
	}
	held := map[string]bool{}
	if len(unlocked) > 0 {
		rs, err := tx.Query(ctx, `SELECT file_id FROM files WHERE file_id = ANY($1)`, unlocked)
		if err != nil {
			return nil, nil, fmt.Errorf("error reading %d files being published: %w", len(unlocked), err)
		}
		var id string
		if _, err := pgx.ForEachRow(rs, []any{&id}, func() error { held[id] = true; return nil }); err != nil {
			return nil, nil, fmt.Errorf("error reading %d files being published: %w", len(unlocked), err)
		}
	}
	for _, r := range rows {
		if r.fileVersion != nil {
			if held[r.fileID] {
				sum.Postponed++
				continue
			}
			if v, locked := version[r.fileID]; locked && v == *r.fileVersion {
				apply = append(apply, r)
			}
		}
		done = append(done, r)
	}
	sum.Rows = len(done)
	return apply, done, nil
}

// ownRefs returns the references of the rows to apply, one per key, a
// later row's replacing an earlier one's.
func ownRefs(apply []row, sum *Summary) map[refKey]stored {
	own := map[refKey]stored{}
	files := map[string]bool{}
	for _, r := range apply {
		files[r.fileID] = true
		for i := range r.srcs {
			s := stored{src: r.srcs[i], file: r.fileID, name: r.names[i], typ: r.types[i], jobID: r.jobID}
			own[s.key()] = s
		}
	}
	sum.Files, sum.References = len(files), len(own)
	return own
}

// unknownXID stands for a publish whose transaction id is unknown: no round
// saw it.
const unknownXID = math.MaxInt64

// changedKeys returns the keys the rows changed, sorted, each once, with the
// transaction ids of the publishes that changed them.
func changedKeys(rows []row) (keys []string, xids map[string][]int64) {
	xids = map[string][]int64{}
	for _, r := range rows {
		xid := r.publishXID
		if xid <= 0 {
			xid = unknownXID
		}
		for _, k := range r.changed {
			xids[k] = append(xids[k], xid)
		}
	}
	return slices.Sorted(maps.Keys(xids)), xids
}

// unseenBy returns, for each of xids, the last round whose snapshot did not
// see that publish: rounds run one at a time and each one's snapshot is
// taken after the one before, so every round up to it missed the publish
// and every later one saw it. A publish no kept round missed gets the round
// before the oldest kept (a reference of a deleted round counts as having
// missed it); an unknown one, every round.
func unseenBy(ctx context.Context, tx pgx.Tx, xids []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(xids))
	var known []string
	for _, x := range xids {
		if x == unknownXID {
			out[x] = math.MaxInt64
		} else if _, ok := out[x]; !ok {
			out[x] = 0
			known = append(known, strconv.FormatInt(x, 10))
		}
	}
	if len(known) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT u.xid::bigint, coalesce(
			(SELECT id FROM link_rounds WHERE NOT pg_visible_in_snapshot(u.xid::xid8, snapshot) ORDER BY id DESC LIMIT 1),
			(SELECT min(id) - 1 FROM link_rounds), 0)
		FROM unnest($1::text[]) AS u(xid)`, known)
	if err != nil {
		return nil, fmt.Errorf("error finding the rounds that missed %d publishes: %w", len(known), err)
	}
	var xid, round int64
	if _, err := pgx.ForEachRow(rows, []any{&xid, &round}, func() error { out[xid] = round; return nil }); err != nil {
		return nil, fmt.Errorf("error finding the rounds that missed %d publishes: %w", len(known), err)
	}
	return out, nil
}

// dependsChunk is the most keys one read of depends looks up: a GIN scan
// sets up its keys in time quadratic in their number.
const dependsChunk = 1000

// readChanged reads the stored references that look up a key one of done
// changed and were resolved by a round that missed the publish (unseenBy).
// They are read by key and, for derived references, through depends; those
// among own are left out (own replaces them).
func readChanged(ctx context.Context, tx pgx.Tx, done []row, own map[refKey]stored) ([]stored, error) {
	keys, xidsOf := changedKeys(done)
	if len(keys) == 0 {
		return nil, nil
	}
	var all []int64
	for _, xs := range xidsOf {
		all = append(all, xs...)
	}
	unseen, err := unseenBy(ctx, tx, all)
	if err != nil {
		return nil, err
	}
	// A key changed by several publishes: the latest round that missed any.
	bounds := make([]int64, len(keys))
	for i, k := range keys {
		for _, x := range xidsOf[k] {
			bounds[i] = max(bounds[i], unseen[x])
		}
	}
	b := &pgx.Batch{}
	seen := map[refKey]bool{}
	var out []stored
	read := func(rows pgx.Rows) error {
		var s stored
		_, err := pgx.ForEachRow(rows, []any{&s.src, &s.file, &s.name, &s.typ, &s.target}, func() error {
			k := s.key()
			if _, mine := own[k]; !mine && !seen[k] {
				seen[k] = true
				out = append(out, s)
			}
			return nil
		})
		return err
	}
	b.Queue(`
		SELECT r.source_poi_id, r.source_file_id, r.name, r.type, r.target_poi_id
		FROM unnest($1::text[], $2::bigint[]) AS u(key, bound)
		CROSS JOIN LATERAL (SELECT * FROM poi_references r WHERE r.key = u.key AND r.resolved_round <= u.bound OFFSET 0) r`,
		keys, bounds).Query(read)
	// One statement per dependsChunk keys, each bounded by its latest round.
	for i := 0; i < len(keys); i += dependsChunk {
		j := min(i+dependsChunk, len(keys))
		b.Queue(`SELECT source_poi_id, source_file_id, name, type, target_poi_id FROM poi_references
			WHERE depends && $1::text[] AND depends IS NOT NULL AND resolved_round <= $2`,
			keys[i:j], slices.Max(bounds[i:j])).Query(read)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("error reading the references to %d changed names: %w", len(keys), err)
	}
	return out, nil
}

// resolution is a reference and the target resolver.Lookup gave it.
type resolution struct {
	stored
	tgt, tgtFile *string
	own          bool
}

// resolve looks every reference up among cands.
func resolve(own map[refKey]stored, others []stored, cands map[string][]resolver.Candidate, sum *Summary) []resolution {
	out := make([]resolution, 0, len(own)+len(others))
	add := func(s stored, isOwn bool) {
		rs := resolution{stored: s, own: isOwn}
		refCands := candidatesOf(cands, s.ref())
		target, outcome := resolver.Lookup(s.src, s.file, s.ref(), refCands)
		switch outcome {
		case resolver.Resolved:
			rs.tgt = &target
			f := fileOf(refCands, target)
			rs.tgtFile = &f
		case resolver.Unknown:
			if isOwn {
				sum.Unknown++
			}
		case resolver.Ambiguous:
			if isOwn {
				sum.Ambiguous++
			}
		}
		out = append(out, rs)
	}
	keys := slices.SortedFunc(maps.Keys(own), func(a, b refKey) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.typ, b.typ), cmp.Compare(a.name, b.name))
	})
	for _, k := range keys {
		add(own[k], true)
	}
	for _, s := range others {
		add(s, false)
	}
	return out
}
