package link

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/internal/indexplans"
	"github.com/relay-dev/relay/outbox"
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
	// Distributed: relay's tables are distributed (Citus,
	// citus.TablesDistributed), and the round's statements take the forms
	// Citus plans (lockFiles, lateral).
	Distributed bool
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
	Repository string
	FileID     string
	Freshness  time.Duration
}

// row is one link_queue row.
type row struct {
	jobID       int64
	repo        string
	fileID      string
	fileVersion *int64
	publishXID  int64
	replace     bool
	publishedAt time.Time
	changed     []string
	srcs, names []string
	types       []string
	// readAt is when the round read it (the lanes' locks held).
	readAt time.Time
	// lane is the row's lane: the round links its references of that
	// lane's keys only.
	lane int
}

// laneSet is the lanes a round holds.
type laneSet [Lanes]bool

func (h laneSet) list() []int32 {
	var out []int32
	for l, in := range h {
		if in {
			out = append(out, int32(l))
		}
	}
	return out
}

// holds reports whether h holds the lane of reference key k.
func (h laneSet) holds(k string) bool { return h[LaneOf(k)] }

// stored is a reference to resolve and store: its key, source file and
// the target it has now (nil when new or unresolved).
type stored struct {
	repo, src, file, name, typ string
	target                     *string
	// targetRepo is target's repository.
	targetRepo string
	// jobID is the job that handed the linker an own reference.
	jobID int64
}

type refKey struct{ repo, src, typ, name string }

func (s stored) key() refKey { return refKey{s.repo, s.src, s.typ, s.name} }

func (s stored) ref() resolver.Reference {
	return resolver.Reference{Name: s.name, Type: resolver.RelType(s.typ)}
}

