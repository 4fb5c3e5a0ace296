package graph

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/relay-dev/relay/internal/citus"
)

// Edge is one relationship of a neighbourhood: From references To.
type Edge struct {
	From Key `json:"from"`
	To   Key `json:"to"`
}

// Key names a POI: its repository and id.
type Key struct {
	Repository string `json:"repository"`
	POIID      string `json:"poi_id"`
}

// Key is the item's key.
func (it Item) Key() Key { return Key{it.Repository, it.POIID} }

// Neighbourhood is a POI's relationships of one type to a depth, bounded:
// what the console lists and draws.
type Neighbourhood struct {
	Root Item `json:"root"`
	// Callers and Callees are the root's direct callers and callees (at
	// most Limits.Direct each, read in the index's order when it has more),
	// sorted by file and line.
	Callers []Item `json:"callers"`
	Callees []Item `json:"callees"`
	// MoreCallers and MoreCallees are set when the root has more than
	// Limits.Direct of them.
	MoreCallers bool `json:"more_callers"`
	MoreCallees bool `json:"more_callees"`
	// Items are every item of the neighbourhood, the root first, then by
	// distance from the root: its direct callers and callees, then their
	// callers and callees. Edges are the relationships among Items read on
	// the way (each once).
	Items []Item `json:"items"`
	Edges []Edge `json:"edges"`
	// Capped is set when the neighbourhood has more than Items: a level
	// had more items than Limits allow.
	Capped bool `json:"capped"`
}

// Limits bound a neighbourhood, so that reading one costs the same at any
// degree.
type Limits struct {
	// Direct is the most direct callers, and the most direct callees,
	// read.
	Direct int
	// Items is the most items in all (the root included).
	Items int
	// PerItem is the most callers (or callees) read for each item at
	// depth 1.
	PerItem int
}

// ReadNeighbourhood returns root's relType relationships to depth 2, both
// ways, within lim: one index probe per item (poi_references_target_poi_id_idx
// for callers, poi_references_pkey for callees, pois_pkey for each item
// reached), each bounded by a LIMIT, so a POI with a million callers costs
// what one with lim.Direct does. Depth 2 follows only the direction of
// depth 1: callers of callers, callees of callees.
func ReadNeighbourhood(ctx context.Context, q Querier, root Item, relType string, lim Limits) (*Neighbourhood, error) {
	if !slices.Contains(RelTypes, relType) {
		return nil, fmt.Errorf("relationship type %q is not one of %s", relType, strings.Join(RelTypes, ", "))
	}
	n := &Neighbourhood{Root: root, Callers: []Item{}, Callees: []Item{}, Items: []Item{root}, Edges: []Edge{}}
	seen := map[Key]bool{root.Key(): true}
	edgeSeen := map[Edge]bool{}
	addEdge := func(e Edge) {
		if !edgeSeen[e] && seen[e.From] && seen[e.To] {
			edgeSeen[e] = true
			n.Edges = append(n.Edges, e)
		}
	}
	addItem := func(it Item) bool {
		if seen[it.Key()] {
			return true
		}
		if len(n.Items) >= lim.Items {
			n.Capped = true
			return false
		}
		seen[it.Key()] = true
		n.Items = append(n.Items, it)
		return true
	}
	type level struct {
		dir   Direction
		items []Item
		more  bool
	}
	var direct [2]level
	for i, dir := range []Direction{Callers, Callees} {
		reached, err := neighbours(ctx, q, []Item{root}, dir, relType, lim.Direct)
		if err != nil {
			return nil, err
		}
		items := reached[root.Key()]
		more := len(items) > lim.Direct
		items = items[:min(len(items), lim.Direct)]
		direct[i] = level{dir, items, more}
	}
	n.Callers, n.MoreCallers = direct[0].items, direct[0].more
	n.Callees, n.MoreCallees = direct[1].items, direct[1].more
	// Depth 1 first, alternating callers and callees so that a cap keeps
	// some of each.
	for i := 0; i < max(len(n.Callers), len(n.Callees)); i++ {
		for _, l := range direct {
			if i < len(l.items) && addItem(l.items[i]) {
				addEdge(orient(l.dir, root.Key(), l.items[i].Key()))
			}
		}
	}
	n.Capped = n.Capped || direct[0].more || direct[1].more
	for _, l := range direct {
		var from []Item
		for _, it := range l.items {
			if seen[it.Key()] {
				from = append(from, it)
			}
		}
		if len(from) == 0 {
			continue
		}
		reached, err := neighbours(ctx, q, from, l.dir, relType, lim.PerItem)
		if err != nil {
			return nil, err
		}
		for _, f := range from {
			next := reached[f.Key()]
			if len(next) > lim.PerItem {
				n.Capped = true
				next = next[:lim.PerItem]
			}
			for _, it := range next {
				if addItem(it) {
					addEdge(orient(l.dir, f.Key(), it.Key()))
				}
			}
		}
	}
	return n, nil
}

