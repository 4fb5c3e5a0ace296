package worker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// store is the resolve worker's SQL, run inside the batch transaction.
type store struct{ tx pgx.Tx }

// fileVersion returns the file's current version and takes a share lock on
// its row, so a re-publish of the file waits for this batch to commit.
func (s store) fileVersion(ctx context.Context, fileID string) (int64, bool, error) {
	var v int64
	err := s.tx.QueryRow(ctx, `SELECT version FROM files WHERE file_id = $1 FOR SHARE`, fileID).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("error reading version of file %q: %w", fileID, err)
	}
	return v, true, nil
}

// upsertSymbols puts resolved POIs into the symbol table (for reprocessed
// POIs that were invalid when first published).
func (s store) upsertSymbols(ctx context.Context, fileID string, ok []poiResult) error {
	syms := make([]resolver.POI, len(ok))
	for i, r := range ok {
		syms[i] = r.poi
	}
	return outbox.UpsertSymbolsTx(ctx, s.tx, fileID, syms)
}

// linkResult counts what link did.
type linkResult struct {
	written   int64
	unknown   int
	ambiguous int
	// reresolved counts other files' references to changed names resolved
	// again (those resolved before the publish was visible).
	reresolved int
}

// maxNameLocks bounds the advisory locks one batch takes; a batch naming more
// takes the global lock exclusively instead (PostgreSQL's lock table is
// shared and finite: max_locks_per_transaction x max_connections).
const maxNameLocks = 256

// globalLinkLock is the advisory lock every batch holds while linking:
// shared normally, exclusive for a batch that names more than maxNameLocks
// names.
const globalLinkLock int64 = 0x72656c6179 // "relay"

// link stores the batch's references, resolves them, and re-resolves the
// references of other files to the names this publish changed.
//
// Correctness under concurrency: the resolution of a name depends on the
// symbol table (written at publish) and on who refers to it (written here).
// Every batch locks each name it refers to or changed before reading the
// symbol table, and holds the locks until commit. So of two batches touching
// one name, the second sees the first's committed references, and the
// publish that changed the symbol table committed before its own batch
// started: the final relationships do not depend on order or concurrency.
//
// A reference stored with a resolved_xmin above publishXID was resolved
// under a snapshot that already saw that publish (every transaction below a
// snapshot's xmin had ended), so its edges are already right and the
// re-resolution leaves it alone. On a first publish of a corpus, where
// referrers mostly run after the publishes they depend on, that is nearly
// every reference: each edge is computed once, not twice.
//
// The statements go in three pipelined round trips (pgx.Batch): store,
// lock and look up; write the batch's edges and load the references to
// re-resolve; rewrite those.
func (s store) link(ctx context.Context, jobID int64, fileID string, ok []poiResult, changed []string, publishXID int64) (linkResult, error) {
	var res linkResult
	var srcIDs, refNames, refTypes []string
	// nameSet maps each name to whether this batch changed it (exclusive
	// lock) or only refers to it (shared lock).
	nameSet := map[string]bool{}
	for _, r := range ok {
		for _, ref := range r.refs {
			srcIDs = append(srcIDs, r.poi.ID)
			refNames = append(refNames, ref.Name)
			refTypes = append(refTypes, string(ref.Type))
			if _, seen := nameSet[ref.Name]; !seen {
				nameSet[ref.Name] = false
			}
		}
	}
	for _, n := range changed {
		nameSet[n] = true
	}
	if len(nameSet) == 0 {
		return res, nil
	}
	names := make([]string, 0, len(nameSet))
	for n := range nameSet {
		names = append(names, n)
	}
	slices.Sort(names)

	// Round trip 1: store the references (stamped with the snapshot's xmin
	// before the symbol table is read), take the name locks, read the
	// candidates.
	b := &pgx.Batch{}
	if len(srcIDs) > 0 {
		b.Queue(`
			INSERT INTO poi_references (source_poi_id, source_file_id, name, type, resolved_xmin)
			SELECT s, $1, n, t, pg_snapshot_xmin(pg_current_snapshot())
			FROM unnest($2::text[], $3::text[], $4::text[]) AS u(s, n, t)
			ON CONFLICT DO NOTHING`, fileID, srcIDs, refNames, refTypes)
	}
	queueLocks(b, nameSet)
	var cands map[string][]resolver.Candidate
	b.Queue(`SELECT poi_id, file_id, name, type FROM pois WHERE name = ANY($1) AND type <> $2`,
		names, resolver.TypeImport).Query(func(rows pgx.Rows) (err error) {
		cands, err = scanCandidates(rows, len(names))
		return err
	})
	if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
		return res, fmt.Errorf("error storing references, locking and looking up %d names: %w", len(names), err)
	}

	// The batch's own references.
	var own edges
	for _, r := range ok {
		for _, ref := range r.refs {
			target, outcome := resolver.Lookup(r.poi.ID, fileID, ref, cands[ref.Name])
			switch outcome {
			case resolver.Resolved:
				own.add(r.poi.ID, target, ref, fileID, fileOf(cands[ref.Name], target))
			case resolver.Unknown:
				res.unknown++
			case resolver.Ambiguous:
				res.ambiguous++
			}
		}
	}

	// Round trip 2: write them, and load other files' references to the
	// changed names that may have been resolved without this publish.
	b = &pgx.Batch{}
	queueInsertEdges(b, jobID, own, &res.written)
	var stale staleRefs
	if len(changed) > 0 {
		queueReresolve(b, fileID, changed, publishXID, cands, &stale)
	}
	if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
		return res, fmt.Errorf("error writing relationships and loading references to %d changed names: %w", len(changed), err)
	}
	res.reresolved = len(stale.srcs)
	if len(stale.srcs) == 0 {
		return res, nil
	}

	// Round trip 3: rewrite the edges of those references. What a reference
	// pointed at before goes, unless it is still right (a reference resolves
	// to at most one target); then what is right now is inserted.
	b = &pgx.Batch{}
	b.Queue(`
		DELETE FROM relationships
		WHERE ctid = ANY(ARRAY(
			SELECT r.ctid FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(src, name, type, tgt)
			CROSS JOIN LATERAL (
				SELECT ctid FROM relationships r
				WHERE r.source_poi_id = u.src AND r.name = u.name AND r.type = u.type
				  AND r.target_poi_id IS DISTINCT FROM u.tgt) r))`,
		stale.srcs, stale.names, stale.types, stale.targets)
	queueInsertEdges(b, jobID, stale.edges, &res.written)
	if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
		return res, fmt.Errorf("error re-resolving %d references to changed names: %w", len(stale.srcs), err)
	}
	return res, nil
}

