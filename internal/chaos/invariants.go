package chaos

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Invariants are the counts checked after every scenario. Every field must
// be zero except the totals.
type Invariants struct {
	// Totals, for the report.
	POIsStored    int `json:"pois_stored"`
	FailedPOIRows int `json:"failed_poi_rows"`
	Relationships int `json:"relationships"`
	Jobs          int `json:"jobs"`

	// Lost.
	ValidMissing       int `json:"valid_pois_missing"`
	MalformedMissing   int `json:"malformed_pois_without_failed_row"`
	RelationshipsLost  int `json:"relationships_missing"`
	JobsNotCompleted   int `json:"jobs_not_completed"`
	JobsRunning        int `json:"jobs_running"`
	JobsDiscarded      int `json:"jobs_discarded"`
	DeadLetteredItems  int `json:"dead_lettered_items"`
	UnexpectedPOIs     int `json:"unexpected_pois"`
	ValidInFailedPOIs  int `json:"valid_pois_in_failed_pois"`
	MalformedDuplicate int `json:"malformed_extra_failed_rows"`
	FailedUnexpected   int `json:"failed_rows_unaccounted"`
	RelationshipsDup   int `json:"relationships_duplicated"`
	RelationshipsExtra int `json:"relationships_unexpected"`
}

// Lost is everything published that did not arrive: valid POIs missing from
// the symbol table, malformed POIs with no failed_pois row, expected
// relationships missing, and batches never completed.
func (v Invariants) Lost() int {
	return v.ValidMissing + v.MalformedMissing + v.RelationshipsLost + v.JobsNotCompleted
}

// Duplicated is everything that arrived twice or should not have arrived:
// extra failed_pois rows, valid POIs dead-lettered, duplicate or unexpected
// relationships, unexpected symbols.
func (v Invariants) Duplicated() int {
	return v.MalformedDuplicate + v.FailedUnexpected + v.ValidInFailedPOIs + v.RelationshipsDup + v.RelationshipsExtra + v.UnexpectedPOIs
}

// Violations names every non-zero check.
func (v Invariants) Violations() []string {
	var out []string
	for _, c := range []struct {
		name string
		n    int
	}{
		{"valid POIs missing from pois", v.ValidMissing},
		{"malformed POIs without a failed_pois row", v.MalformedMissing},
		{"expected relationships missing", v.RelationshipsLost},
		{"resolve_file jobs not completed", v.JobsNotCompleted},
		{"jobs left running", v.JobsRunning},
		{"resolve_file jobs discarded", v.JobsDiscarded},
		{"dead_lettered_items rows", v.DeadLetteredItems},
		{"POIs in pois that were not published valid", v.UnexpectedPOIs},
		{"valid POIs in failed_pois", v.ValidInFailedPOIs},
		{"extra failed_pois rows for a malformed POI", v.MalformedDuplicate},
		{"failed_pois rows for no malformed POI", v.FailedUnexpected},
		{"duplicate relationships", v.RelationshipsDup},
		{"unexpected relationships", v.RelationshipsExtra},
	} {
		if c.n != 0 {
			out = append(out, fmt.Sprintf("%s: %d", c.name, c.n))
		}
	}
	return out
}