// Round runs one link round in one transaction (below), in lane home and
// in every other lane whose lock it gets without waiting. It returns a
// Summary with Rows and Postponed zero when those lanes held no row at
// least lim.Delay old, and Wait set when they held younger ones.
//
// A round holds its lanes' linker locks (one round at a time in a lane):
// it waits for home's, and takes the others that no round holds, so one
// link worker links every lane in one round and several share the lanes
// out. It reads up to lim.Rows of its lanes' queued rows at least
// lim.Delay old in job order and share-locks their files' rows, skipping a
// file whose row a publish holds (its rows wait for a later round). It
// resolves, against the symbol table as its statements read it, each
// row's references of its lane's keys whose file is still at the row's
// version, and every stored reference of its lanes that looks up a name a
// row changed; it writes the targets and deletes the rows it read. A
// publish or job that commits after the round read something has a row of
// its own, read by a later round of the lane. Rounds that hold no lane in
// common write different references (LaneOf their key), so they need no
// order between them.
func Round(ctx context.Context, db Beginner, home int, lim Limits) (*Summary, error) {
	if home < 0 || home >= Lanes {
		return nil, fmt.Errorf("error running a link round: lane %d is not in [0, %d)", home, Lanes)
	}
	start := time.Now()
	tx, err := indexplans.BeginFor(ctx, db, lim.Distributed)
	if err != nil {
		return nil, fmt.Errorf("error beginning a link round: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	held, err := lockLanes(ctx, tx, home)
	if err != nil {
		return nil, err
	}
	rows, err := readRows(ctx, tx, held, lim)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return waiting(ctx, tx, held, lim.Delay)
	}
	sum := &Summary{}
	apply, done, err := lockFiles(ctx, tx, rows, sum, lim.Distributed)
	if err != nil {
		return nil, err
	}
	own := ownRefs(apply, sum)
	// The round's snapshot, taken before it reads the symbol table: every
	// publish it sees, the round's reading sees.
	var round int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO link_rounds (snapshot, files, reresolved, freshness_seconds, lanes, began_at, locked_at)
		VALUES (pg_current_snapshot(), 0, 0, '{}', $1, now(), $2)
		RETURNING id`, held.list(), rows[0].readAt).Scan(&round); err != nil {
		return nil, fmt.Errorf("error starting a link round: %w", err)
	}
	others, err := readChanged(ctx, tx, held, done, own, lim.Distributed)
	if err != nil {
		return nil, err
	}
	sum.Reresolved = len(others)
	cands, err := readCandidates(ctx, tx, own, others, lim.Distributed)
	if err != nil {
		return nil, err
	}
	final := map[int64]bool{}
	for _, r := range apply {
		if !final[r.jobID] { // one publish's rows of several lanes
			final[r.jobID] = true
			sum.Final = append(sum.Final, Final{Repository: r.repo, FileID: r.fileID, Freshness: time.Since(r.publishedAt)})
		}
	}
	if err := write(ctx, tx, held, round, resolve(own, others, cands, sum), done, sum); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("error committing a link round: %w", err)
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// lockLanes takes home's linker lock, waiting for it, and every other
// lane's that no transaction holds, and returns the lanes held. The other
// locks are tried, never waited for, so rounds cannot deadlock on them.
func lockLanes(ctx context.Context, tx pgx.Tx, home int) (laneSet, error) {
	var held laneSet
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, linkerKey(home)); err != nil {
		return held, fmt.Errorf("error taking the linker lock of lane %d: %w", home, err)
	}
	held[home] = true
	var others []int32
	if err := tx.QueryRow(ctx, `
		SELECT coalesce(array_agg(l ORDER BY l), '{}') FROM generate_series(0, $2 - 1) AS l
		WHERE l <> $1 AND pg_try_advisory_xact_lock($3::bigint + l)`, home, Lanes, linkerLock).Scan(&others); err != nil {
		return held, fmt.Errorf("error taking the linker locks of other lanes: %w", err)
	}
	for _, l := range others {
		held[l] = true
	}
	return held, nil
}

// readRows reads up to lim.Rows of the queued rows of held laneSet at least
// lim.Delay old, in job order.
func readRows(ctx context.Context, tx pgx.Tx, held laneSet, lim Limits) ([]row, error) {
	rs, err := tx.Query(ctx, `
		SELECT job_id, repository, file_id, file_version, publish_xid, replace, published_at, changed, ref_sources, ref_names, ref_types,
		       statement_timestamp(), lane
		FROM link_queue WHERE lane = ANY($3) AND published_at <= clock_timestamp() - $2::interval ORDER BY job_id, lane LIMIT $1`,
		lim.Rows, lim.Delay, held.list())
	if err != nil {
		return nil, fmt.Errorf("error reading link_queue: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.jobID, &x.repo, &x.fileID, &x.fileVersion, &x.publishXID, &x.replace, &x.publishedAt, &x.changed, &x.srcs, &x.names, &x.types, &x.readAt, &x.lane)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading link_queue: %w", err)
	}
	return out, nil
}

// waiting returns the Summary of a round that read no row: Wait is how long
// until the oldest queued row of held laneSet is delay old, zero when none is
// queued.
func waiting(ctx context.Context, tx pgx.Tx, held laneSet, delay time.Duration) (*Summary, error) {
	if delay <= 0 {
		return &Summary{}, nil
	}
	var wait *time.Duration
	if err := tx.QueryRow(ctx, `SELECT min(published_at) + $1::interval - clock_timestamp() FROM link_queue WHERE lane = ANY($2)`,
		delay, held.list()).Scan(&wait); err != nil {
		return nil, fmt.Errorf("error reading link_queue's oldest row: %w", err)
	}
	if wait == nil {
		return &Summary{}, nil
	}
	return &Summary{Wait: min(max(*wait, time.Millisecond), delay)}, nil
}

// lockFiles share-locks the files of rows that carry references, in
// (repository, file_id) order, skipping those a publish holds. It returns
// the rows whose references are stored (their file is still at the row's
// version) and the rows the round deletes (all but those of skipped files).
// On distributed tables, where Citus locks rows only in a statement routed
// to one shard, it locks and reads each repository's files with a
// statement naming the repository (filesByRepository).
func lockFiles(ctx context.Context, tx pgx.Tx, rows []row, sum *Summary, distributed bool) (apply, done []row, err error) {
	var files []fileKey
	for _, r := range rows {
		if r.fileVersion != nil {
			files = append(files, fileKey{r.repo, r.fileID})
		}
	}
	slices.SortFunc(files, fileKey.compare)
	files = slices.Compact(files)
	// A file's version and the transaction that published it (0: unknown):
	// a version starts again at 1 when a deleted file is created again.
	type published struct{ version, xid int64 }
	version := make(map[fileKey]published, len(files))
	if len(files) > 0 && distributed {
		var k fileKey
		var v published
		if err := filesByRepository(ctx, tx, files, `
			SELECT repository, file_id, version, coalesce(publish_xid, 0) FROM files
			WHERE repository = $1 AND file_id = ANY($2) ORDER BY file_id FOR SHARE SKIP LOCKED`,
			[]any{&k.repo, &k.id, &v.version, &v.xid}, func() { version[k] = v }); err != nil {
			return nil, nil, fmt.Errorf("error locking %d files to link: %w", len(files), err)
		}
	} else if len(files) > 0 {
		repos, ids := splitKeys(files)
		rs, err := tx.Query(ctx, `
			SELECT f.repository, f.file_id, f.version, coalesce(f.publish_xid, 0) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(repo, file, ord)
			CROSS JOIN LATERAL (SELECT repository, file_id, version, publish_xid FROM files
			                    WHERE repository = u.repo AND file_id = u.file FOR SHARE SKIP LOCKED) f
			ORDER BY u.ord`, repos, ids)
		if err != nil {
			return nil, nil, fmt.Errorf("error locking %d files to link: %w", len(files), err)
		}
		var k fileKey
		var v published
		if _, err := pgx.ForEachRow(rs, []any{&k.repo, &k.id, &v.version, &v.xid}, func() error { version[k] = v; return nil }); err != nil {
			return nil, nil, fmt.Errorf("error locking %d files to link: %w", len(files), err)
		}
	}
	// A file not locked is held by a publish (its rows wait for a later
	// round) or gone (its rows are stale): one read tells which.
	var unlocked []fileKey
	for _, f := range files {
		if _, ok := version[f]; !ok {
			unlocked = append(unlocked, f)
		}
	}
	held := map[fileKey]bool{}
	if len(unlocked) > 0 && distributed {
		var k fileKey
		if err := filesByRepository(ctx, tx, unlocked, `SELECT repository, file_id FROM files WHERE repository = $1 AND file_id = ANY($2)`,
			[]any{&k.repo, &k.id}, func() { held[k] = true }); err != nil {
			return nil, nil, fmt.Errorf("error reading %d files being published: %w", len(unlocked), err)
		}
	} else if len(unlocked) > 0 {
		repos, ids := splitKeys(unlocked)
		rs, err := tx.Query(ctx, `
			SELECT f.repository, f.file_id FROM unnest($1::text[], $2::text[]) AS u(repo, file)
			JOIN files f ON f.repository = u.repo AND f.file_id = u.file`, repos, ids)
		if err != nil {
			return nil, nil, fmt.Errorf("error reading %d files being published: %w", len(unlocked), err)
		}
		var k fileKey
		if _, err := pgx.ForEachRow(rs, []any{&k.repo, &k.id}, func() error { held[k] = true; return nil }); err != nil {
			return nil, nil, fmt.Errorf("error reading %d files being published: %w", len(unlocked), err)
		}
	}
	for _, r := range rows {
		if r.fileVersion != nil {
			k := fileKey{r.repo, r.fileID}
			if held[k] {
				sum.Postponed++
				continue
			}
			if v, locked := version[k]; locked && outbox.SamePublish(v.version, v.xid, *r.fileVersion, r.publishXID) {
				apply = append(apply, r)
			}
		}
		done = append(done, r)
	}
	sum.Rows = len(done)
	return apply, done, nil
}

// filesByRepository runs sql, whose $1 is a repository and $2 file ids,
// for each repository of files (sorted), in one round trip, scanning each
// row into dest and calling fn.
func filesByRepository(ctx context.Context, tx pgx.Tx, files []fileKey, sql string, dest []any, fn func()) error {
	b := &pgx.Batch{}
	for i := 0; i < len(files); {
		j := i
		var ids []string
		for ; j < len(files) && files[j].repo == files[i].repo; j++ {
			ids = append(ids, files[j].id)
		}
		b.Queue(sql, files[i].repo, ids).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, dest, func() error { fn(); return nil })
			return err
		})
		i = j
	}
	return tx.SendBatch(ctx, b).Close()
}

// lateral is sql for the round's database: on distributed tables without
// the OFFSET 0 that keeps a LATERAL (or a subquery) apart on plain
// PostgreSQL, which Citus refuses in a LATERAL that references a table
// function's column ("Offset clause is currently unsupported when a lateral
// subquery references a column from a table function"); Citus runs the
// join on the shards, each probing its index.
func lateral(sql string, distributed bool) string {
	if distributed {
		return strings.ReplaceAll(sql, " OFFSET 0)", ")")
	}
	return sql
}

// ownRefs returns the references of the rows to apply, each row's of its
// lane's keys only, one per key, a later row's replacing an earlier one's.
// (Queue puts only those in a lane's row; a row queued before lanes,
// copied to every lane, holds them all.)
func ownRefs(apply []row, sum *Summary) map[refKey]stored {
	own := map[refKey]stored{}
	files := map[fileKey]bool{}
	for _, r := range apply {
		files[fileKey{r.repo, r.fileID}] = true
		for i := range r.srcs {
			if LaneOf(resolver.ReferenceKey(r.names[i])) != r.lane {
				continue
			}
			s := stored{repo: r.repo, src: r.srcs[i], file: r.fileID, name: r.names[i], typ: r.types[i], jobID: r.jobID}
			own[s.key()] = s
		}
	}
	sum.Files, sum.References = len(files), len(own)
	return own
}

// unknownXID stands for a publish whose transaction id is unknown: no round
// saw it.
const unknownXID = math.MaxInt64

// changedKey is a reference key a publish changed in its repository.
type changedKey struct{ repo, key string }

// changedKeys returns the keys the rows changed, sorted, each once, with the
// transaction ids of the publishes that changed them.
func changedKeys(rows []row) (keys []changedKey, xids map[changedKey][]int64) {
	xids = map[changedKey][]int64{}
	for _, r := range rows {
		xid := r.publishXID
		if xid <= 0 {
			xid = unknownXID
		}
		for _, k := range r.changed {
			ck := changedKey{r.repo, k}
			xids[ck] = append(xids[ck], xid)
		}
	}
	return slices.SortedFunc(maps.Keys(xids), func(a, b changedKey) int {
		return cmp.Or(cmp.Compare(a.repo, b.repo), cmp.Compare(a.key, b.key))
	}), xids
}

// laneXID is a publish's transaction id seen from a lane.
type laneXID struct {
	lane int
	xid  int64
}

// unseenBy returns, for each of pairs, the last round holding its lane
// whose snapshot did not see its publish: a lane's rounds run one at a
// time and each one's snapshot is taken after the one before, so every
// round of the lane up to it missed the publish and every later one saw
// it. The rounds from before lanes (lanes NULL) ran one at a time before
// any lane's, so they count as every lane's. A publish no kept round of
// the lane missed gets the round before the lane's oldest kept (a
// reference of a deleted round counts as having missed it); an unknown
// one, every round.
func unseenBy(ctx context.Context, tx pgx.Tx, pairs []laneXID) (map[laneXID]int64, error) {
	out := make(map[laneXID]int64, len(pairs))
	var lns []int32
	var known []string
	for _, p := range pairs {
		if p.xid == unknownXID {
			out[p] = math.MaxInt64
		} else if _, ok := out[p]; !ok {
			out[p] = 0
			lns, known = append(lns, int32(p.lane)), append(known, strconv.FormatInt(p.xid, 10))
		}
	}
	if len(known) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT u.lane, u.xid::bigint, coalesce(
			(SELECT id FROM link_rounds WHERE (u.lane = ANY(lanes) OR lanes IS NULL) AND NOT pg_visible_in_snapshot(u.xid::xid8, snapshot)
			 ORDER BY id DESC LIMIT 1),
			(SELECT min(id) - 1 FROM link_rounds WHERE u.lane = ANY(lanes) OR lanes IS NULL), 0)
		FROM unnest($1::smallint[], $2::text[]) AS u(lane, xid)`, lns, known)
	if err != nil {
		return nil, fmt.Errorf("error finding the rounds that missed %d publishes: %w", len(known), err)
	}
	var p laneXID
	var round int64
	if _, err := pgx.ForEachRow(rows, []any{&p.lane, &p.xid, &round}, func() error { out[p] = round; return nil }); err != nil {
		return nil, fmt.Errorf("error finding the rounds that missed %d publishes: %w", len(known), err)
	}
	return out, nil
}