// queueLocks queues the link locks for names: exclusive for the names the
// batch changed (true), shared for those it only refers to (false). Only a
// batch that changes a name must be serialized with the batches that refer
// to it (see link); batches that merely refer to the same name, such as
// every file calling Errorf, read the symbol table and write edges from
// their own POIs only, so they proceed together. Locks are taken in key
// order, whatever their mode, so batches cannot deadlock on each other; the
// global lock comes first, in its own statement.
func queueLocks(b *pgx.Batch, names map[string]bool) {
	if len(names) > maxNameLocks {
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, globalLinkLock)
		return
	}
	exclusive := make(map[int64]bool, len(names))
	for n, x := range names {
		h := fnv.New64a()
		_, _ = h.Write([]byte(n))
		k := int64(h.Sum64())
		exclusive[k] = exclusive[k] || x
	}
	keys := make([]int64, 0, len(exclusive))
	for k := range exclusive {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	modes := make([]bool, len(keys))
	for i, k := range keys {
		modes[i] = exclusive[k]
	}
	b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, globalLinkLock)
	// unnest yields the keys in array order, so locks are taken sorted.
	b.Queue(`
		SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END)
		FROM unnest($1::bigint[], $2::bool[]) AS u(k, x)`, keys, modes)
}

// scanCandidates reads symbols by name. Import POIs are left out by the
// query: no relationship type accepts an import as its target
// (resolver.Accepts), and in real code they are the most repeated names of
// all (every file importing fmt has an import POI named fmt).
func scanCandidates(rows pgx.Rows, names int) (map[string][]resolver.Candidate, error) {
	out := make(map[string][]resolver.Candidate, names)
	for rows.Next() {
		var c resolver.Candidate
		if err := rows.Scan(&c.POIID, &c.FileID, &c.Name, &c.Type); err != nil {
			return nil, fmt.Errorf("error reading symbols: %w", err)
		}
		out[c.Name] = append(out[c.Name], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading symbols: %w", err)
	}
	return out, nil
}

// staleRefs are other files' references to changed names, each with the
// target it resolves to now (nil for none), and the edges that follow.
type staleRefs struct {
	srcs, names, types []string
	targets            []*string
	edges              edges
}

// queueReresolve queues the re-resolution of other files' references to the
// changed names; the references it loads go to stale.
// Its statements drive index lookups from the (small) arrays with LATERAL
// joins: as plain joins, PostgreSQL's generic plans for them turned into
// sequential scans of poi_references and relationships once those grew,
// and every batch holding name locks waited on them.
// Where three or more symbols of a name can take a relationship type, every
// cross-file reference of that type is ambiguous whatever its file, so its
// cross-file edges are simply removed; otherwise the references are loaded
// and looked up one by one with the same rule as the batch's own.
func queueReresolve(b *pgx.Batch, fileID string, changed []string, publishXID int64, cands map[string][]resolver.Candidate, stale *staleRefs) {
	var ambNames, ambTypes, fewNames, fewTypes []string
	for _, name := range changed {
		for _, rt := range []resolver.RelType{resolver.Calls, resolver.Extends, resolver.Implements, resolver.Imports} {
			k := 0
			for _, c := range cands[name] {
				if resolver.Accepts(rt, c.Type) {
					k++
				}
			}
			if k >= 3 {
				ambNames, ambTypes = append(ambNames, name), append(ambTypes, string(rt))
			} else {
				fewNames, fewTypes = append(fewNames, name), append(fewTypes, string(rt))
			}
		}
	}
	if len(ambNames) > 0 {
		b.Queue(`
			DELETE FROM relationships
			WHERE ctid = ANY(ARRAY(
				SELECT r.ctid FROM unnest($1::text[], $2::text[]) AS u(name, type)
				CROSS JOIN LATERAL (
					SELECT ctid FROM relationships r
					WHERE r.name = u.name AND r.type = u.type
					  AND r.source_file_id <> r.target_file_id AND r.source_file_id <> $3) r))`,
			ambNames, ambTypes, fileID)
	}
	if len(fewNames) == 0 {
		return
	}
	b.Queue(`
		SELECT r.source_poi_id, r.source_file_id, r.name, r.type
		FROM unnest($1::text[], $2::text[]) AS u(name, type)
		CROSS JOIN LATERAL (
			SELECT source_poi_id, source_file_id, name, type FROM poi_references r
			WHERE r.name = u.name AND r.type = u.type AND r.source_file_id <> $3
			  AND ($4::bigint = 0 OR r.resolved_xmin <= $4::bigint::text::xid8)) r`,
		fewNames, fewTypes, fileID, publishXID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var src, srcFile, name, typ string
			if err := rows.Scan(&src, &srcFile, &name, &typ); err != nil {
				return fmt.Errorf("error reading references: %w", err)
			}
			stale.srcs, stale.names, stale.types = append(stale.srcs, src), append(stale.names, name), append(stale.types, typ)
			ref := resolver.Reference{Name: name, Type: resolver.RelType(typ)}
			if target, outcome := resolver.Lookup(src, srcFile, ref, cands[name]); outcome == resolver.Resolved {
				stale.edges.add(src, target, ref, srcFile, fileOf(cands[name], target))
				stale.targets = append(stale.targets, &target)
			} else {
				stale.targets = append(stale.targets, nil)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("error reading references: %w", err)
		}
		return nil
	})
}

// edges accumulates relationships as parallel arrays for unnest.
type edges struct {
	src, tgt, typ, name, srcFile, tgtFile []string
}

func (e *edges) add(src, tgt string, ref resolver.Reference, srcFile, tgtFile string) {
	e.src, e.tgt = append(e.src, src), append(e.tgt, tgt)
	e.typ, e.name = append(e.typ, string(ref.Type)), append(e.name, ref.Name)
	e.srcFile, e.tgtFile = append(e.srcFile, srcFile), append(e.tgtFile, tgtFile)
}

// queueInsertEdges queues the insert of e, adding the rows written to n.
func queueInsertEdges(b *pgx.Batch, jobID int64, e edges, n *int64) {
	if len(e.src) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO relationships (source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id)
		SELECT * , $7::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
		ON CONFLICT DO NOTHING`, e.src, e.tgt, e.typ, e.name, e.srcFile, e.tgtFile, jobID).Exec(func(ct pgconn.CommandTag) error {
		*n += ct.RowsAffected()
		return nil
	})
}

func fileOf(cands []resolver.Candidate, poiID string) string {
	for _, c := range cands {
		if c.POIID == poiID {
			return c.FileID
		}
	}
	return ""
}
