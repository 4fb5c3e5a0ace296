package resolvefile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// store is the resolve worker's SQL, run inside the batch transaction.
type store struct{ tx pgx.Tx }

// fileVersion returns the file's current version and takes a share lock on
// its row, so a re-publish of the file waits for this batch to commit. (link
// does the same in its first round trip for the usual batch; a reprocess
// batch writes symbols before it links, so it locks the row first.)
func (s store) fileVersion(ctx context.Context, fileID string) (int64, bool, error) {
	var v int64
	err := s.tx.QueryRow(ctx, fileVersionSQL, fileID).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("error reading version of file %q: %w", fileID, err)
	}
	return v, true, nil
}

const fileVersionSQL = `SELECT version FROM files WHERE file_id = $1 FOR SHARE`

// upsertSymbols puts resolved POIs into the symbol table (for reprocessed
// POIs that were invalid when first published).
func (s store) upsertSymbols(ctx context.Context, fileID string, ok []poiResult) error {
	syms := make([]resolver.POI, len(ok))
	for i, r := range ok {
		syms[i] = r.poi
	}
	return outbox.UpsertSymbolsTx(ctx, s.tx, fileID, syms)
}

// linkInput is what link writes: one batch's outcome.
type linkInput struct {
	jobID  int64
	fileID string
	// version, when not nil, is the file version the batch was published
	// as: link share-locks the file's row, and when the file is at another
	// version (a newer publish replaced these POIs, and its job resolves
	// them) it writes neither ok's references nor failures, only the
	// re-resolution of changed.
	version *int64
	// ok are the batch's resolved POIs, failures its failed ones.
	ok       []poiResult
	failures []failed.POI
	// changed are the names the publish changed, publishXID its xid.
	changed    []string
	publishXID int64
}

// linkResult counts what link did.
type linkResult struct {
	// superseded: the file is at another version than linkInput.version.
	superseded bool
	// written counts the relationships (resolved references) written.
	written   int64
	unknown   int
	ambiguous int
	// reresolved counts other files' references to changed names resolved
	// again (those resolved before the publish was visible).
	reresolved int
}

// maxNameLocks bounds the name locks one batch takes; a batch that changed
// more names takes the global lock exclusively instead (PostgreSQL's lock
// table is shared and finite: max_locks_per_transaction x max_connections).
const maxNameLocks = 256

// The advisory lock keys link takes, in three spaces that cannot meet:
// name locks use the two-int4 form (a name's 64-bit hash split in halves),
// which PostgreSQL keeps apart from every one-bigint key; the global lock
// is one bigint below stampLockBase; a stamp lock is stampLockBase plus the
// stamp (an xid8, below 2^62 for any epoch PostgreSQL reaches).
const (
	// globalLinkLock is held by every batch while it links: shared
	// normally, exclusive by a batch that changed more than maxNameLocks
	// names.
	globalLinkLock int64 = 0x72656c6179 // "relay"
	// stampLockBase starts the key space of stamp locks (see queueLocks).
	stampLockBase int64 = 1 << 62
)

