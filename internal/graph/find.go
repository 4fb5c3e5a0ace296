package graph

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/internal/citus"
	"github.com/relay-dev/relay/internal/nearname"
)

// MatchedBy says how a target matched its candidates.
type MatchedBy string

const (
	ByID        MatchedBy = "id"
	BySymbol    MatchedBy = "symbol"
	ByFileName  MatchedBy = "file:name"
	ByQualified MatchedBy = "qualified name"
	ByName      MatchedBy = "name"
)

// everyRepository is the repositories that have files, read from the start
// of files_pkey one probe per repository (a loose index scan): a condition
// repository = ANY(it) then probes pois_pkey, pois_name_idx or
// pois_file_id_idx once per repository instead of reading a whole index.
const everyRepository = `ARRAY(WITH RECURSIVE r(repo) AS (
		SELECT min(repository) FROM files
		UNION ALL
		SELECT (SELECT min(repository) FROM files WHERE repository > r.repo) FROM r WHERE r.repo IS NOT NULL)
	SELECT repo FROM r WHERE repo IS NOT NULL)`

// everyRepositoryDistributed is everyRepository on distributed tables
// (Citus), which plans a recursive CTE only with a condition on the
// repository ("recursive CTEs are only supported when they contain a filter
// on the distribution column"): the repositories that have files, read on
// every shard at once and gathered on the coordinator, which then sends the
// lookup, with them, to every shard.
const everyRepositoryDistributed = `ARRAY(SELECT DISTINCT repository FROM files)`

const itemColumns = `repository, poi_id, name, type, file_id, line_number, coalesce(symbol, '')`

// repositories is the SQL for the repositories a lookup searches, and its
// arguments: the one given, or every repository (everyRepository, or
// everyRepositoryDistributed on distributed tables, which it asks q about).
func repositories(ctx context.Context, q Querier, repository *string) (string, []any, error) {
	if repository != nil {
		return `ARRAY[$1]::text[]`, []any{*repository}, nil
	}
	dist, err := citus.TablesDistributed(ctx, q)
	if err != nil {
		return "", nil, err
	}
	if dist {
		return everyRepositoryDistributed, []any{}, nil
	}
	return everyRepository, []any{}, nil
}

// Find returns the POIs target names, trying in turn: a POI id, a symbol,
// "file:name" (a file id and a name), a qualified name ("Tree.pipeline",
// "parse.(*Tree).pipeline": the end of a symbol, pointer receivers written
// or not), and a name. The first way that matches anything wins; none
// matching returns no items. repository nil searches every repository.
func Find(ctx context.Context, q Querier, target string, repository *string) ([]Item, MatchedBy, error) {
	repos, args, err := repositories(ctx, q, repository)
	if err != nil {
		return nil, "", err
	}
	n := len(args)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	reset := func() { args = args[:n] }
	lookups := []struct {
		by    MatchedBy
		where func() (string, bool)
	}{
		{ByID, func() (string, bool) { return "repository = ANY(" + repos + ") AND poi_id = " + arg(target), true }},
		{BySymbol, func() (string, bool) {
			return "symbol = " + arg(target) + " AND repository = ANY(" + repos + ")", true
		}},
		{ByFileName, func() (string, bool) {
			i := strings.LastIndexByte(target, ':')
			if i <= 0 || i == len(target)-1 {
				return "", false
			}
			return "repository = ANY(" + repos + ") AND file_id = " + arg(target[:i]) + " AND name = " + arg(target[i+1:]), true
		}},
		{ByQualified, func() (string, bool) {
			i := strings.LastIndexByte(target, '.')
			if i <= 0 || i == len(target)-1 {
				return "", false
			}
			return "repository = ANY(" + repos + ") AND name = " + arg(target[i+1:]) + " AND symbol IS NOT NULL", true
		}},
		{ByName, func() (string, bool) { return "repository = ANY(" + repos + ") AND name = " + arg(target), true }},
	}
	for _, l := range lookups {
		reset()
		where, ok := l.where()
		if !ok {
			continue
		}
		items, err := queryItems(ctx, q, `SELECT `+itemColumns+` FROM pois WHERE `+where+
			` ORDER BY repository, file_id, line_number, poi_id LIMIT 1000`, args...)
		if err != nil {
			return nil, "", fmt.Errorf("error finding POIs by %s %q: %w", l.by, target, err)
		}
		if l.by == ByQualified {
			items = slices.DeleteFunc(items, func(it Item) bool { return !qualifies(it.Symbol, target) })
		}
		if len(items) > 0 {
			return items, l.by, nil
		}
	}
	return nil, "", nil
}

// qualifies reports whether symbol ends with the qualified name q, read
// with pointer receivers' "(*" and ")" left out on both sides.
func qualifies(symbol, q string) bool {
	plain := strings.NewReplacer("(*", "", ")", "")
	s, q := plain.Replace(symbol), plain.Replace(q)
	return s == q || strings.HasSuffix(s, "."+q) || strings.HasSuffix(s, "/"+q)
}

func queryItems(ctx context.Context, q Querier, sql string, args ...any) ([]Item, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return collectItems(rows)
}

// collectItems reads rows of itemColumns.
func collectItems(rows pgx.Rows) ([]Item, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Item, error) {
		var it Item
		err := row.Scan(&it.Repository, &it.POIID, &it.Name, &it.Type, &it.FileID, &it.Line, &it.Symbol)
		return it, err
	})
}

