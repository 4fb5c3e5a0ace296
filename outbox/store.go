package outbox

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/resolver"
)

// store is the publisher's SQL, run in the publish transaction (under its
// savepoint).
type store struct{ tx pgx.Tx }

// symbolKey is what the symbol table keeps of a POI, its line number
// aside: a change of any of it changes the POI's definition.
type symbolKey struct{ id, name, typ, symbol, receiver, result, fields string }

// keyOf is p's symbolKey.
func keyOf(p resolver.POI) symbolKey {
	return symbolKey{p.ID, p.Name, p.Type, p.Symbol, resolver.Receiver(p), resolver.ResultType(p), resolver.FieldTypes(p)}
}

// write stores a publish of files in one pipelined round trip, whatever
// their number:
//
//   - each file's row is created, or its version increased, locking the rows
//     (in file_id order, so concurrent publishes cannot deadlock on them)
//     until commit: concurrent publishes of one file, and workers checking
//     the file's version, queue behind it;
//   - the files' symbols become exactly their syms: POIs that stay keep their
//     incoming relationships, the references (and so the relationships)
//     that originate from the files go (their jobs recreate them).
//
// It fills each file's existed, prevCount, version and changed (the names
// whose definitions the publish added, removed or moved; import POIs never
// count: no relationship can target one, see resolver.Accepts), and returns
// the publishing transaction's id (ResolveFileArgs.PublishXID). A POI id
// that belongs to another file comes back as a *RejectError; the caller
// rolls the savepoint back.
func (s store) write(ctx context.Context, files []fileBatch) (xid int64, rej *RejectError, err error) {
	index := make(map[string]int, len(files))
	fileIDs := make([]string, len(files))
	counts := make([]int32, len(files))
	// Empty, not nil, when there are no symbols: pgx sends a nil slice as
	// NULL, not as an empty array.
	ids, owners, names, types := []string{}, []string{}, []string{}, []string{}
	lines, symbols, receivers, results, fields := []int32{}, []string{}, []string{}, []string{}, []string{}
	keys := make([][]symbolKey, len(files))
	for i, f := range files {
		index[f.a.FileID] = i
		fileIDs[i], counts[i] = f.a.FileID, int32(len(f.syms))
		keys[i] = make([]symbolKey, len(f.syms))
		for j, p := range f.syms {
			k := keyOf(p)
			keys[i][j] = k
			ids, owners = append(ids, p.ID), append(owners, f.a.FileID)
			names, types, lines = append(names, p.Name), append(types, p.Type), append(lines, int32(p.LineNumber))
			symbols, receivers = append(symbols, p.Symbol), append(receivers, k.receiver)
			results, fields = append(results, k.result), append(fields, k.fields)
		}
	}
	// old are the files' symbols before the publish, with their line
	// numbers.
	old := make([]map[symbolKey]int32, len(files))
	var upserted int64

	b := &pgx.Batch{}
	// A publish supersedes the files' analyses still queued by the SQL API
	// (relay_publish): the last committed publish of a file wins, whatever
	// its path. Queued rows are locked before the files' rows, as the SQL
	// API's drain does, so the two cannot deadlock.
	b.Queue(deleteQueuedSQL, fileIDs)
	b.Queue(lockFilesSQL, fileIDs).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id string
				var n int32
				if err := rows.Scan(&id, &n); err != nil {
					return err
				}
				f := &files[index[id]]
				f.existed, f.prevCount = true, int(n)
			}
			return rows.Err()
		})
	b.Queue(`
		INSERT INTO files AS f (file_id, version, poi_count, published_at)
		SELECT file_id, 1, poi_count, now() FROM unnest($1::text[], $2::int[]) AS u(file_id, poi_count) ORDER BY file_id
		ON CONFLICT (file_id) DO UPDATE
			SET version = f.version + 1, poi_count = excluded.poi_count, published_at = excluded.published_at
		RETURNING file_id, version, pg_current_xact_id()::text::bigint`, fileIDs, counts).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id string
				var v int64
				if err := rows.Scan(&id, &v, &xid); err != nil {
					return err
				}
				files[index[id]].version = v
			}
			return rows.Err()
		})
	b.Queue(otherOwnerSQL, ids, owners).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var file, other, id string
				if err := rows.Scan(&file, &other, &id); err != nil {
					return err
				}
				rej = &RejectError{FileID: file, POIID: id, POIIndex: -1,
					Reason: fmt.Sprintf("id already belongs to a POI of file %q; POI ids must be unique across files", other)}
			}
			return rows.Err()
		})
	b.Queue(oldSymbolsSQL, fileIDs).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var file string
				var k symbolKey
				var line int32
				if err := rows.Scan(&file, &k.id, &k.name, &k.typ, &line, &k.symbol, &k.receiver, &k.result, &k.fields); err != nil {
					return err
				}
				i := index[file]
				if old[i] == nil {
					old[i] = map[symbolKey]int32{}
				}
				old[i][k] = line
			}
			return rows.Err()
		})
	// ids are unique across the files (checked before) and none belongs to
	// another file (checked above, or the savepoint is rolled back), so
	// "not among ids" is "no longer among this file's POIs".
	b.Queue(deleteRemovedSQL, fileIDs, ids)
	b.Queue(deleteReferencesSQL, fileIDs)
	b.Queue(upsertSymbolsSQL, ids, owners, names, types, lines, symbols, receivers, results, fields).
		Exec(func(tag pgconn.CommandTag) error { upserted = tag.RowsAffected(); return nil })
	if err := s.tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, nil, fmt.Errorf("error storing symbols: %w", err)
	}
	if rej != nil {
		return 0, rej, nil
	}
	// Every id must now be a POI of its file. The upsert counts the POIs it
	// inserted or changed; the others must be the files' POIs it left as
	// they were. Only when the counts disagree (another file took an id
	// since the check above, or a reprocess wrote one of these files' POIs
	// meanwhile) are the POIs counted in the table.
	unchanged := 0
	for i := range files {
		for j, p := range files[i].syms {
			if line, ok := old[i][keys[i][j]]; ok && line == int32(p.LineNumber) {
				unchanged++
			}
		}
	}
	if stored := int(upserted) + unchanged; stored != len(ids) {
		if err := s.tx.QueryRow(ctx, `
			SELECT count(*) FROM unnest($1::text[], $2::text[]) AS u(id, file)
			JOIN pois p ON p.poi_id = u.id AND p.file_id = u.file`, ids, owners).Scan(&stored); err != nil {
			return 0, nil, fmt.Errorf("error counting stored symbols: %w", err)
		}
		if stored != len(ids) {
			// Another file took one of these ids concurrently.
			return 0, &RejectError{FileID: fileIDs[0], POIIndex: -1,
				Reason: fmt.Sprintf("%d POI ids of this publish were published by another file at the same time; POI ids must be unique across files", len(ids)-stored)}, nil
		}
	}
	for i := range files {
		files[i].changed = changedNames(old[i], files[i].syms, keys[i])
	}
	return xid, nil, nil
}