// link resolves the batch's references and stores them, each with its
// target (poi_references: one row per reference; the relationships view
// shows the resolved ones), and re-resolves other files' references to the
// names this publish changed. It runs last in the batch's transaction: the
// locks it takes are held until commit.
//
// Contract: once every publish's job has committed, each stored reference
// has the target resolver.Lookup gives it against the final symbol table,
// whatever the order of the publishes and jobs and however many run at
// once. Each reference is stamped with resolved_xmin, the xmin of a
// snapshot taken before the batch reads the symbol table; queueLocks and
// queueStaleRefs rely on that stamp. A batch whose file is no longer at
// in.version (a newer publish replaced its POIs) writes neither its
// references nor its failures, only the re-resolution of in.changed.
//
// Locking order: the file's row (FOR SHARE), the global lock and, for a
// referrer that changed nothing, its stamp lock (one statement); for a
// changer, the barrier, then its stamp lock and the name locks
// (queueLocks); then the rows of other files whose references are
// rewritten (FOR SHARE, in file_id order), and last the poi_references rows
// written (in key order); nothing a publisher waits on is written before.
// Every lock is transaction-scoped: the protocol keeps no state in the
// session, so it works through a transaction-pooling connection pooler.
//
// The batch's own references are upserted: a reprocess job may have stored
// some of them since the publish, and the batch's resolution replaces
// them.
func (s store) link(ctx context.Context, in linkInput) (linkResult, error) {
	var res linkResult
	jobID, fileID, changed, publishXID := in.jobID, in.fileID, in.changed, in.publishXID
	// referred are the names the batch's references look up
	// (resolver.LookupNames): their candidates are read in the first round
	// trip. The candidates of a
	// changed name no reference of the batch refers to are needed only to
	// re-resolve other files' references to it, so they are read only when
	// there are some (on a first publish of a corpus, rarely).
	nrefs := 0
	referredSet := map[string]bool{}
	for _, r := range in.ok {
		for _, ref := range r.refs {
			nrefs++
			for _, n := range resolver.LookupNames(ref) {
				referredSet[n] = true
			}
		}
	}
	referred := make([]string, 0, len(referredSet))
	for n := range referredSet {
		referred = append(referred, n)
	}
	slices.Sort(referred)

	// Round trip 1: stamp the references with the xmin of a snapshot taken
	// before the symbol table is read, lock the file's row and read its
	// version, take the locks, read the candidates and the references to
	// the changed names that may have been resolved without this publish.
	b := &pgx.Batch{}
	var (
		current      *int64
		resolvedXmin string
		cands        = map[string][]resolver.Candidate{}
		refs         []storedRef
	)
	switch {
	case len(referred) > 0 || len(changed) > 0:
		// One statement: its snapshot gives the stamp, then it locks the
		// file's row and the global lock and, for a referrer that changed
		// nothing, its stamp lock (a changer takes its own after its
		// barrier, referrer or not: see queueLocks).
		exclusive := len(changed) > maxNameLocks
		sql := `SELECT (` + fileVersionSQL + `), pg_snapshot_xmin(pg_current_snapshot())::text, `
		args := []any{fileID, globalLinkLock}
		if exclusive {
			sql += `pg_advisory_xact_lock($2)`
		} else {
			sql += `pg_advisory_xact_lock_shared($2)`
		}
		referrer := len(referred) > 0 && !exclusive
		if referrer && len(changed) == 0 {
			sql += `, ` + stampLockSQL
			args = append(args, stampLockBase)
		}
		b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
			dest := []any{&current, &resolvedXmin, nil, nil}
			return row.Scan(dest[:len(args)+1]...)
		})
		if !exclusive && len(changed) > 0 {
			queueLocks(b, changed, publishXID)
		}
		if len(referred) > 0 {
			queueCandidates(b, referred, cands)
		}
		if len(changed) > 0 {
			queueStaleRefs(b, fileID, changed, publishXID, &refs)
		}
	case in.version != nil:
		b.Queue(`SELECT (`+fileVersionSQL+`)`, fileID).QueryRow(func(row pgx.Row) error { return row.Scan(&current) })
	}
	if b.Len() > 0 {
		if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
			return res, fmt.Errorf("error locking file %q and looking up %d names: %w", fileID, len(referred), err)
		}
	}
	ok, failures := in.ok, in.failures
	if in.version != nil && (current == nil || *current != *in.version) {
		res.superseded = true
		ok, failures = nil, nil
	}

	// Round trip 2, when there is anything to re-resolve: lock the referring
	// files, then load their references again (a publish may have removed
	// them meanwhile), and read the candidates of the changed names and of
	// the names the references look up (resolver.LookupNames) not read yet.
	// A file that appears only in the second reading is locked, and a name
	// only the second reading looks up is read, in another round.
	locked := map[string]bool{}
	unreadOf := func(names []string, unread []string) []string {
		for _, n := range names {
			if _, read := cands[n]; !read {
				if _, isReferred := slices.BinarySearch(referred, n); isReferred {
					continue
				}
				unread = append(unread, n)
				cands[n] = nil // read once
			}
		}
		return unread
	}
	for round := 0; ; round++ {
		var files []string
		for _, r := range refs {
			if !locked[r.file] {
				locked[r.file] = true
				files = append(files, r.file)
			}
		}
		var unread []string
		if len(files) > 0 || round > 0 {
			if round == 0 {
				unread = unreadOf(changed, unread)
			}
			for _, r := range refs {
				unread = unreadOf(r.lookupNames(), unread)
			}
		}
		if len(files) == 0 && len(unread) == 0 {
			break
		}
		b = &pgx.Batch{}
		if len(files) > 0 {
			slices.Sort(files)
			b.Queue(`SELECT file_id FROM files WHERE file_id = ANY($1) ORDER BY file_id FOR SHARE`, files)
			refs = refs[:0]
			queueStaleRefs(b, fileID, changed, publishXID, &refs)
		}
		if len(unread) > 0 {
			queueCandidates(b, unread, cands)
		}
		if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
			return res, fmt.Errorf("error locking %d files referring to changed names: %w", len(files), err)
		}
	}

	// The batch's own references, each with its target or none.
	own := newReferences(nrefs)
	seen := make(map[refKey]bool, nrefs)
	for _, r := range ok {
		for _, ref := range r.refs {
			k := refKey{r.poi.ID, string(ref.Type), ref.Name}
			if seen[k] {
				continue // one row per reference: ON CONFLICT cannot take a key twice
			}
			seen[k] = true
			refCands := candidatesOf(cands, ref)
			target, outcome := resolver.Lookup(r.poi.ID, fileID, ref, refCands)
			switch outcome {
			case resolver.Resolved:
				own.add(r.poi.ID, ref, &target, fileOf(refCands, target))
				res.written++
			case resolver.Unknown:
				own.add(r.poi.ID, ref, nil, "")
				res.unknown++
			case resolver.Ambiguous:
				own.add(r.poi.ID, ref, nil, "")
				res.ambiguous++
			}
		}
	}

	// Last round trip: every write.
	b = &pgx.Batch{}
	if err := failed.QueueInsert(b, failures); err != nil {
		return res, err
	}
	if len(changed) > 0 {
		res.reresolved = queueReresolve(b, jobID, fileID, resolvedXmin, changed, cands, refs, &res.written)
	}
	queueStoreReferences(b, jobID, fileID, resolvedXmin, own)
	if b.Len() == 0 {
		return res, nil
	}
	if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
		return res, fmt.Errorf("error writing the batch's %d failed POIs, %d references and %d re-resolutions: %w",
			len(failures), len(own.src), res.reresolved, err)
	}
	return res, nil
}