// dependsChunk is the most keys one read of depends looks up: a GIN scan
// sets up its keys in time quadratic in their number.
const dependsChunk = 1000

// readChanged reads the stored references of held laneSet that look up a
// key one of done changed in its repository and were resolved by a round
// of their lane that missed the publish (unseenBy). They are read by key
// (the changed keys of held laneSet) and, when lane 0 is held (it holds
// every derived reference), through depends (every changed name, which
// lane 0's rows carry); those among own are left out (own replaces them).
// A changed symbol ("sym:…") reaches the other repositories' references by
// that symbol too: they resolve to it when their own repository has none
// (resolver.LookupElsewhere).
func readChanged(ctx context.Context, tx pgx.Tx, held laneSet, done []row, own map[refKey]stored, distributed bool) ([]stored, error) {
	all, xidsOf := changedKeys(done)
	var keys []changedKey
	for _, k := range all {
		if held.holds(k.key) {
			keys = append(keys, k)
		}
	}
	var deps []row
	if held[0] {
		for _, r := range done {
			if r.lane == 0 {
				deps = append(deps, r)
			}
		}
	}
	depKeys, _ := changedKeys(deps)
	if len(keys) == 0 && len(depKeys) == 0 {
		return nil, nil
	}
	var pairs []laneXID
	for _, k := range keys {
		for _, x := range xidsOf[k] {
			pairs = append(pairs, laneXID{LaneOf(k.key), x})
		}
	}
	for _, k := range depKeys {
		for _, x := range xidsOf[k] {
			pairs = append(pairs, laneXID{0, x})
		}
	}
	unseen, err := unseenBy(ctx, tx, pairs)
	if err != nil {
		return nil, err
	}
	// A key changed by several publishes: the latest round of the lane that
	// missed any.
	bound := func(k changedKey, lane int) (b int64) {
		for _, x := range xidsOf[k] {
			b = max(b, unseen[laneXID{lane, x}])
		}
		return b
	}
	b := &pgx.Batch{}
	seen := map[refKey]bool{}
	var out []stored
	// readIn reads the references of repo (nil: of every repository).
	readIn := func(repo *string) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			var s stored
			_, err := pgx.ForEachRow(rows, []any{&s.repo, &s.src, &s.file, &s.name, &s.typ, &s.target, &s.targetRepo}, func() error {
				if repo != nil && s.repo != *repo || !held.holds(resolver.ReferenceKey(s.name)) {
					return nil
				}
				k := s.key()
				if _, mine := own[k]; !mine && !seen[k] {
					seen[k] = true
					out = append(out, s)
				}
				return nil
			})
			return err
		}
	}
	read := readIn(nil)
	repos, names, bounds := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	var symbols []string
	var symbolBounds []int64
	for i, k := range keys {
		repos[i], names[i], bounds[i] = k.repo, k.key, bound(k, LaneOf(k.key))
		if strings.HasPrefix(k.key, resolver.SymbolPrefix) {
			symbols, symbolBounds = append(symbols, k.key), append(symbolBounds, bounds[i])
		}
	}
	if len(keys) > 0 {
		b.Queue(lateral(`
		SELECT r.repository, r.source_poi_id, r.source_file_id, r.name, r.type, r.target_poi_id, r.target_repository
		FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(repo, key, bound)
		CROSS JOIN LATERAL (SELECT * FROM poi_references r
		                    WHERE r.repository = u.repo AND r.key = u.key AND r.resolved_round <= u.bound OFFSET 0) r`, distributed),
			repos, names, bounds).Query(read)
	}
	if len(symbols) > 0 {
		// Every repository's references by a changed symbol (the read above
		// repeats for the publish's own, which read skips).
		b.Queue(lateral(`
			SELECT r.repository, r.source_poi_id, r.source_file_id, r.name, r.type, r.target_poi_id, r.target_repository
			FROM unnest($1::text[], $2::bigint[]) AS u(key, bound)
			CROSS JOIN LATERAL (SELECT * FROM poi_references r
			                    WHERE r.key = u.key AND r.key LIKE 'sym:%' AND r.resolved_round <= u.bound OFFSET 0) r`, distributed),
			symbols, symbolBounds).Query(read)
	}
	// Derived references, all in lane 0 (LaneOf): one statement per
	// dependsChunk keys of a repository, each bounded by its latest round
	// of lane 0. The repository is not a condition of the statement: the
	// planner would scan the primary key's entries of the whole repository
	// beside the GIN index (a BitmapAnd); the rows of other repositories
	// are left out as they are read.
	for i := 0; i < len(depKeys); {
		j, hi := i+1, bound(depKeys[i], 0)
		for j < len(depKeys) && j-i < dependsChunk && depKeys[j].repo == depKeys[i].repo {
			hi = max(hi, bound(depKeys[j], 0))
			j++
		}
		chunk := make([]string, 0, j-i)
		for _, k := range depKeys[i:j] {
			chunk = append(chunk, k.key)
		}
		b.Queue(`SELECT repository, source_poi_id, source_file_id, name, type, target_poi_id, target_repository FROM poi_references
			WHERE depends && $1::text[] AND depends IS NOT NULL AND resolved_round <= $2`,
			chunk, hi).Query(readIn(&depKeys[i].repo))
		i = j
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
	tgtRepo      string
	own          bool
}

// resolve looks every reference up among cands.
func resolve(own map[refKey]stored, others []stored, cands candidates, sum *Summary) []resolution {
	out := make([]resolution, 0, len(own)+len(others))
	add := func(s stored, isOwn bool) {
		rs := resolution{stored: s, own: isOwn}
		refCands := cands.of(s.repo, s.ref())
		target, outcome := resolver.Lookup(s.src, s.file, s.ref(), refCands)
		rs.tgtRepo = s.repo
		if outcome == resolver.Unknown {
			elsewhere := cands.elsewhere(s.repo, s.ref())
			var i int
			if i, outcome = resolver.LookupElsewhere(s.ref(), elsewhere.cands); outcome == resolver.Resolved {
				target, refCands, rs.tgtRepo = elsewhere.cands[i].POIID, elsewhere.cands[i:i+1], elsewhere.repos[i]
			}
		}
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
		return cmp.Or(cmp.Compare(a.repo, b.repo), cmp.Compare(a.src, b.src), cmp.Compare(a.typ, b.typ), cmp.Compare(a.name, b.name))
	})
	for _, k := range keys {
		add(own[k], true)
	}
	for _, s := range others {
		add(s, false)
	}
	return out
}
