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
// their number (and a second one when POIs were removed, or the stored
// POIs must be counted):
//
//   - each file's row is created, or its version increased, locking the rows
//     (in (repository, file_id) order, so concurrent publishes cannot
//     deadlock on them) until commit: concurrent publishes of one file, and
//     workers checking the file's version, queue behind it;
//   - the files' symbols become exactly their syms: POIs that stay keep their
//     incoming relationships, the references (and so the relationships)
//     that originate from the files go (their jobs recreate them), and the
//     references of any repository that resolved to a POI that went lose
//     their target (clearTargetsSQL).
//
// Every statement that reads or writes a repository's rows names the
// repository as a value ($1) and queues once per repository of the
// publish, in the pipeline: on Citus, with the tables distributed by
// repository, each one runs on the node that holds the repository
// (docs/citus.md). Only clearTargetsSQL spans repositories.
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
	for i, f := range files {
		k := fileKey{f.a.Repository, f.a.FileID}
		index[k], sorted[i] = i, k
	}
	slices.SortFunc(sorted, fileKey.compare)
	fileRepos, fileIDs := make([]string, len(files)), make([]string, len(files))
	for i, k := range sorted {
		fileRepos[i], fileIDs[i] = k.repo, k.id
	}
	keys := make([][]symbolKey, len(files))
	for i, f := range files {
		keys[i] = make([]symbolKey, len(f.syms))
		for j, p := range f.syms {
			keys[i][j] = keyOf(p)
		}
	}
	repos := repositoriesOf(files, keys, sorted, index)
	// old are the files' symbols before the publish, with their line
	// numbers.
	old := make([]map[symbolKey]int32, len(files))
	var upserted int64
	// removed are the ids of the POIs deleted, by repository.
	removed := make([][]string, len(repos))
	// rejOrd is the position, among every symbol of the publish, of the id
	// rej names: of several, the first is rejected.
	rejOrd := -1

	b := indexplans.NewUnnamed(s.tx.Conn().TypeMap())
	// The files' publish locks first, then the analyses the SQL API
	// (relay_publish) queued for them, which this publish supersedes: the
	// last committed publish of a file wins, whatever its path.
	var isolation string
	b.Queue(lockPublishSQL, fileRepos, fileIDs).Rows(func(v [][]byte) error {
		isolation = string(v[1])
		return nil
	})
	for _, r := range repos {
		b.Queue(deleteQueuedSQL, r.name, r.fileIDs)
	}
	for _, r := range repos {
		b.Queue(lockFilesSQL, r.name, r.fileIDs).Rows(func(v [][]byte) error {
			n, err := indexplans.Int(v[1])
			f := &files[index[fileKey{r.name, string(v[0])}]]
			f.existed, f.prevCount = true, int(n)
			return err
		})
	}
	for _, r := range repos {
		b.Queue(upsertFilesSQL, r.name, r.fileIDs, r.counts).Rows(func(v [][]byte) error {
			version, err := indexplans.Int(v[1])
			if err != nil {
				return err
			}
			files[index[fileKey{r.name, string(v[0])}]].version = version
			xid, err = indexplans.Int(v[2])
			return err
		})
	}
	for _, r := range repos {
		b.Queue(supersedeFailedSQL, r.name, r.fileIDs)
	}
	for _, r := range repos {
		b.Queue(otherOwnerSQL, r.name, r.ids, r.owners, r.fileIDs).Rows(func(v [][]byte) error {
			ord, err := indexplans.Int(v[3])
			if err != nil {
				return err
			}
			if o := r.ords[ord-1]; rej == nil || o < rejOrd {
				rejOrd = o
				rej = &RejectError{Repository: r.name, FileID: string(v[0]), POIID: string(v[2]), POIIndex: -1, OwnerFileID: string(v[1]),
					Reason: fmt.Sprintf("id already belongs to a POI of file %q; POI ids must be unique within a repository", v[1])}
			}
			return nil
		})
	}
	for _, r := range repos {
		b.Queue(oldSymbolsSQL, r.name, r.fileIDs).Rows(func(v [][]byte) error {
			line, err := indexplans.Int(v[4])
			if err != nil {
				return err
			}
			i := index[fileKey{r.name, string(v[0])}]
			if old[i] == nil {
				old[i] = map[symbolKey]int32{}
			}
			k := symbolKey{string(v[1]), string(v[2]), string(v[3]), string(v[5]), string(v[6]), string(v[7]), string(v[8])}
			old[i][k] = int32(line)
			return nil
		})
	}
	// The references of the files' POIs go, then the POIs that leave their
	// file, even those that move to another file of this publish: they
	// come back as new POIs of that file.
	for _, r := range repos {
		b.Queue(deleteReferencesSQL, r.name, r.fileIDs)
	}
	for k, r := range repos {
		b.Queue(deleteRemovedSQL, r.name, r.fileIDs, r.ids, r.owners).Rows(func(v [][]byte) error {
			removed[k] = append(removed[k], string(v[0]))
			return nil
		})
	}
	for _, r := range repos {
		b.Queue(upsertSymbolsSQL, r.name, r.ids, r.owners, r.names, r.types, r.lines, r.symbols, r.receivers, r.results, r.fields).
			Exec(func(tag pgconn.CommandTag) { upserted += tag.RowsAffected() })
	}
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
	unchanged, total := 0, 0
	for i := range files {
		total += len(files[i].syms)
		for j, p := range files[i].syms {
			if line, ok := old[i][keys[i][j]]; ok && line == int32(p.LineNumber) {
				unchanged++
			}
		}
	}
	count := int(upserted)+unchanged != total
	c := indexplans.NewUnnamed(s.tx.Conn().TypeMap())
	queued := false
	for k, r := range repos {
		if len(removed[k]) > 0 {
			c.Queue(clearTargetsSQL, r.name, removed[k])
			queued = true
		}
	}
	if count {
		for _, r := range repos {
			c.Queue(storedSQL, r.name, r.ids, r.owners).Rows(func(v [][]byte) error {
				ord, err := indexplans.Int(v[2])
				if err != nil {
					return err
				}
				if o := r.ords[ord-1]; rej == nil || o < rejOrd {
					rejOrd = o
					rej = &RejectError{Repository: r.name, FileID: string(v[0]), POIID: string(v[1]), POIIndex: -1,
						Reason: "id was published by another file at the same time; POI ids must be unique within a repository"}
				}
				return nil
			})
		}
		queued = true
	}
	if queued {
		if err := c.Run(ctx, s.tx.Conn().PgConn()); err != nil {
			return 0, nil, fmt.Errorf("error clearing removed POIs' incoming references or counting stored symbols: %w", err)
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

// repository is what a publish writes in one repository: its files, in
// file_id order, and their symbols, as the statements take them.
type repository struct {
	name    string
	fileIDs []string
	counts  []int32 // each file's symbols
	// The symbols, of the files in the publish's order: ids, owners (their
	// files), and what the symbol table keeps of them. ords are their
	// positions among every symbol of the publish.
	ids, owners, names, types, symbols, receivers, results, fields []string
	lines                                                          []int32
	ords                                                           []int
}

// repositoriesOf groups a publish's files by repository, in repository
// order; keys are the files' symbols' keys, sorted the files' keys in
// (repository, file_id) order and index each key's file. The arrays are empty, not nil, when there is
// nothing: pgx sends a nil slice as NULL, not as an empty array.
func repositoriesOf(files []fileBatch, keys [][]symbolKey, sorted []fileKey, index map[fileKey]int) []*repository {
	var repos []*repository
	byName := map[string]*repository{}
	for _, k := range sorted {
		r := byName[k.repo]
		if r == nil {
			r = &repository{name: k.repo, ids: []string{}, owners: []string{}, names: []string{}, types: []string{},
				symbols: []string{}, receivers: []string{}, results: []string{}, fields: []string{}, lines: []int32{}}
			byName[k.repo] = r
			repos = append(repos, r)
		}
		r.fileIDs = append(r.fileIDs, k.id)
		r.counts = append(r.counts, int32(len(files[index[k]].syms)))
	}
	ord := 0
	for i, f := range files {
		r := byName[f.a.Repository]
		for j, p := range f.syms {
			k := keys[i][j]
			r.ids, r.owners = append(r.ids, p.ID), append(r.owners, f.a.FileID)
			r.names, r.types, r.lines = append(r.names, p.Name), append(r.types, p.Type), append(r.lines, int32(p.LineNumber))
			r.symbols, r.receivers, r.results, r.fields = append(r.symbols, p.Symbol), append(r.receivers, k.receiver),
				append(r.results, k.result), append(r.fields, k.fields)
			r.ords = append(r.ords, ord)
			ord++
		}
	}
	return repos
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
// Each statement but lockPublishSQL and clearTargetsSQL reads and writes
// one repository's rows, named as a value ($1), and is queued once per
// repository of a publish: on Citus, with the tables distributed by
// repository (docs/scaling.md, "Distributing by repository"), its router
// planner sends the statement whole to the one node that holds the
// repository's shards, where FOR UPDATE, LATERAL, OFFSET 0 and unnest run
// as on PostgreSQL. The INSERT ... SELECT FROM unnest statements are
// planned by Citus as an INSERT ... SELECT through the coordinator: the
// SELECT, which reads no table, runs there (pg_current_xact_id() is the
// coordinator's transaction's) and its rows go to the repository's shard.
//
// Rows are deleted by their keys, never by the ctid a subquery found: a row
// that another transaction updates while the delete waits for it (a link
// round re-resolving a reference, another publish clearing a target) is
// found again by its key once that transaction commits, and deleted
// (TestPublish_RepublishRemovesReferencesMovedWhileItWaited,
// TestPublish_RemovedPOILosesAReferenceALinkRoundMovedWhileItWaited).
const (
	// lockPublishSQL takes the publish locks of the files ($1
	// repositories, $2 file ids): every publish of a file, Go or SQL, holds
	// its lock from before it writes until it commits, so the publishes of
	// a file commit in the order they took it and each sees every earlier
	// one (migration 27; TestPublish_LastCommittedWinsBetweenGoAndSQL).
	// It reads no table: on Citus the coordinator takes the locks.
	lockPublishSQL = `SELECT relay_lock_files($1::text[], $2::text[]), current_setting('transaction_isolation')`
	// deleteQueuedSQL deletes the SQL API's queued analyses of the files
	// ($1 the repository, $2 file ids): under the files' publish locks,
	// every one that committed before this publish took them.
	deleteQueuedSQL = `DELETE FROM publish_queue WHERE repository = $1 AND file_id = ANY($2::text[])`
	// lockFilesSQL locks the rows of the files ($1 the repository, $2
	// file ids, in file_id order) that exist, in that order. Queued in
	// repository order, one repository after the other, it locks a
	// publish's files in (repository, file_id) order.
	lockFilesSQL = `
	SELECT f.file_id, f.poi_count FROM unnest($2::text[]) WITH ORDINALITY AS u(file, ord)
	CROSS JOIN LATERAL (SELECT file_id, poi_count FROM files WHERE repository = $1 AND file_id = u.file FOR UPDATE) f
	ORDER BY u.ord`
	// upsertFilesSQL creates the files' rows ($1 the repository, $2 file
	// ids, $3 their POI counts) or increases their versions, and returns
	// each one's version and the transaction that published it.
	upsertFilesSQL = `
	INSERT INTO files AS f (repository, file_id, version, poi_count, published_at, publish_xid)
	SELECT $1, file_id, 1, poi_count, now(), pg_current_xact_id()::text::bigint
	FROM unnest($2::text[], $3::int[]) WITH ORDINALITY AS u(file_id, poi_count, ord) ORDER BY ord
	ON CONFLICT (repository, file_id) DO UPDATE
		SET version = f.version + 1, poi_count = excluded.poi_count, published_at = excluded.published_at,
		    publish_xid = excluded.publish_xid
	RETURNING file_id, version, publish_xid`
	// otherOwnerSQL returns the first of the POI ids $2 (of the
	// repository $1) that belongs to a file other than its own ($3) and not
	// published with it (the repository's files $4 of this publish): a
	// file of this publish that had the id no longer has it (ids are unique
	// across a publish's files), so the id moves. The ids are read in one
	// scan (the subquery, kept apart by OFFSET 0), not probed one by one:
	// while the statistics still described a near-empty pois, the planner
	// probed each id through pois_name_idx or pois_file_id_idx by the
	// repository alone, scanning the repository's entries once per id
	// (10-14 s for one publish of 2,500 POIs, with 4 concurrent publishers;
	// docs/scaling.md). Read in one scan, the worst plan reads the
	// repository's entries once. The last column is the id's position
	// in $2.
	otherOwnerSQL = `
	SELECT u.file, p.file_id, p.poi_id, u.ord
	FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(id, file, ord)
	JOIN (SELECT poi_id, file_id FROM pois WHERE repository = $1 AND poi_id = ANY($2::text[]) OFFSET 0) p ON p.poi_id = u.id
	WHERE p.file_id <> u.file
	  AND NOT EXISTS (SELECT FROM unnest($4::text[]) AS f(file) WHERE f.file = p.file_id)
	ORDER BY u.ord LIMIT 1`
	// oldSymbolsSQL reads the symbols of the files ($1 the repository, $2
	// file ids).
	oldSymbolsSQL = `
	SELECT p.file_id, p.poi_id, p.name, p.type, p.line_number, coalesce(p.symbol, ''), p.receiver, p.result, p.fields
	FROM unnest($2::text[]) AS u(file)
	CROSS JOIN LATERAL (SELECT * FROM pois WHERE repository = $1 AND file_id = u.file OFFSET 0) p`
	// deleteReferencesSQL deletes the references (and so the
	// relationships) of the files ($1 the repository, $2 file ids), found
	// through their POIs, before deleteRemovedSQL deletes those that go:
	// the table is keyed by source POI, not by file.
	deleteReferencesSQL = `
	DELETE FROM poi_references t USING (
		SELECT p.poi_id FROM unnest($2::text[]) AS u(file)
		CROSS JOIN LATERAL (SELECT poi_id FROM pois WHERE repository = $1 AND file_id = u.file OFFSET 0) p) d
	WHERE t.repository = $1 AND t.source_poi_id = d.poi_id`
	// deleteRemovedSQL deletes the POIs of the files ($1 the repository,
	// $2 file ids) that are not among their file's POIs in the publish
	// (ids $3 of files $4), and returns their ids. The difference is a set
	// operation: a filter comparing each of the files' rows with every id
	// would take time quadratic in a file's size.
	deleteRemovedSQL = `
	WITH gone AS MATERIALIZED (
		SELECT p.file_id, p.poi_id FROM unnest($2::text[]) AS u(file)
		CROSS JOIN LATERAL (SELECT file_id, poi_id FROM pois WHERE repository = $1 AND file_id = u.file OFFSET 0) p
		EXCEPT SELECT * FROM unnest($4::text[], $3::text[]))
	DELETE FROM pois t USING gone g
	WHERE t.repository = $1 AND t.poi_id = g.poi_id
	RETURNING t.poi_id`
	// clearTargetsSQL clears the target of every reference, of any
	// repository, that resolved to one of the POIs deleteRemovedSQL
	// deleted (ids $2 of the repository $1): the resolve_file jobs of the
	// publish and the linker resolve them again by the names that changed.
	// It spans repositories (on Citus, every shard of poi_references),
	// looked up on poi_references_target_poi_id_idx, and runs after the
	// publish's pipeline, only when POIs went. A reference a link round
	// moved while the update waited for it is found again by its target.
	clearTargetsSQL = `
	UPDATE poi_references SET target_poi_id = NULL, target_file_id = NULL
	WHERE target_repository = $1 AND target_poi_id = ANY($2::text[]) AND target_poi_id IS NOT NULL`
	// storedSQL returns the first of the POI ids $2 (of the repository
	// $1) that is not a POI of its file ($3), and its position in $2.
	storedSQL = `
	SELECT u.file, u.id, u.ord FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(id, file, ord)
	WHERE NOT EXISTS (SELECT FROM pois WHERE repository = $1 AND poi_id = u.id AND file_id = u.file)
	ORDER BY u.ord LIMIT 1`
)

// fileKey identifies a file: its repository and its id.
type fileKey struct{ repo, id string }

func (k fileKey) compare(o fileKey) int {
	return cmp.Or(cmp.Compare(k.repo, o.repo), cmp.Compare(k.id, o.id))
}