// orient is the edge between an item and one it reached going dir.
func orient(dir Direction, from, reached Key) Edge {
	if dir == Callers {
		return Edge{From: reached, To: from}
	}
	return Edge{From: from, To: reached}
}

// neighbours returns, for each of items, up to limit+1 items with a relType
// relationship to it (Callers) or from it (Callees), sorted by file and line:
// one statement, a LATERAL probe per item, each stopped by its LIMIT (which
// items of a hub's are read is the index's order, not file and line). The
// +1 says whether there are more.
func neighbours(ctx context.Context, q Querier, items []Item, dir Direction, relType string, limit int) (map[Key][]Item, error) {
	dist, err := citus.TablesDistributed(ctx, q)
	if err != nil {
		return nil, err
	}
	if dist {
		return neighboursDistributed(ctx, q, items, dir, relType, limit)
	}
	repos := make([]string, len(items))
	ids := make([]string, len(items))
	for i, it := range items {
		repos[i], ids[i] = it.Repository, it.POIID
	}
	// No DISTINCT inside the LATERAL: it would read every edge of a hub
	// before the LIMIT applies (403 ms for a POI with 100,000 callers).
	// One POI referencing another twice (under two names) gives two rows;
	// they are merged below, and twice the limit is read so that such
	// pairs rarely cost an item.
	edges := `SELECT r.repository AS repo, r.source_poi_id AS poi FROM poi_references r
			WHERE r.target_repository = f.repo AND r.target_poi_id = f.poi AND r.type = $3`
	if dir == Callees {
		edges = `SELECT r.target_repository AS repo, r.target_poi_id AS poi FROM poi_references r
			WHERE r.repository = f.repo AND r.source_poi_id = f.poi AND r.type = $3 AND r.target_poi_id IS NOT NULL`
	}
	rows, err := q.Query(ctx, `SELECT f.repo, f.poi, p.repository, p.poi_id, p.name, p.type, p.file_id, p.line_number, coalesce(p.symbol, '')
		FROM unnest($1::text[], $2::text[]) AS f(repo, poi)
		CROSS JOIN LATERAL (`+edges+` LIMIT $4) e
		JOIN pois p ON p.repository = e.repo AND p.poi_id = e.poi
		ORDER BY f.repo, f.poi, p.file_id, p.line_number, p.repository, p.poi_id`, repos, ids, relType, 2*(limit+1))
	if err != nil {
		return nil, fmt.Errorf("error reading the %s of %d POIs: %w", dir, len(items), err)
	}
	out := map[Key][]Item{}
	type pair struct{ from, to Key }
	dup := map[pair]bool{}
	defer rows.Close()
	for rows.Next() {
		var from Key
		var it Item
		if err := rows.Scan(&from.Repository, &from.POIID, &it.Repository, &it.POIID, &it.Name, &it.Type, &it.FileID, &it.Line, &it.Symbol); err != nil {
			return nil, fmt.Errorf("error reading the %s of %d POIs: %w", dir, len(items), err)
		}
		if k := (pair{from, it.Key()}); !dup[k] && len(out[from]) <= limit {
			dup[k] = true
			out[from] = append(out[from], it)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading the %s of %d POIs: %w", dir, len(items), err)
	}
	return out, nil
}

// neighboursDistributed is neighbours on distributed tables (Citus), which
// cannot push down the LATERAL probe (a correlated subquery on
// poi_references joined to pois off the distribution column): per item, the
// edges by a statement of their own (callees name the repository, so Citus
// routes it to one shard; callers name target_repository, so it runs on
// every shard, each stopped by the LIMIT, and the coordinator keeps LIMIT
// rows), then the POIs reached by one simple multi-shard read, sorted by
// PostgreSQL as neighbours sorts them. It gives what neighbours gives.
func neighboursDistributed(ctx context.Context, q Querier, items []Item, dir Direction, relType string, limit int) (map[Key][]Item, error) {
	fail := func(err error) (map[Key][]Item, error) {
		return nil, fmt.Errorf("error reading the %s of %d POIs: %w", dir, len(items), err)
	}
	stmt := `SELECT r.repository, r.source_poi_id FROM poi_references r
		WHERE r.target_repository = $1 AND r.target_poi_id = $2 AND r.type = $3 LIMIT $4`
	if dir == Callees {
		stmt = `SELECT r.target_repository, r.target_poi_id FROM poi_references r
		WHERE r.repository = $1 AND r.source_poi_id = $2 AND r.type = $3 AND r.target_poi_id IS NOT NULL LIMIT $4`
	}
	type edge struct{ from, to Key }
	var edges []edge
	var repos, ids []string
	for _, it := range items {
		rows, err := q.Query(ctx, stmt, it.Repository, it.POIID, relType, 2*(limit+1))
		if err != nil {
			return fail(err)
		}
		for rows.Next() {
			var to Key
			if err := rows.Scan(&to.Repository, &to.POIID); err != nil {
				rows.Close()
				return fail(err)
			}
			edges = append(edges, edge{it.Key(), to})
			repos, ids = append(repos, to.Repository), append(ids, to.POIID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fail(err)
		}
	}
	out := map[Key][]Item{}
	if len(edges) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT p.repository, p.poi_id, p.name, p.type, p.file_id, p.line_number, coalesce(p.symbol, '')
		FROM pois p WHERE p.repository = ANY($1::text[]) AND p.poi_id = ANY($2::text[])
		ORDER BY p.file_id, p.line_number, p.repository, p.poi_id`, repos, ids)
	if err != nil {
		return fail(err)
	}
	reached, err := collectItems(rows)
	if err != nil {
		return fail(err)
	}
	rank := map[Key]int{}
	for i, it := range reached {
		rank[it.Key()] = i
	}
	// Edges to POIs that are not there are left out, as the join leaves
	// them out; the rest in neighbours' order: by item, then file and
	// line (the order of the read above).
	edges = slices.DeleteFunc(edges, func(e edge) bool { _, ok := rank[e.to]; return !ok })
	slices.SortStableFunc(edges, func(a, b edge) int { return cmp.Compare(rank[a.to], rank[b.to]) })
	type pair struct{ from, to Key }
	dup := map[pair]bool{}
	for _, e := range edges {
		if k := (pair{e.from, e.to}); !dup[k] && len(out[e.from]) <= limit {
			dup[k] = true
			out[e.from] = append(out[e.from], reached[rank[e.to]])
		}
	}
	return out, nil
}

// Complete returns up to limit POIs (imports left out) whose name starts
// with prefix, or with prefix's first letter in the other case, or whose
// symbol starts with prefix: the exact names first, then the shortest. It
// reads one range of pois_name_idx per repository and spelling, and one of
// pois_symbol_idx, each stopped by a LIMIT: what it reads grows with the
// imports it skips in a name's range, not with the table.
func Complete(ctx context.Context, q Querier, prefix string, repository *string, limit int) ([]Item, error) {
	if prefix == "" || limit < 1 {
		return []Item{}, nil
	}
	spellings := []string{prefix}
	if r, size := utf8.DecodeRuneInString(prefix); unicode.IsLetter(r) {
		other := unicode.ToUpper(r)
		if other == r {
			other = unicode.ToLower(r)
		}
		if other != r {
			spellings = append(spellings, string(other)+prefix[size:])
		}
	}
	// Under the C collation of name and symbol (migration 18), every text
	// starting with p sorts in [p, p || U+10FFFF).
	his := make([]string, len(spellings))
	for i, s := range spellings {
		his[i] = s + "\U0010FFFF"
	}
	repos, args, err := repositories(ctx, q, repository)
	if err != nil {
		return nil, err
	}
	args = append(args, spellings, his, limit, prefix, prefix+"\U0010FFFF")
	n := len(args)
	const cols = `repository, poi_id, name, type, file_id, line_number, coalesce(symbol, '') AS symbol`
	dist, err := citus.TablesDistributed(ctx, q)
	if err != nil {
		return nil, err
	}
	if dist {
		return completeDistributed(ctx, q, prefix, spellings, his, repos, args[:n-5], limit)
	}
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT repository, poi_id, name, type, file_id, line_number, symbol FROM (
		SELECT p.* FROM unnest(%[1]s) AS r(repo)
		CROSS JOIN unnest($%[2]d::text[], $%[3]d::text[]) AS s(lo, hi)
		CROSS JOIN LATERAL (SELECT `+cols+` FROM pois
			WHERE repository = r.repo AND name >= s.lo AND name < s.hi AND type <> 'import'
			ORDER BY name, poi_id LIMIT $%[4]d) p
		UNION
		(SELECT `+cols+` FROM pois
			WHERE symbol >= $%[5]d AND symbol < $%[6]d AND repository = ANY(%[1]s)
			ORDER BY pois.symbol LIMIT $%[4]d)) m
		ORDER BY name <> $%[5]d, length(name), name, repository, file_id, line_number, poi_id
		LIMIT $%[4]d`, repos, n-4, n-3, n-2, n-1, n), args...)
	if err != nil {
		return nil, fmt.Errorf("error completing %q: %w", prefix, err)
	}
	items, err := collectItems(rows)
	if err != nil {
		return nil, fmt.Errorf("error completing %q: %w", prefix, err)
	}
	return items, nil
}