// check runs every invariant against the scenario's database.
func check(ctx context.Context, pool *pgxpool.Pool, c *Corpus) (Invariants, error) {
	var v Invariants
	files := make([]string, len(c.Malformed))
	idx := make([]int32, len(c.Malformed))
	for i, s := range c.Malformed {
		files[i], idx[i] = s.FileID, int32(s.Index)
	}
	src, tgt, typ := make([]string, len(c.Edges)), make([]string, len(c.Edges)), make([]string, len(c.Edges))
	for i, e := range c.Edges {
		src[i], tgt[i], typ[i] = e.Source, e.Target, e.Type
	}
	queries := []struct {
		sql  string
		args []any
		dst  []*int
	}{
		{`SELECT count(*) FROM pois`, nil, []*int{&v.POIsStored}},
		{`SELECT count(*) FROM failed_pois`, nil, []*int{&v.FailedPOIRows}},
		{`SELECT count(*), count(*) - count(DISTINCT (source_poi_id, target_poi_id, type)) FROM relationships`, nil,
			[]*int{&v.Relationships, &v.RelationshipsDup}},
		{`SELECT count(*), count(*) FILTER (WHERE state <> 'completed'), count(*) FILTER (WHERE state = 'discarded')
		  FROM river_job WHERE kind = 'resolve_file'`, nil, []*int{&v.Jobs, &v.JobsNotCompleted, &v.JobsDiscarded}},
		{`SELECT count(*) FROM river_job WHERE state = 'running'`, nil, []*int{&v.JobsRunning}},
		// Captured resolve_file batches; MapReduce scenarios check their own items.
		{`SELECT count(*) FROM dead_lettered_items WHERE job_id = 'resolve_file'`, nil, []*int{&v.DeadLetteredItems}},
		{`SELECT count(*) FROM unnest($1::text[]) AS e(id) WHERE NOT EXISTS (SELECT 1 FROM pois p WHERE p.poi_id = e.id)`,
			[]any{c.ValidIDs}, []*int{&v.ValidMissing}},
		{`SELECT count(*) FROM pois p WHERE p.poi_id <> ALL ($1::text[])`, []any{c.ValidIDs}, []*int{&v.UnexpectedPOIs}},
		{`SELECT count(*) FROM failed_pois WHERE poi_id = ANY ($1::text[])`, []any{c.ValidIDs}, []*int{&v.ValidInFailedPOIs}},
		{`WITH slots AS (
		    SELECT s.file_id, s.idx, count(f.id) AS n
		    FROM unnest($1::text[], $2::int[]) AS s(file_id, idx)
		    LEFT JOIN failed_pois f ON f.file_id = s.file_id AND f.poi_index = s.idx
		    GROUP BY s.file_id, s.idx)
		  SELECT count(*) FILTER (WHERE n = 0), coalesce(sum(n - 1) FILTER (WHERE n > 1), 0)::bigint,
		         ((SELECT count(*) FROM failed_pois) - coalesce(sum(n), 0))::bigint
		  FROM slots`, []any{files, idx}, []*int{&v.MalformedMissing, &v.MalformedDuplicate, &v.FailedUnexpected}},
		{`SELECT count(*) FROM unnest($1::text[], $2::text[], $3::text[]) AS e(s, t, ty)
		  WHERE NOT EXISTS (SELECT 1 FROM relationships r WHERE r.source_poi_id = e.s AND r.target_poi_id = e.t AND r.type = e.ty)`,
			[]any{src, tgt, typ}, []*int{&v.RelationshipsLost}},
		{`SELECT count(*) FROM (
		    SELECT source_poi_id, target_poi_id, type FROM relationships
		    EXCEPT SELECT * FROM unnest($1::text[], $2::text[], $3::text[])) AS x`,
			[]any{src, tgt, typ}, []*int{&v.RelationshipsExtra}},
	}
	for _, q := range queries {
		dst := make([]any, len(q.dst))
		for i, p := range q.dst {
			dst[i] = p
		}
		if err := pool.QueryRow(ctx, q.sql, q.args...).Scan(dst...); err != nil {
			return v, fmt.Errorf("error checking invariants (%.60s...): %w", q.sql, err)
		}
	}
	return v, nil
}

// relationships reads the whole relationships table, sorted, as
// "source>target>type" strings, to compare two runs.
func relationships(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT source_poi_id || '>' || target_poi_id || '>' || type FROM relationships`)
	if err != nil {
		return nil, fmt.Errorf("error reading relationships: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("error reading relationships: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading relationships: %w", err)
	}
	slices.Sort(out)
	return out, nil
}