// changedNames returns, sorted, the names whose definitions differ between
// a file's old symbols and its new ones, imports left out: the POIs' names,
// and the names supplied references reach them by: "id:<id>" when a POI of
// that id came, went or changed type, "sym:<symbol>" when a POI of that
// symbol did (resolver.SuppliedNames), and a Go method's "<receiver>.<name>"
// when it came or went (resolver.ReceiverName). A POI whose result or field
// types changed (resolver.ResultType, resolver.FieldTypes) changed its
// name's definition: derived references read them. keys are syms' keys.
func changedNames(old map[symbolKey]int32, syms []resolver.POI, keys []symbolKey) []string {
	type idKey struct{ id, typ string }
	type symKey struct{ id, typ, symbol string }
	oldIDs, oldSyms := map[idKey]bool{}, map[symKey]bool{}
	for k := range old {
		if k.typ != resolver.TypeImport {
			oldIDs[idKey{k.id, k.typ}] = true
			if k.symbol != "" {
				oldSyms[symKey{k.id, k.typ, k.symbol}] = true
			}
		}
	}
	set := map[string]bool{}
	for j, p := range syms {
		k := keys[j]
		if _, ok := old[k]; ok {
			delete(old, k)
		} else if p.Type != resolver.TypeImport {
			set[p.Name] = true
			if n := resolver.ReceiverName(k.receiver, p.Name); n != "" {
				set[n] = true
			}
		}
		if p.Type == resolver.TypeImport {
			continue
		}
		if ik := (idKey{p.ID, p.Type}); oldIDs[ik] {
			delete(oldIDs, ik)
		} else {
			set[resolver.IDPrefix+p.ID] = true
		}
		if p.Symbol == "" {
			continue
		}
		if sk := (symKey{p.ID, p.Type, p.Symbol}); oldSyms[sk] {
			delete(oldSyms, sk)
		} else {
			set[resolver.SymbolPrefix+p.Symbol] = true
		}
	}
	for k := range old {
		if k.typ != resolver.TypeImport {
			set[k.name] = true
			if n := resolver.ReceiverName(k.receiver, k.name); n != "" {
				set[n] = true
			}
		}
	}
	for k := range oldIDs {
		set[resolver.IDPrefix+k.id] = true
	}
	for k := range oldSyms {
		set[resolver.SymbolPrefix+k.symbol] = true
	}
	changed := make([]string, 0, len(set))
	for name := range set {
		changed = append(changed, name)
	}
	slices.Sort(changed)
	return changed
}

