package outbox

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relay-dev/relay/internal/indexplans"
	"github.com/relay-dev/relay/resolver"
)

// store is the publisher's SQL, run in the publish transaction (under its
// savepoint).
type store struct{ tx pgx.Tx }

// symbolKey is what the symbol table keeps of a POI, its line number
// aside: a change of any of it changes the POI's definition.
type symbolKey struct{ id, name, typ, symbol, receiver, result, fields string }

// answerer is what decides the names the POI of key k answers to.
func (k symbolKey) answerer() resolver.Answerer {
	return resolver.Answerer{ID: k.id, Type: k.typ, Name: k.name, Receiver: k.receiver, Symbol: k.symbol}
}

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
	index := make(map[fileKey]int, len(files))
	// The files' keys in (repository, file_id) order, the order every
	// publish locks files' rows in.
	sorted := make([]fileKey, len(files))
	counts := make([]int32, len(files))
	// Empty, not nil, when there are no symbols: pgx sends a nil slice as
	// NULL, not as an empty array.
	ids, repos, owners, names, types := []string{}, []string{}, []string{}, []string{}, []string{}
	lines, symbols, receivers, results, fields := []int32{}, []string{}, []string{}, []string{}, []string{}
	keys := make([][]symbolKey, len(files))
	for i, f := range files {
		k := fileKey{f.a.Repository, f.a.FileID}
		index[k], sorted[i] = i, k
		keys[i] = make([]symbolKey, len(f.syms))
		for j, p := range f.syms {
			sk := keyOf(p)
			keys[i][j] = sk
			ids, repos, owners = append(ids, p.ID), append(repos, f.a.Repository), append(owners, f.a.FileID)
			names, types, lines = append(names, p.Name), append(types, p.Type), append(lines, int32(p.LineNumber))
			symbols, receivers = append(symbols, p.Symbol), append(receivers, sk.receiver)
			results, fields = append(results, sk.result), append(fields, sk.fields)
		}
	}
	slices.SortFunc(sorted, fileKey.compare)
	fileRepos, fileIDs := make([]string, len(files)), make([]string, len(files))
	for i, k := range sorted {
		fileRepos[i], fileIDs[i] = k.repo, k.id
		counts[i] = int32(len(files[index[k]].syms))
	}
	// old are the files' symbols before the publish, with their line
	// numbers.
	old := make([]map[symbolKey]int32, len(files))
	var upserted int64

	b := indexplans.NewUnnamed(s.tx.Conn().TypeMap())
	// The files' publish locks first, then the analyses the SQL API
	// (relay_publish) queued for them, which this publish supersedes: the
	// last committed publish of a file wins, whatever its path.
	var isolation string
	b.Queue(lockPublishSQL, fileRepos, fileIDs).Rows(func(v [][]byte) error {
		isolation = string(v[1])
		return nil
	})
	b.Queue(deleteQueuedSQL, fileRepos, fileIDs)
	b.Queue(lockFilesSQL, fileRepos, fileIDs).Rows(func(v [][]byte) error {
		n, err := indexplans.Int(v[2])
		f := &files[index[fileKey{string(v[0]), string(v[1])}]]
		f.existed, f.prevCount = true, int(n)
		return err
	})
	b.Queue(`
		INSERT INTO files AS f (repository, file_id, version, poi_count, published_at, publish_xid)
		SELECT repository, file_id, 1, poi_count, now(), pg_current_xact_id()::text::bigint
		FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS u(repository, file_id, poi_count, ord) ORDER BY ord
		ON CONFLICT (repository, file_id) DO UPDATE
			SET version = f.version + 1, poi_count = excluded.poi_count, published_at = excluded.published_at,
			    publish_xid = excluded.publish_xid
		RETURNING repository, file_id, version, pg_current_xact_id()::text::bigint`, fileRepos, fileIDs, counts).
		Rows(func(v [][]byte) error {
			version, err := indexplans.Int(v[2])
			if err != nil {
				return err
			}
			files[index[fileKey{string(v[0]), string(v[1])}]].version = version
			xid, err = indexplans.Int(v[3])
			return err
		})
	b.Queue(supersedeFailedSQL, fileRepos, fileIDs)
	b.Queue(otherOwnerSQL, repos, ids, owners, fileIDs, fileRepos, slices.Compact(slices.Clone(fileRepos))).Rows(func(v [][]byte) error {
		rej = &RejectError{Repository: string(v[0]), FileID: string(v[1]), POIID: string(v[3]), POIIndex: -1, OwnerFileID: string(v[2]),
			Reason: fmt.Sprintf("id already belongs to a POI of file %q; POI ids must be unique within a repository", v[2])}
		return nil
	})
	b.Queue(oldSymbolsSQL, fileRepos, fileIDs).Rows(func(v [][]byte) error {
		line, err := indexplans.Int(v[5])
		if err != nil {
			return err
		}
		i := index[fileKey{string(v[0]), string(v[1])}]
		if old[i] == nil {
			old[i] = map[symbolKey]int32{}
		}
		k := symbolKey{string(v[2]), string(v[3]), string(v[4]), string(v[6]), string(v[7]), string(v[8]), string(v[9])}
		old[i][k] = int32(line)
		return nil
	})
	// A POI that leaves its file goes, with its references, even when it
	// moves to another file of this publish: it comes back as a new POI of
	// that file.
	b.Queue(deleteRemovedSQL, fileRepos, fileIDs, repos, ids, owners)
	b.Queue(deleteReferencesSQL, fileRepos, fileIDs)
	b.Queue(upsertSymbolsSQL, repos, ids, owners, names, types, lines, symbols, receivers, results, fields).
		Exec(func(tag pgconn.CommandTag) { upserted = tag.RowsAffected() })
	if err := b.Run(ctx, s.tx.Conn().PgConn()); err != nil {
		return 0, nil, fmt.Errorf("error storing symbols: %w", err)
	}
	if isolation != "read committed" {
		return 0, nil, fmt.Errorf("%w (the caller's transaction is %s)", ErrIsolation, isolation)
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
		c := indexplans.NewUnnamed(s.tx.Conn().TypeMap())
		c.Queue(`
			SELECT u.repo, u.file, u.id FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(repo, id, file, ord)
			WHERE NOT EXISTS (SELECT FROM pois WHERE repository = u.repo AND poi_id = u.id AND file_id = u.file)
			ORDER BY u.ord LIMIT 1`,
			repos, ids, owners).Rows(func(v [][]byte) error {
			rej = &RejectError{Repository: string(v[0]), FileID: string(v[1]), POIID: string(v[2]), POIIndex: -1,
				Reason: "id was published by another file at the same time; POI ids must be unique within a repository"}
			return nil
		})
		if err := c.Run(ctx, s.tx.Conn().PgConn()); err != nil {
			return 0, nil, fmt.Errorf("error counting stored symbols: %w", err)
		}
		if rej != nil {
			return 0, rej, nil
		}
	}
	for i := range files {
		files[i].changed = changedNames(old[i], files[i].syms, keys[i])
	}
	return xid, nil, nil
}