// stampLockSQL takes a batch's stamp lock, shared: the key is $3
// (stampLockBase) plus the xmin of the statement's snapshot, a stamp no
// greater than that of any snapshot the batch reads the symbol table with
// afterwards.
const stampLockSQL = `pg_advisory_xact_lock_shared($3::bigint + pg_snapshot_xmin(pg_current_snapshot())::text::bigint)`

// queueLocks queues a changer's locks: the barrier, then its stamp lock,
// then the changed names' locks.
//
// The barrier: a changer must see the committed references of every batch
// that read the symbol table without its publish. A referrer holds its
// stamp lock (stampLockBase + stamp, shared) from before it reads the
// symbol table until it commits. A referrer whose stamp is above the
// publish's transaction id began reading after the publish ended, and so
// does one whose stamp lock is granted only after the changer has looked
// (the changer's job runs after its publish committed). So the changer
// finds in pg_locks the granted stamp locks whose stamp is at or below the
// publish (every one when the publish is unknown), takes each exclusively
// inside a savepoint, which waits for their holders to end, and rolls the
// savepoint back, which releases them at once.
//
// A changer holds its stamp lock, from before it reads the symbol table
// until it commits, whether it refers to names or not: the derived
// references it re-resolves (resolver.IsDerived: found through the names
// they look up, resolver.LookupNames) are left stamped at or below its
// stamp, and a changer of one of their other names must wait for it in its
// barrier, as for a referrer. Its key is the xmin of the snapshot of the
// statement that takes it, after the barrier: at least the changer's stamp
// (taken earlier), and no greater than any publish the changer's reading
// misses, which is what the barrier needs of a key.
//
// Changers of one name must not interleave (each reads the symbol table and
// rewrites the same references), so a changer holds, until commit, an
// exclusive lock on each name it changed.
//
// Deadlock freedom among advisory locks: a changer takes no stamp lock and
// no name lock before its barrier, so a changer waiting in its barrier
// holds none another changer's barrier waits for. Name locks are taken in
// ascending key order, and only after the barrier, so a chain of waits on
// them climbs in key order and cannot close. A batch that changed more
// than maxNameLocks names takes the global lock exclusively instead, which
// waits out every running batch and keeps new ones out.
//
// Row locks on files can close a cycle through them: a changer holds its
// own file's row (FOR SHARE) while it waits in its barrier or for a name
// lock; the holder of that lock waits to share-lock the row of a referring
// file; a publish of several files (which locks their rows FOR UPDATE in
// file_id order) holds that row and waits for the changer's file's row.
// PostgreSQL's deadlock detector then aborts one of the transactions
// (SQLSTATE 40P01) and the others go on. A batch so aborted rolls back
// whole and River retries its job; a publisher so aborted gets the error
// from PublishTx or PublishManyTx with nothing of the publish written (its
// savepoint is rolled back) and its own transaction still usable, and may
// publish again.
func queueLocks(b *pgx.Batch, changed []string, publishXID int64) {
	keys := make(map[int64]bool, len(changed))
	for _, n := range changed {
		keys[nameKey(n)] = true
	}
	changedKeys := sortedKeys(keys)
	horizon := int64(math.MaxInt64) // unknown publish: every stamp
	if publishXID > 0 {
		horizon = stampLockBase + publishXID
	}
	b.Queue(`SAVEPOINT relay_barrier`)
	b.Queue(`
		SELECT count(pg_advisory_xact_lock(s.key)) FROM (
			SELECT DISTINCT (l.classid::bigint << 32) | l.objid::bigint AS key FROM pg_locks l
			WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.mode = 'ShareLock'
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND (l.classid::bigint << 32) | l.objid::bigint BETWEEN $1 AND $2
			ORDER BY key) s`,
		stampLockBase, horizon)
	b.Queue(`ROLLBACK TO SAVEPOINT relay_barrier`)
	b.Queue(`RELEASE SAVEPOINT relay_barrier`)

	hi, lo := make([]int32, len(changedKeys)), make([]int32, len(changedKeys))
	for i, k := range changedKeys {
		hi[i], lo[i] = int32(k>>32), int32(k)
	}
	// pg_advisory_xact_lock's two-key form: the 64-bit key as two int4
	// halves; unnest yields them in order.
	const names = `(SELECT count(pg_advisory_xact_lock(h, l)) FROM unnest($1::int[], $2::int[]) AS u(h, l))`
	b.Queue(`SELECT `+stampLockSQL+`, `+names, hi, lo, stampLockBase)
}