// suggestRange is how many POIs Suggest reads on each side of the target
// per repository and spelling: at most 4*suggestRange rows a repository.
const suggestRange = 500

// Suggest returns up to five names of POIs near target's last segment (its
// name after any "file:" and qualifier): equal but for case, containing it,
// or within a small edit distance, the nearest first. It is for the error
// path, and bounded: in each repository searched it reads, on
// pois_name_idx (repository, name), the suggestRange names (of POIs other
// than imports) just before and just after the segment that start with
// its first letter, for each case of that letter (C collation: byte
// order). So it can miss a near name that starts with another letter
// ("Parse" for "Barse"; a case difference past the first letter is found
// only while few names sort between them), one that contains the segment
// past its first letter ("parseTree" for "Tree"), and one further than
// suggestRange POIs from the segment in name order (a typo in the second
// letter among many names with the same first letter);
// TestSuggest_NearNamesFromTheIndex shows each.
func Suggest(ctx context.Context, q Querier, target string, repository *string) ([]string, error) {
	base := target
	if i := strings.LastIndexAny(base, ":."); i >= 0 && i < len(base)-1 {
		base = base[i+1:]
	}
	if base == "" {
		return nil, nil
	}
	// The segment, and it with the other case of its first letter; per
	// spelling, the range of names starting with its first letter (every
	// such text sorts in [letter, letter || U+10FFFF)), read from the
	// spelling down and up.
	first, size := utf8.DecodeRuneInString(base)
	firsts := []rune{first}
	if other := unicode.ToUpper(first); other != first {
		firsts = append(firsts, other)
	} else if other := unicode.ToLower(first); other != first {
		firsts = append(firsts, other)
	}
	var spellings, los, his []string
	for _, r := range firsts {
		spellings = append(spellings, string(r)+base[size:])
		los, his = append(los, string(r)), append(his, string(r)+"\U0010FFFF")
	}
	repos, args, err := repositories(ctx, q, repository)
	if err != nil {
		return nil, err
	}
	args = append(args, los, his, spellings, suggestRange)
	n := len(args)
	dist, err := citus.TablesDistributed(ctx, q)
	if err != nil {
		return nil, err
	}
	var rows pgx.Rows
	if dist {
		// Citus cannot push down the LATERAL probe per repository (a
		// correlated subquery over unnest): the suggestRange names of
		// each repository on either side of each spelling are numbered by
		// row_number() partitioned by repository, the distribution
		// column, which each shard computes on its own; the coordinator
		// gathers them. The same names as the probe's.
		args = args[:n-4]
		arg := func(v any) string {
			args = append(args, v)
			return fmt.Sprintf("$%d", len(args))
		}
		lim := arg(suggestRange)
		var parts []string
		for i, at := range spellings {
			a := arg(at)
			for _, side := range []struct{ cond, order string }{
				{`name >= ` + a + ` AND name < ` + arg(his[i]), `name`},
				{`name >= ` + arg(los[i]) + ` AND name < ` + a, `name DESC`},
			} {
				parts = append(parts, `SELECT name FROM (SELECT name,
					row_number() OVER (PARTITION BY repository ORDER BY `+side.order+`) AS rank
				FROM pois WHERE repository = ANY(`+repos+`) AND `+side.cond+` AND type <> 'import') n
				WHERE rank <= `+lim)
			}
		}
		rows, err = q.Query(ctx, `SELECT DISTINCT name FROM (`+strings.Join(parts, "\n			UNION ALL\n			")+`) p`, args...)
	} else {
		rows, err = q.Query(ctx, fmt.Sprintf(`SELECT DISTINCT p.name FROM unnest(%[1]s) AS r(repo)
			CROSS JOIN unnest($%[2]d::text[], $%[3]d::text[], $%[4]d::text[]) AS s(lo, hi, at)
			CROSS JOIN LATERAL (
				(SELECT name FROM pois WHERE repository = r.repo AND name >= s.at AND name < s.hi AND type <> 'import'
				 ORDER BY name LIMIT $%[5]d)
				UNION ALL
				(SELECT name FROM pois WHERE repository = r.repo AND name >= s.lo AND name < s.at AND type <> 'import'
				 ORDER BY name DESC LIMIT $%[5]d)) p`, repos, n-3, n-2, n-1, n), args...)
	}
	if err != nil {
		return nil, fmt.Errorf("error looking for names near %q: %w", base, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error looking for names near %q: %w", base, err)
	}
	lb := strings.ToLower(base)
	limit := max(2, utf8.RuneCountInString(base)/3)
	type scored struct {
		name string
		d    int
	}
	var near []scored
	for _, n := range names {
		ln := strings.ToLower(n)
		d := nearname.Distance(ln, lb)
		if d > limit && !strings.Contains(ln, lb) && !strings.Contains(lb, ln) {
			continue
		}
		if len(ln) < 3 && d > 0 {
			continue // a one- or two-letter name is near everything
		}
		near = append(near, scored{n, d})
	}
	slices.SortFunc(near, func(a, b scored) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.name, b.name)) })
	var out []string
	for _, s := range near[:min(5, len(near))] {
		out = append(out, s.name)
	}
	return out, nil
}
