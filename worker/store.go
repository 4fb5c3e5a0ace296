package worker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/jackc/pgx/v5"

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
func (s store) link(ctx context.Context, jobID int64, fileID string, ok []poiResult, changed []string) (linkResult, error) {
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

	if len(srcIDs) > 0 {
		if _, err := s.tx.Exec(ctx, `
			INSERT INTO poi_references (source_poi_id, source_file_id, name, type)
			SELECT s, $1, n, t FROM unnest($2::text[], $3::text[], $4::text[]) AS u(s, n, t)
			ON CONFLICT DO NOTHING`, fileID, srcIDs, refNames, refTypes); err != nil {
			return res, fmt.Errorf("error storing references: %w", err)
		}
	}

	names := make([]string, 0, len(nameSet))
	for n := range nameSet {
		names = append(names, n)
	}
	slices.Sort(names)
	if err := s.lockNames(ctx, nameSet); err != nil {
		return res, err
	}

	cands, err := s.candidates(ctx, names)
	if err != nil {
		return res, err
	}

	// The batch's own references.
	var e edges
	for _, r := range ok {
		for _, ref := range r.refs {
			target, outcome := resolver.Lookup(r.poi.ID, fileID, ref, cands[ref.Name])
			switch outcome {
			case resolver.Resolved:
				e.add(r.poi.ID, target, ref, fileID, fileOf(cands[ref.Name], target))
			case resolver.Unknown:
				res.unknown++
			case resolver.Ambiguous:
				res.ambiguous++
			}
		}
	}
	n, err := s.insertEdges(ctx, jobID, e)
	if err != nil {
		return res, err
	}
	res.written += n

	m, err := s.reresolve(ctx, jobID, fileID, changed, cands)
	if err != nil {
		return res, err
	}
	res.written += m
	return res, nil
}

// lockNames takes the link locks for names: exclusive for the names the
// batch changed (true), shared for those it only refers to (false). Only a
// batch that changes a name must be serialized with the batches that refer
// to it (see link); batches that merely refer to the same name, such as
// every file calling Errorf, read the symbol table and write edges from
// their own POIs only, so they proceed together. Locks are taken in key
// order, whatever their mode, so batches cannot deadlock on each other.
func (s store) lockNames(ctx context.Context, names map[string]bool) error {
	if len(names) > maxNameLocks {
		if _, err := s.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, globalLinkLock); err != nil {
			return fmt.Errorf("error taking the global link lock: %w", err)
		}
		return nil
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
	if _, err := s.tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, globalLinkLock); err != nil {
		return fmt.Errorf("error taking the shared link lock: %w", err)
	}
	// unnest yields the keys in array order, so locks are taken sorted.
	if _, err := s.tx.Exec(ctx, `
		SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END)
		FROM unnest($1::bigint[], $2::bool[]) AS u(k, x)`, keys, modes); err != nil {
		return fmt.Errorf("error taking %d name locks: %w", len(keys), err)
	}
	return nil
}