// The publisher's statements run in the caller's transaction, under the
// caller's planner settings, and a long-lived connection may run one on a
// generic plan made while the tables were empty. Each is therefore written
// so that its only plan is driven from its keys: a parameterized LATERAL
// subquery fenced by OFFSET 0, a lookup per key on an index, and rows
// deleted by the ctid found there. On an empty table a scan of the whole
// table is the cheaper plan, and a generic plan made then would keep it as
// the table grows (TestPublisherStatements_RunOnIndexesOnGenericPlans).
// Deleting by ctid is safe: every writer of a file's POIs and references
// holds the file's row lock, which the publish holds FOR UPDATE, so no row
// found moves before it is deleted.
const (
	// deleteQueuedSQL deletes the SQL API's queued analyses of the files
	// $1, locking them in file_id order first.
	deleteQueuedSQL = `
	DELETE FROM publish_queue WHERE file_id = ANY(ARRAY(
		SELECT file_id FROM publish_queue WHERE file_id = ANY($1) ORDER BY file_id FOR UPDATE))`
	// lockFilesSQL locks the rows of the files $1 that exist, in file_id
	// order.
	lockFilesSQL = `SELECT file_id, poi_count FROM files WHERE file_id = ANY($1) ORDER BY file_id FOR UPDATE`
	// otherOwnerSQL returns the first of the POI ids $1 that belongs to a
	// file other than its own ($2).
	otherOwnerSQL = `
	SELECT u.file, p.file_id, p.poi_id
	FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(id, file, ord)
	CROSS JOIN LATERAL (SELECT file_id, poi_id FROM pois WHERE poi_id = u.id OFFSET 0) p
	WHERE p.file_id <> u.file
	ORDER BY u.ord LIMIT 1`
	// oldSymbolsSQL reads the symbols of the files $1.
	oldSymbolsSQL = `
	SELECT p.file_id, p.poi_id, p.name, p.type, p.line_number, coalesce(p.symbol, ''), p.receiver, p.result, p.fields
	FROM unnest($1::text[]) AS u(file)
	CROSS JOIN LATERAL (SELECT * FROM pois WHERE file_id = u.file OFFSET 0) p`
	// deleteRemovedSQL deletes the POIs of the files $1 that are not among
	// the ids $2. The difference is a set operation: a filter comparing
	// each of the files' rows with every id would take time quadratic in a
	// file's size.
	deleteRemovedSQL = `
	WITH gone AS MATERIALIZED (
		SELECT p.poi_id FROM unnest($1::text[]) AS u(file)
		CROSS JOIN LATERAL (SELECT poi_id FROM pois WHERE file_id = u.file OFFSET 0) p
		EXCEPT SELECT unnest($2::text[]))
	DELETE FROM pois t USING (
		SELECT p.ctid FROM gone g CROSS JOIN LATERAL (SELECT ctid FROM pois WHERE poi_id = g.poi_id OFFSET 0) p) d
	WHERE t.ctid = d.ctid`
	// deleteReferencesSQL deletes the references (and so the
	// relationships) of the files $1, found through their remaining POIs
	// (the trigger on pois took those of the POIs just deleted): the table
	// is keyed by source POI, not by file.
	deleteReferencesSQL = `
	DELETE FROM poi_references t USING (
		SELECT r.ctid FROM unnest($1::text[]) AS u(file)
		CROSS JOIN LATERAL (SELECT poi_id FROM pois WHERE file_id = u.file OFFSET 0) p
		CROSS JOIN LATERAL (SELECT ctid FROM poi_references WHERE source_poi_id = p.poi_id OFFSET 0) r) d
	WHERE t.ctid = d.ctid`
)