// nameKey is a name's advisory lock key.
func nameKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return int64(h.Sum64())
}

func sortedKeys(set map[int64]bool) []int64 {
	keys := make([]int64, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// queueCandidates queues the read of the symbols named names into out.
// Import POIs are left out by the query: no relationship type accepts an
// import as its target (resolver.Accepts), and in real code they are the
// most repeated names of all (every file importing fmt has an import POI
// named fmt). The names of supplied references are read by symbol
// ("sym:<symbol>", through pois' symbol index) and by id ("id:<id>"), each
// candidate named after the reference name it was read for.
func queueCandidates(b *pgx.Batch, names []string, out map[string][]resolver.Candidate) {
	plain, symbols, ids := []string{}, []string{}, []string{}
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, resolver.SymbolPrefix):
			symbols = append(symbols, strings.TrimPrefix(n, resolver.SymbolPrefix))
		case strings.HasPrefix(n, resolver.IDPrefix):
			ids = append(ids, strings.TrimPrefix(n, resolver.IDPrefix))
		default:
			plain = append(plain, n)
		}
	}
	read := func(rows pgx.Rows) error {
		for rows.Next() {
			var c resolver.Candidate
			if err := rows.Scan(&c.POIID, &c.FileID, &c.Name, &c.Type, &c.Receiver, &c.Result, &c.Fields); err != nil {
				return fmt.Errorf("error reading symbols: %w", err)
			}
			out[c.Name] = append(out[c.Name], c)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("error reading symbols: %w", err)
		}
		return nil
	}
	if len(plain) > 0 {
		b.Queue(`SELECT poi_id, file_id, name, type, receiver, result, fields FROM pois WHERE name = ANY($1) AND type <> $2`,
			plain, resolver.TypeImport).Query(read)
	}
	if len(symbols) > 0 {
		b.Queue(`SELECT poi_id, file_id, $3 || symbol, type, receiver, result, fields FROM pois WHERE symbol = ANY($1) AND type <> $2`,
			symbols, resolver.TypeImport, resolver.SymbolPrefix).Query(read)
	}
	if len(ids) > 0 {
		b.Queue(`SELECT poi_id, file_id, $3 || poi_id, type, receiver, result, fields FROM pois WHERE poi_id = ANY($1) AND type <> $2`,
			ids, resolver.TypeImport, resolver.IDPrefix).Query(read)
	}
}