// completeDistributed is Complete on distributed tables (Citus), which
// cannot push down its LATERAL probe per repository (a correlated subquery
// over unnest): per spelling, the first limit names of each repository by
// row_number() partitioned by repository, the distribution column, which
// each shard computes on its own; with the symbols' range (LIMIT on every
// shard, then on the coordinator), the coordinator unions and sorts them.
// It gives what Complete gives on plain PostgreSQL.
func completeDistributed(ctx context.Context, q Querier, prefix string, spellings, his []string, repos string, args []any, limit int) ([]Item, error) {
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	const cols = `repository, poi_id, name, type, file_id, line_number, symbol`
	var parts []string
	lim := arg(limit)
	for i, lo := range spellings {
		parts = append(parts, `SELECT `+cols+` FROM (
			SELECT repository, poi_id, name, type, file_id, line_number, coalesce(symbol, '') AS symbol,
				row_number() OVER (PARTITION BY repository ORDER BY name, poi_id) AS rank
			FROM pois WHERE repository = ANY(`+repos+`) AND name >= `+arg(lo)+` AND name < `+arg(his[i])+` AND type <> 'import') n
			WHERE rank <= `+lim)
	}
	p := arg(prefix)
	parts = append(parts, `(SELECT repository, poi_id, name, type, file_id, line_number, coalesce(symbol, '') AS symbol FROM pois
			WHERE symbol >= `+p+` AND symbol < `+arg(prefix+"\U0010FFFF")+` AND repository = ANY(`+repos+`)
			ORDER BY pois.symbol LIMIT `+lim+`)`)
	rows, err := q.Query(ctx, `SELECT `+cols+` FROM (`+strings.Join(parts, "\n		UNION\n		")+`) m
		ORDER BY name <> `+p+`, length(name), name, repository, file_id, line_number, poi_id
		LIMIT `+lim, args...)
	if err != nil {
		return nil, fmt.Errorf("error completing %q: %w", prefix, err)
	}
	items, err := collectItems(rows)
	if err != nil {
		return nil, fmt.Errorf("error completing %q: %w", prefix, err)
	}
	return items, nil
}
