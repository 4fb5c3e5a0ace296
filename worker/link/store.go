package link

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/internal/indexplans"
	"github.com/relay-dev/relay/resolver"
)

// fileKey identifies a file: its repository and its id.
type fileKey struct{ repo, id string }

func (k fileKey) compare(o fileKey) int {
	return cmp.Or(cmp.Compare(k.repo, o.repo), cmp.Compare(k.id, o.id))
}

// splitKeys returns keys' repositories and ids as parallel arrays.
func splitKeys(keys []fileKey) (repos, ids []string) {
	repos, ids = make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		repos[i], ids[i] = k.repo, k.id
	}
	return repos, ids
}

// nameKey is a name looked up in a repository.
type nameKey struct{ repo, name string }

// candidates are the symbols a round's references look up: by repository
// and name, and, for supplied references by symbol, in every repository.
type candidates struct {
	byName map[nameKey][]resolver.Candidate
	// bySymbol holds, for each "sym:<symbol>" name, its POIs in every
	// repository.
	bySymbol map[string]repoCandidates
}

// repoCandidates are candidates with the repository of each.
type repoCandidates struct {
	repos []string
	cands []resolver.Candidate
}

// of returns the candidates, in repository repo, of the names ref looks up
// (resolver.LookupNames).
func (c candidates) of(repo string, ref resolver.Reference) []resolver.Candidate {
	names := resolver.LookupNames(ref)
	if len(names) == 1 {
		return c.byName[nameKey{repo, names[0]}]
	}
	var out []resolver.Candidate
	for _, n := range names {
		out = append(out, c.byName[nameKey{repo, n}]...)
	}
	return out
}

// elsewhere returns the candidates of a supplied reference by symbol in
// the repositories other than repo (resolver.LookupElsewhere).
func (c candidates) elsewhere(repo string, ref resolver.Reference) repoCandidates {
	all := c.bySymbol[ref.Name]
	var out repoCandidates
	for i, r := range all.repos {
		if r != repo {
			out.repos, out.cands = append(out.repos, r), append(out.cands, all.cands[i])
		}
	}
	return out
}

// readCandidates reads the symbols every reference of own and others looks
// up (resolver.LookupNames), by repository and name.
func readCandidates(ctx context.Context, tx pgx.Tx, own map[refKey]stored, others []stored, distributed bool) (candidates, error) {
	set := map[nameKey]bool{}
	for _, s := range own {
		for _, n := range resolver.LookupNames(s.ref()) {
			set[nameKey{s.repo, n}] = true
		}
	}
	for _, s := range others {
		for _, n := range resolver.LookupNames(s.ref()) {
			set[nameKey{s.repo, n}] = true
		}
	}
	cands := candidates{byName: make(map[nameKey][]resolver.Candidate, len(set)), bySymbol: map[string]repoCandidates{}}
	if len(set) == 0 {
		return cands, nil
	}
	b := indexplans.NewUnnamed(tx.Conn().TypeMap())
	queueCandidates(b, set, cands, distributed)
	if err := b.Run(ctx, tx.Conn().PgConn()); err != nil {
		return candidates{}, fmt.Errorf("error looking up %d names: %w", len(set), err)
	}
	return cands, nil
}