// storedRef is another file's reference to a changed name.
type storedRef struct {
	src, file, name, typ string
}

// ref is the stored reference.
func (r storedRef) ref() resolver.Reference {
	return resolver.Reference{Name: r.name, Type: resolver.RelType(r.typ)}
}

// lookupNames are the names whose candidates the reference's lookup reads.
func (r storedRef) lookupNames() []string { return resolver.LookupNames(r.ref()) }

// candidatesOf returns the candidates of the names ref looks up
// (resolver.LookupNames): cands[name] for the usual reference of one name.
func candidatesOf(cands map[string][]resolver.Candidate, ref resolver.Reference) []resolver.Candidate {
	names := resolver.LookupNames(ref)
	if len(names) == 1 {
		return cands[names[0]]
	}
	var out []resolver.Candidate
	for _, n := range names {
		out = append(out, cands[n]...)
	}
	return out
}

// queueStaleRefs queues the load of other files' references to the changed
// names that may have been resolved without this publish: those whose key
// (resolver.ReferenceKey) is a changed name and whose stamp is at or below
// the publish's transaction id (all of them when it is unknown, zero). One
// scan of the index on (key, resolved_xmin) reads every changed name's
// range and ends each at the publish, so the references resolved after it
// are not read. Derived references that look a changed name up (their
// depends, resolver.LookupNames) are read through the partial index on
// depends.
func queueStaleRefs(b *pgx.Batch, fileID string, changed []string, publishXID int64, out *[]storedRef) {
	horizon := uint64(math.MaxUint64) // unknown publish: every reference
	if publishXID > 0 {
		horizon = uint64(publishXID)
	}
	read := func(rows pgx.Rows) error {
		for rows.Next() {
			var r storedRef
			if err := rows.Scan(&r.src, &r.file, &r.name, &r.typ); err != nil {
				return fmt.Errorf("error reading references: %w", err)
			}
			*out = append(*out, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("error reading references: %w", err)
		}
		return nil
	}
	b.Queue(`
		SELECT source_poi_id, source_file_id, name, type FROM poi_references
		WHERE key = ANY($1) AND resolved_xmin <= $3::text::xid8 AND source_file_id <> $2`,
		changed, fileID, strconv.FormatUint(horizon, 10)).Query(read)
	// One statement per dependsChunk names: a GIN scan sets up its keys in
	// time quadratic in their number, and a file's first publish may change
	// hundreds of thousands of names. A reference found in two chunks is
	// read twice; queueReresolve resolves it once.
	for chunk := range slices.Chunk(changed, dependsChunk) {
		b.Queue(`
			SELECT source_poi_id, source_file_id, name, type FROM poi_references r
			WHERE r.depends && $1::text[] AND r.depends IS NOT NULL
			  AND r.resolved_xmin <= $3::text::xid8 AND r.source_file_id <> $2`,
			chunk, fileID, strconv.FormatUint(horizon, 10)).Query(read)
	}
}

// dependsChunk is the most changed names one read of depends looks up.
const dependsChunk = 1000

// queueReresolve queues the rewrite of other files' references to the
// changed names and returns how many references it re-resolves; it adds the
// relationships it writes to written.
// Where three or more symbols of a name can take a relationship type, every
// cross-file reference of that type is ambiguous whatever its file, under
// the name-only rule (resolver.ByNameOnly), so the cross-file targets of
// such references are simply cleared; the other references are looked up
// one by one with the same rule as the batch's own, and a reference whose
// target changed gets its new one (or none). A derived reference
// (resolver.IsDerived: found through the names it looks up) is left stamped
// at or below resolvedXmin: the changers of its other names are not
// serialized with this one by a name lock, and one whose publish this
// reading missed must find it again (see queueLocks). So it is written,
// stamped with resolvedXmin, when its target changed or its stamp is above
// resolvedXmin; one whose target is unchanged and whose stamp is not above
// resolvedXmin is not written (a lower stamp only makes more changers
// resolve it again). The rows are written in key order, so two changers
// rewriting the same references cannot deadlock.
func queueReresolve(b *pgx.Batch, jobID int64, fileID, resolvedXmin string, changed []string, cands map[string][]resolver.Candidate, refs []storedRef, written *int64) int {
	type nameType struct{ name, typ string }
	ambiguous := map[nameType]bool{}
	var ambNames, ambKeys, ambTypes []string
	for _, name := range changed {
		for _, rt := range []resolver.RelType{resolver.Calls, resolver.Extends, resolver.Implements, resolver.Imports} {
			k := 0
			for _, c := range cands[name] {
				if resolver.Accepts(rt, c.Type) {
					k++
				}
			}
			if k >= 3 {
				ambiguous[nameType{name, string(rt)}] = true
				ambNames, ambTypes = append(ambNames, name), append(ambTypes, string(rt))
				ambKeys = append(ambKeys, resolver.ReferenceKey(name))
			}
		}
	}
	if len(ambNames) > 0 {
		b.Queue(`
			UPDATE poi_references SET target_poi_id = NULL, target_file_id = NULL, job_id = $4, resolved_at = NULL
			WHERE ctid = ANY(ARRAY(
				SELECT r.ctid FROM unnest($1::text[], $2::text[], $5::text[]) AS u(name, type, key)
				CROSS JOIN LATERAL (
					SELECT ctid FROM poi_references r
					WHERE r.key = u.key AND r.name = u.name AND r.type = u.type
					  AND r.target_poi_id IS NOT NULL
					  AND r.source_file_id <> r.target_file_id AND r.source_file_id <> $3
					  AND lower(r.source_file_id) NOT LIKE '%.go' -- see resolver.ByNameOnly
					OFFSET 0) r))`,
			ambNames, ambTypes, fileID, jobID, ambKeys)
	}
	refs = slices.Clone(refs)
	slices.SortFunc(refs, func(a, b storedRef) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.typ, b.typ), cmp.Compare(a.name, b.name))
	})
	// A reference may have been read twice (by its name and through depends).
	refs = slices.CompactFunc(refs, func(a, b storedRef) bool { return a.src == b.src && a.typ == b.typ && a.name == b.name })
	var e references
	for _, r := range refs {
		if ambiguous[nameType{r.name, r.typ}] && resolver.ByNameOnly(r.file) {
			continue
		}
		ref := r.ref()
		refCands := candidatesOf(cands, ref)
		if target, outcome := resolver.Lookup(r.src, r.file, ref, refCands); outcome == resolver.Resolved {
			e.add(r.src, ref, &target, fileOf(refCands, target))
		} else {
			e.add(r.src, ref, nil, "")
		}
	}
	if len(e.src) > 0 {
		b.Queue(`
			UPDATE poi_references r
			SET target_poi_id = u.tgt, target_file_id = nullif(u.tgt_file, ''), job_id = $6,
			    resolved_at = CASE WHEN u.tgt IS NULL THEN NULL ELSE now() END,
			    resolved_xmin = CASE WHEN r.depends IS NULL THEN r.resolved_xmin ELSE $7::xid8 END
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(src, name, type, tgt, tgt_file)
			WHERE r.source_poi_id = u.src AND r.type = u.type AND r.name = u.name
			  AND (r.target_poi_id IS DISTINCT FROM u.tgt OR (r.depends IS NOT NULL AND r.resolved_xmin > $7::xid8))
			RETURNING r.target_poi_id IS NOT NULL`,
			e.src, e.name, e.typ, e.tgt, e.tgtFile, jobID, resolvedXmin).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var resolved bool
				if err := rows.Scan(&resolved); err != nil {
					return fmt.Errorf("error re-resolving references: %w", err)
				}
				if resolved {
					*written++
				}
			}
			return rows.Err()
		})
	}
	return len(e.src)
}