// candidates loads every symbol with one of names, by name. Import POIs
// are left out: no relationship type accepts an import as its target
// (resolver.Accepts), and in real code they are the most repeated names of
// all (every file importing fmt has an import POI named fmt).
func (s store) candidates(ctx context.Context, names []string) (map[string][]resolver.Candidate, error) {
	rows, err := s.tx.Query(ctx, `SELECT poi_id, file_id, name, type FROM pois WHERE name = ANY($1) AND type <> $2`,
		names, resolver.TypeImport)
	if err != nil {
		return nil, fmt.Errorf("error looking up %d names: %w", len(names), err)
	}
	defer rows.Close()
	out := make(map[string][]resolver.Candidate, len(names))
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

// reresolve recomputes the references of other files to the changed names.
// Its statements drive index lookups from the (small) arrays with LATERAL
// joins: as plain joins, PostgreSQL's generic plans for them turned into
// sequential scans of poi_references and relationships once those grew,
// and every batch holding name locks waited on them.
// Where three or more symbols of a name can take a relationship type, every
// cross-file reference of that type is ambiguous whatever its file, so its
// cross-file edges are simply removed; otherwise the references are loaded
// and looked up one by one with the same rule as the batch's own.
func (s store) reresolve(ctx context.Context, jobID int64, fileID string, changed []string, cands map[string][]resolver.Candidate) (int64, error) {
	if len(changed) == 0 {
		return 0, nil
	}
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
		if _, err := s.tx.Exec(ctx, `
			DELETE FROM relationships
			WHERE ctid = ANY(ARRAY(
				SELECT r.ctid FROM unnest($1::text[], $2::text[]) AS u(name, type)
				CROSS JOIN LATERAL (
					SELECT ctid FROM relationships r
					WHERE r.name = u.name AND r.type = u.type
					  AND r.source_file_id <> r.target_file_id AND r.source_file_id <> $3) r))`,
			ambNames, ambTypes, fileID); err != nil {
			return 0, fmt.Errorf("error removing ambiguous relationships: %w", err)
		}
	}
	if len(fewNames) == 0 {
		return 0, nil
	}
	rows, err := s.tx.Query(ctx, `
		SELECT r.source_poi_id, r.source_file_id, r.name, r.type
		FROM unnest($1::text[], $2::text[]) AS u(name, type)
		CROSS JOIN LATERAL (
			SELECT source_poi_id, source_file_id, name, type FROM poi_references r
			WHERE r.name = u.name AND r.type = u.type AND r.source_file_id <> $3) r`, fewNames, fewTypes, fileID)
	if err != nil {
		return 0, fmt.Errorf("error loading references to changed names: %w", err)
	}
	var e edges
	var srcs, names, types []string
	var targets []*string // each reference's target now, nil when it resolves to none
	for rows.Next() {
		var src, srcFile, name, typ string
		if err := rows.Scan(&src, &srcFile, &name, &typ); err != nil {
			rows.Close()
			return 0, fmt.Errorf("error reading references: %w", err)
		}
		srcs, names, types = append(srcs, src), append(names, name), append(types, typ)
		ref := resolver.Reference{Name: name, Type: resolver.RelType(typ)}
		if target, outcome := resolver.Lookup(src, srcFile, ref, cands[name]); outcome == resolver.Resolved {
			e.add(src, target, ref, srcFile, fileOf(cands[name], target))
			targets = append(targets, &target)
		} else {
			targets = append(targets, nil)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("error reading references: %w", err)
	}
	if len(srcs) > 0 {
		// Remove what these references pointed at before, unless it is
		// still right (a reference resolves to at most one target); then
		// insert what is right now.
		if _, err := s.tx.Exec(ctx, `
			DELETE FROM relationships
			WHERE ctid = ANY(ARRAY(
				SELECT r.ctid FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(src, name, type, tgt)
				CROSS JOIN LATERAL (
					SELECT ctid FROM relationships r
					WHERE r.source_poi_id = u.src AND r.name = u.name AND r.type = u.type
					  AND r.target_poi_id IS DISTINCT FROM u.tgt) r))`,
			srcs, names, types, targets); err != nil {
			return 0, fmt.Errorf("error removing outdated relationships: %w", err)
		}
	}
	return s.insertEdges(ctx, jobID, e)
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

func (s store) insertEdges(ctx context.Context, jobID int64, e edges) (int64, error) {
	if len(e.src) == 0 {
		return 0, nil
	}
	tag, err := s.tx.Exec(ctx, `
		INSERT INTO relationships (source_poi_id, target_poi_id, type, name, source_file_id, target_file_id, job_id)
		SELECT * , $7::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
		ON CONFLICT DO NOTHING`, e.src, e.tgt, e.typ, e.name, e.srcFile, e.tgtFile, jobID)
	if err != nil {
		return 0, fmt.Errorf("error writing %d relationships: %w", len(e.src), err)
	}
	return tag.RowsAffected(), nil
}

func fileOf(cands []resolver.Candidate, poiID string) string {
	for _, c := range cands {
		if c.POIID == poiID {
			return c.FileID
		}
	}
	return ""
}