// queueCandidates queues the read of the symbols named names into out.
// Import POIs are left out by the query: no relationship type accepts an
// import as its target (resolver.Accepts), and in real code they are the
// most repeated names of all (every file importing fmt has an import POI
// named fmt). The names of supplied references are read by symbol
// ("sym:<symbol>", through pois' symbol index, in every repository) and by
// id ("id:<id>"), each candidate named after the reference name it was read
// for. They are unnamed statements, planned for the round with the tables
// as they are (indexplans.Unnamed): a plan kept from a round that ran while
// pois was small could look names or ids up by the repository alone.
func queueCandidates(b *indexplans.Unnamed, names map[nameKey]bool, out candidates, distributed bool) {
	plainRepos, plain, idRepos, ids := []string{}, []string{}, []string{}, []string{}
	symbolSet := map[string]bool{}
	for n := range names {
		switch {
		case strings.HasPrefix(n.name, resolver.SymbolPrefix):
			symbolSet[strings.TrimPrefix(n.name, resolver.SymbolPrefix)] = true
		case strings.HasPrefix(n.name, resolver.IDPrefix):
			idRepos, ids = append(idRepos, n.repo), append(ids, strings.TrimPrefix(n.name, resolver.IDPrefix))
		default:
			plainRepos, plain = append(plainRepos, n.repo), append(plain, n.name)
		}
	}
	read := func(v [][]byte) error {
		repo := string(v[0])
		c := resolver.Candidate{POIID: string(v[1]), FileID: string(v[2]), Name: string(v[3]), Type: string(v[4]),
			Receiver: string(v[5]), Result: string(v[6]), Fields: string(v[7])}
		k := nameKey{repo, c.Name}
		out.byName[k] = append(out.byName[k], c)
		if strings.HasPrefix(c.Name, resolver.SymbolPrefix) {
			all := out.bySymbol[c.Name]
			all.repos, all.cands = append(all.repos, repo), append(all.cands, c)
			out.bySymbol[c.Name] = all
		}
		return nil
	}
	if len(plain) > 0 {
		b.Queue(lateral(`
			SELECT p.repository, p.poi_id, p.file_id, p.name, p.type, p.receiver, p.result, p.fields
			FROM unnest($1::text[], $2::text[]) AS u(repo, name)
			CROSS JOIN LATERAL (SELECT * FROM pois WHERE repository = u.repo AND name = u.name AND type <> $3 OFFSET 0) p`, distributed),
			plainRepos, plain, resolver.TypeImport).Rows(read)
	}
	if len(symbolSet) > 0 {
		b.Queue(`SELECT repository, poi_id, file_id, $3 || symbol, type, receiver, result, fields FROM pois
			WHERE symbol = ANY($1) AND symbol IS NOT NULL AND type <> $2`,
			slices.Sorted(maps.Keys(symbolSet)), resolver.TypeImport, resolver.SymbolPrefix).Rows(read)
	}
	if len(ids) > 0 {
		// The ids are read in one scan (the subquery, kept apart by OFFSET
		// 0) and matched to their repositories after, not probed one by
		// one: as outbox's otherOwnerSQL, whose per-id probe the planner
		// once ran by the repository alone.
		b.Queue(`
			SELECT p.repository, p.poi_id, p.file_id, $4 || p.poi_id, p.type, p.receiver, p.result, p.fields
			FROM (SELECT * FROM pois WHERE repository = ANY($5) AND poi_id = ANY($2) AND type <> $3 OFFSET 0) p
			JOIN unnest($1::text[], $2::text[]) AS u(repo, id) ON p.repository = u.repo AND p.poi_id = u.id`,
			idRepos, ids, resolver.TypeImport, resolver.IDPrefix, slices.Compact(slices.Sorted(slices.Values(idRepos)))).Rows(read)
	}
}

func fileOf(cands []resolver.Candidate, poiID string) string {
	for _, c := range cands {
		if c.POIID == poiID {
			return c.FileID
		}
	}
	return ""
}

// roundRetention is how long link_rounds keeps a round.
const roundRetention = 24 * time.Hour