// changedNames returns, sorted, the names whose definitions differ between
// a file's old symbols and its new ones: of each POI that came, went or
// changed, the names it answers to (resolver.AnswerNames) of the kinds
// that changed. Its name and, for a Go method, its receiver-qualified name
// when its key did (a POI whose result or field types changed,
// resolver.ResultType and resolver.FieldTypes, changed its name's
// definition: derived references read them); "id:<id>" when a POI of that
// id came, went or changed type; "sym:<symbol>" when a POI of that symbol
// did. keys are syms' keys.
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
	add := func(name string) { set[name] = true }
	for j, p := range syms {
		k := keys[j]
		var kinds resolver.NameKinds
		if _, ok := old[k]; ok {
			delete(old, k)
		} else {
			kinds |= resolver.ByName | resolver.ByReceiver
		}
		if ik := (idKey{p.ID, p.Type}); oldIDs[ik] {
			delete(oldIDs, ik)
		} else {
			kinds |= resolver.ByID
		}
		if sk := (symKey{p.ID, p.Type, p.Symbol}); oldSyms[sk] {
			delete(oldSyms, sk)
		} else {
			kinds |= resolver.BySymbol
		}
		resolver.AnswerNames(k.answerer(), kinds, add)
	}
	for k := range old {
		resolver.AnswerNames(k.answerer(), resolver.ByName|resolver.ByReceiver, add)
	}
	for k := range oldIDs {
		resolver.AnswerNames(resolver.Answerer{ID: k.id, Type: k.typ}, resolver.ByID, add)
	}
	for k := range oldSyms {
		resolver.AnswerNames(resolver.Answerer{ID: k.id, Type: k.typ, Symbol: k.symbol}, resolver.BySymbol, add)
	}
	changed := make([]string, 0, len(set))
	for name := range set {
		changed = append(changed, name)
	}
	slices.Sort(changed)
	return changed
}