// refKey identifies a reference: its source POI, relationship type and name.
type refKey struct{ src, typ, name string }

// references accumulates references and their targets (nil: unresolved) as
// parallel arrays for unnest.
type references struct {
	src, typ, name []string
	tgt            []*string
	tgtFile        []string
	// depends are the names a derived reference looks up, space-separated
	// (Go names hold no space); "" for any other reference.
	depends []string
}

func newReferences(n int) references {
	return references{src: make([]string, 0, n), typ: make([]string, 0, n), name: make([]string, 0, n),
		tgt: make([]*string, 0, n), tgtFile: make([]string, 0, n), depends: make([]string, 0, n)}
}

func (e *references) add(src string, ref resolver.Reference, tgt *string, tgtFile string) {
	e.src, e.typ, e.name = append(e.src, src), append(e.typ, string(ref.Type)), append(e.name, ref.Name)
	e.tgt, e.tgtFile = append(e.tgt, tgt), append(e.tgtFile, tgtFile)
	var deps string
	if resolver.IsDerived(ref) {
		deps = strings.Join(resolver.LookupNames(ref), " ")
	}
	e.depends = append(e.depends, deps)
}

// queueStoreReferences queues the write of a batch's own references (all
// from fileID), each with its target and, for a derived reference, the
// names it looks up (depends), stamped with resolvedXmin (an xid8 as text:
// see link) and keyed by resolver.ReferenceKey: a reference already stored
// takes the new resolution and stamp
// (its depends follow from its name).
func queueStoreReferences(b *pgx.Batch, jobID int64, fileID, resolvedXmin string, e references) {
	if len(e.src) == 0 {
		return
	}
	sql := `
		INSERT INTO poi_references AS r (source_poi_id, source_file_id, name, key, type, resolved_xmin,
		                                 target_poi_id, target_file_id, job_id, resolved_at, depends)
		SELECT u.src, $2, u.name, u.key, u.type, $7::xid8, u.tgt, nullif(u.tgt_file, ''), $8,
		       CASE WHEN u.tgt IS NULL THEN NULL ELSE now() END,
		       CASE WHEN u.deps = '' THEN NULL ELSE string_to_array(u.deps, ' ') END
		FROM unnest($1::text[], $3::text[], $4::text[], $5::text[], $6::text[], $9::text[], $10::text[])
			AS u(src, name, type, tgt, tgt_file, deps, key)
		ON CONFLICT (source_poi_id, type, name) DO UPDATE
			SET resolved_xmin = excluded.resolved_xmin, target_poi_id = excluded.target_poi_id,
			    target_file_id = excluded.target_file_id, job_id = excluded.job_id, resolved_at = excluded.resolved_at`
	keys := make([]string, len(e.name))
	for i, n := range e.name {
		keys[i] = resolver.ReferenceKey(n)
	}
	b.Queue(sql, e.src, fileID, e.name, e.typ, e.tgt, e.tgtFile, resolvedXmin, jobID, e.depends, keys)
}

func fileOf(cands []resolver.Candidate, poiID string) string {
	for _, c := range cands {
		if c.POIID == poiID {
			return c.FileID
		}
	}
	return ""
}