// write stores the round's resolutions, deletes the rows it read and
// records the round, in one round trip: the rows' own references inserted
// (or replacing a stored one), each other reference rewritten when its
// target changed, in key order.
func write(ctx context.Context, tx pgx.Tx, held laneSet, round int64, res []resolution, done []row, sum *Summary) error {
	var own, upd columns
	for _, r := range res {
		switch {
		case r.own:
			own.add(r)
			if r.tgt != nil {
				sum.Relationships++
			}
		case !equal(r.tgt, r.target) || (r.tgt != nil && r.tgtRepo != r.targetRepo):
			upd.add(r)
			if r.tgt != nil {
				sum.Relationships++
			}
		}
	}
	b := &pgx.Batch{}
	if len(own.src) > 0 {
		b.Queue(`
			INSERT INTO poi_references AS r (repository, source_poi_id, source_file_id, name, key, type, resolved_round,
			                                 target_poi_id, target_file_id, target_repository, job_id, resolved_at, depends)
			SELECT u.repo, u.src, u.file, u.name, u.key, u.type, $10, u.tgt, u.tgt_file, u.tgt_repo, u.job,
			       CASE WHEN u.tgt IS NULL THEN NULL ELSE now() END,
			       CASE WHEN u.deps = '' THEN NULL ELSE string_to_array(u.deps, ' ') END
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[],
			            $11::text[], $12::text[])
				AS u(src, file, name, key, type, tgt, tgt_file, job, deps, repo, tgt_repo)
			ON CONFLICT (repository, source_poi_id, type, name) DO UPDATE
				SET target_poi_id = excluded.target_poi_id, target_file_id = excluded.target_file_id,
				    target_repository = excluded.target_repository,
				    job_id = excluded.job_id, resolved_at = excluded.resolved_at, resolved_round = excluded.resolved_round`,
			own.src, own.file, own.name, keysOf(own.name), own.typ, own.tgt, own.tgtFile, own.job, own.deps, round,
			own.repo, own.tgtRepo)
	}
	if len(upd.src) > 0 {
		b.Queue(`
			UPDATE poi_references r
			SET target_poi_id = u.tgt, target_file_id = u.tgt_file, target_repository = u.tgt_repo, resolved_round = $6,
			    resolved_at = CASE WHEN u.tgt IS NULL THEN NULL ELSE now() END
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $7::text[], $8::text[])
				AS u(src, name, type, tgt, tgt_file, repo, tgt_repo)
			WHERE r.repository = u.repo AND r.source_poi_id = u.src AND r.type = u.type AND r.name = u.name`,
			upd.src, upd.name, upd.typ, upd.tgt, upd.tgtFile, round, upd.repo, upd.tgtRepo)
	}
	jobs, lns := make([]int64, len(done)), make([]int32, len(done))
	for i, r := range done {
		jobs[i], lns[i] = r.jobID, int32(r.lane)
	}
	b.Queue(`DELETE FROM link_queue q USING unnest($1::bigint[], $2::smallint[]) AS u(job, lane) WHERE q.job_id = u.job AND q.lane = u.lane`,
		jobs, lns)
	fresh := make([]float64, len(sum.Final))
	for i, f := range sum.Final {
		fresh[i] = f.Freshness.Seconds()
	}
	b.Queue(`UPDATE link_rounds SET linked_at = clock_timestamp(), files = $2, reresolved = $3, freshness_seconds = $4 WHERE id = $1`,
		round, sum.Files, sum.Reresolved, fresh)
	// Only rounds holding lane 0 delete old rounds, one at a time, so that
	// rounds never wait for each other's deletes.
	if held[0] {
		b.Queue(`DELETE FROM link_rounds WHERE linked_at < now() - make_interval(secs => $1)`, roundRetention.Seconds())
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("error writing %d references and %d re-resolved ones: %w", len(own.src), len(upd.src), err)
	}
	return nil
}

func equal(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// columns are resolutions as parallel arrays for unnest.
type columns struct {
	repo, src, file, name, typ, deps, tgtRepo []string
	tgt, tgtFile                              []*string
	job                                       []int64
}

func (c *columns) add(r resolution) {
	c.repo, c.tgtRepo = append(c.repo, r.repo), append(c.tgtRepo, r.tgtRepo)
	c.src, c.file, c.name, c.typ = append(c.src, r.src), append(c.file, r.file), append(c.name, r.name), append(c.typ, r.typ)
	c.tgt, c.tgtFile, c.job = append(c.tgt, r.tgt), append(c.tgtFile, r.tgtFile), append(c.job, r.jobID)
	c.deps = append(c.deps, dependsOf(r.ref()))
}