// The publisher's statements run in the caller's transaction, under the
// caller's planner settings, as unnamed statements (indexplans.Unnamed): each is
// planned for its call, with the tables as they are then, and no plan made
// while they were small is kept as they grow. Each is written so that its
// plan is driven from its keys: a parameterized LATERAL subquery fenced by
// OFFSET 0, or a join on a key, looked up on an index
// for a publish of a few files
// (TestPublisherStatements_RunOnTheirKeysWhateverTheTablesSize); a publish
// of thousands may be planned as a hash join, which is then cheaper.
//
// Rows are deleted by their keys, never by the ctid a subquery found: a row
// that another transaction updates while the delete waits for it (a link
// round re-resolving a reference, another publish's delete trigger clearing
// a target) is found again by its key once that transaction commits, and
// deleted (TestPublish_RepublishRemovesReferencesMovedWhileItWaited,
// TestPublish_RemovedPOILosesAReferenceALinkRoundMovedWhileItWaited).
const (
	// lockPublishSQL takes the publish locks of the files ($1
	// repositories, $2 file ids): every publish of a file, Go or SQL, holds
	// its lock from before it writes until it commits, so the publishes of
	// a file commit in the order they took it and each sees every earlier
	// one (migration 27; TestPublish_LastCommittedWinsBetweenGoAndSQL).
	lockPublishSQL = `SELECT relay_lock_files($1::text[], $2::text[]), current_setting('transaction_isolation')`
	// deleteQueuedSQL deletes the SQL API's queued analyses of the files
	// ($1 repositories, $2 file ids): under the files' publish locks, every
	// one that committed before this publish took them.
	deleteQueuedSQL = `
	DELETE FROM publish_queue t USING unnest($1::text[], $2::text[]) AS u(repo, file)
	WHERE t.repository = u.repo AND t.file_id = u.file`
	// lockFilesSQL locks the rows of the files ($1 repositories, $2 file
	// ids, in key order) that exist, in that order.
	lockFilesSQL = `
	SELECT f.repository, f.file_id, f.poi_count FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(repo, file, ord)
	CROSS JOIN LATERAL (SELECT repository, file_id, poi_count FROM files WHERE repository = u.repo AND file_id = u.file FOR UPDATE) f
	ORDER BY u.ord`
	// otherOwnerSQL returns the first of the POI ids $2 (of repositories
	// $1) that belongs to a file other than its own ($3) and not published
	// with it (the files $4 of repositories $5): a file of this publish
	// that had the id no longer has it (ids are unique across a publish's
	// files), so the id moves. $6 are the publish's repositories, each
	// once. The ids are read in one scan (the subquery, kept apart by OFFSET
	// 0), not probed one by one: while the statistics still described a
	// near-empty pois, the planner probed each id through pois_name_idx or
	// pois_file_id_idx by the repository alone, scanning the repository's
	// entries once per id (10-14 s for one publish of 2,500 POIs, with 4
	// concurrent publishers; docs/scaling.md). Read in one scan, the worst
	// plan reads the repository's entries once.
	otherOwnerSQL = `
	SELECT u.repo, u.file, p.file_id, p.poi_id
	FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(repo, id, file, ord)
	JOIN (SELECT repository, poi_id, file_id FROM pois WHERE repository = ANY($6::text[]) AND poi_id = ANY($2::text[]) OFFSET 0) p
	  ON p.repository = u.repo AND p.poi_id = u.id
	WHERE p.file_id <> u.file
	  AND NOT EXISTS (SELECT FROM unnest($5::text[], $4::text[]) AS f(repo, file) WHERE f.repo = u.repo AND f.file = p.file_id)
	ORDER BY u.ord LIMIT 1`
	// oldSymbolsSQL reads the symbols of the files ($1 repositories, $2
	// file ids).
	oldSymbolsSQL = `
	SELECT u.repo, p.file_id, p.poi_id, p.name, p.type, p.line_number, coalesce(p.symbol, ''), p.receiver, p.result, p.fields
	FROM unnest($1::text[], $2::text[]) AS u(repo, file)
	CROSS JOIN LATERAL (SELECT * FROM pois WHERE repository = u.repo AND file_id = u.file OFFSET 0) p`
	// deleteRemovedSQL deletes the POIs of the files ($1 repositories, $2
	// file ids) that are not among their file's POIs in the publish (ids
	// $4 of repositories $3 and files $5). The difference is a set
	// operation: a filter comparing each of the files' rows with every id
	// would take time quadratic in a file's size.
	deleteRemovedSQL = `
	WITH gone AS MATERIALIZED (
		SELECT u.repo, u.file, p.poi_id FROM unnest($1::text[], $2::text[]) AS u(repo, file)
		CROSS JOIN LATERAL (SELECT poi_id FROM pois WHERE repository = u.repo AND file_id = u.file OFFSET 0) p
		EXCEPT SELECT * FROM unnest($3::text[], $5::text[], $4::text[]))
	DELETE FROM pois t USING gone g
	WHERE t.repository = g.repo AND t.poi_id = g.poi_id`
	// deleteReferencesSQL deletes the references (and so the
	// relationships) of the files ($1 repositories, $2 file ids), found
	// through their remaining POIs (the trigger on pois took those of the
	// POIs just deleted): the table is keyed by source POI, not by file.
	deleteReferencesSQL = `
	DELETE FROM poi_references t USING (
		SELECT u.repo, p.poi_id FROM unnest($1::text[], $2::text[]) AS u(repo, file)
		CROSS JOIN LATERAL (SELECT poi_id FROM pois WHERE repository = u.repo AND file_id = u.file OFFSET 0) p) d
	WHERE t.repository = d.repo AND t.source_poi_id = d.poi_id`
)

// fileKey identifies a file: its repository and its id.
type fileKey struct{ repo, id string }

func (k fileKey) compare(o fileKey) int {
	return cmp.Or(cmp.Compare(k.repo, o.repo), cmp.Compare(k.id, o.id))
}
