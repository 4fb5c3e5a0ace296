package link

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/resolver"
)

// readCandidates reads the symbols every reference of own and others looks
// up (resolver.LookupNames), by name.
func readCandidates(ctx context.Context, tx pgx.Tx, own map[refKey]stored, others []stored) (map[string][]resolver.Candidate, error) {
	set := map[string]bool{}
	for _, s := range own {
		for _, n := range resolver.LookupNames(s.ref()) {
			set[n] = true
		}
	}
	for _, s := range others {
		for _, n := range resolver.LookupNames(s.ref()) {
			set[n] = true
		}
	}
	cands := make(map[string][]resolver.Candidate, len(set))
	if len(set) == 0 {
		return cands, nil
	}
	b := &pgx.Batch{}
	queueCandidates(b, set, cands)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("error looking up %d names: %w", len(set), err)
	}
	return cands, nil
}

// queueCandidates queues the read of the symbols named names into out.
// Import POIs are left out by the query: no relationship type accepts an
// import as its target (resolver.Accepts), and in real code they are the
// most repeated names of all (every file importing fmt has an import POI
// named fmt). The names of supplied references are read by symbol
// ("sym:<symbol>", through pois' symbol index) and by id ("id:<id>"), each
// candidate named after the reference name it was read for.
func queueCandidates(b *pgx.Batch, names map[string]bool, out map[string][]resolver.Candidate) {
	plain, symbols, ids := []string{}, []string{}, []string{}
	for n := range names {
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
		var c resolver.Candidate
		_, err := pgx.ForEachRow(rows, []any{&c.POIID, &c.FileID, &c.Name, &c.Type, &c.Receiver, &c.Result, &c.Fields}, func() error {
			out[c.Name] = append(out[c.Name], c)
			return nil
		})
		if err != nil {
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
func write(ctx context.Context, tx pgx.Tx, round int64, res []resolution, done []row, sum *Summary) error {
	var own, upd columns
	for _, r := range res {
		switch {
		case r.own:
			own.add(r)
			if r.tgt != nil {
				sum.Relationships++
			}
		case !equal(r.tgt, r.target):
			upd.add(r)
			if r.tgt != nil {
				sum.Relationships++
			}
		}
	}
	b := &pgx.Batch{}
	if len(own.src) > 0 {
		b.Queue(`
			INSERT INTO poi_references AS r (source_poi_id, source_file_id, name, key, type, resolved_round,
			                                 target_poi_id, target_file_id, job_id, resolved_at, depends)
			SELECT u.src, u.file, u.name, u.key, u.type, $10, u.tgt, u.tgt_file, u.job,
			       CASE WHEN u.tgt IS NULL THEN NULL ELSE now() END,
			       CASE WHEN u.deps = '' THEN NULL ELSE string_to_array(u.deps, ' ') END
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[])
				AS u(src, file, name, key, type, tgt, tgt_file, job, deps)
			ON CONFLICT (source_poi_id, type, name) DO UPDATE
				SET target_poi_id = excluded.target_poi_id, target_file_id = excluded.target_file_id,
				    job_id = excluded.job_id, resolved_at = excluded.resolved_at, resolved_round = excluded.resolved_round`,
			own.src, own.file, own.name, keysOf(own.name), own.typ, own.tgt, own.tgtFile, own.job, own.deps, round)
	}
	if len(upd.src) > 0 {
		b.Queue(`
			UPDATE poi_references r
			SET target_poi_id = u.tgt, target_file_id = u.tgt_file, resolved_round = $6,
			    resolved_at = CASE WHEN u.tgt IS NULL THEN NULL ELSE now() END
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(src, name, type, tgt, tgt_file)
			WHERE r.source_poi_id = u.src AND r.type = u.type AND r.name = u.name`,
			upd.src, upd.name, upd.typ, upd.tgt, upd.tgtFile, round)
	}
	jobs := make([]int64, len(done))
	for i, r := range done {
		jobs[i] = r.jobID
	}
	b.Queue(`DELETE FROM link_queue WHERE job_id = ANY($1)`, jobs)
	fresh := make([]float64, len(sum.Final))
	for i, f := range sum.Final {
		fresh[i] = f.Freshness.Seconds()
	}
	b.Queue(`UPDATE link_rounds SET linked_at = now(), files = $2, reresolved = $3, freshness_seconds = $4 WHERE id = $1`,
		round, sum.Files, sum.Reresolved, fresh)
	b.Queue(`DELETE FROM link_rounds WHERE linked_at < now() - make_interval(secs => $1)`, roundRetention.Seconds())
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
	src, file, name, typ, deps []string
	tgt, tgtFile               []*string
	job                        []int64
}

func (c *columns) add(r resolution) {
	c.src, c.file, c.name, c.typ = append(c.src, r.src), append(c.file, r.file), append(c.name, r.name), append(c.typ, r.typ)
	c.tgt, c.tgtFile, c.job = append(c.tgt, r.tgt), append(c.tgtFile, r.tgtFile), append(c.job, r.jobID)
	c.deps = append(c.deps, dependsOf(r.ref()))
}
