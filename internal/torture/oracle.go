package torture

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/outbox"
)

// State is what the comparison reads of a database.
type State struct {
	// POIs are "repository|poi_id|file_id|name|type|line_number|symbol".
	POIs []string
	// Relationships are "repository|source_poi_id|target_repository|target_poi_id|type".
	Relationships []string
	// References are every stored reference, resolved or not:
	// "repository|source_poi_id|type|name|target_repository|target_poi_id"
	// ("-" for no target). A reference kept from a replaced version shows
	// here even while nothing it names exists.
	References []string
	// Failed are the actionable failed_pois rows (status new).
	Failed []failedKey
}

func readState(ctx context.Context, pool *pgxpool.Pool) (*State, error) {
	st := &State{}
	var err error
	if st.POIs, err = strings1(ctx, pool, `SELECT concat_ws('|', repository, poi_id, file_id, name, type, line_number, coalesce(symbol, '-'))
		FROM pois ORDER BY 1`); err != nil {
		return nil, err
	}
	if st.Relationships, err = strings1(ctx, pool, `SELECT concat_ws('|', repository, source_poi_id, target_repository, target_poi_id, type)
		FROM relationships ORDER BY 1`); err != nil {
		return nil, err
	}
	if st.References, err = strings1(ctx, pool, `SELECT concat_ws('|', repository, source_poi_id, type, name,
			CASE WHEN target_poi_id IS NULL THEN '-' ELSE target_repository END, coalesce(target_poi_id, '-'))
		FROM poi_references ORDER BY 1`); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT repository, file_id, coalesce(poi_id, ''), coalesce(poi_index, -1)
		FROM failed_pois WHERE status = 'new' ORDER BY 1, 2, 3, 4`)
	if err != nil {
		return nil, fmt.Errorf("error reading failed_pois: %w", err)
	}
	if st.Failed, err = pgx.CollectRows(rows, pgx.RowToStructByPos[failedKey]); err != nil {
		return nil, fmt.Errorf("error reading failed_pois: %w", err)
	}
	return st, nil
}

func strings1(ctx context.Context, pool *pgxpool.Pool, sql string) ([]string, error) {
	rows, err := pool.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("error reading %q: %w", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error reading %q: %w", sql, err)
	}
	return out, nil
}

// oracle publishes versions (with the corrections patches applied) into
// db, a fresh database, in one PublishManyTx, works the queues until idle
// and reads the result. A rejection is returned as an outcome: the
// history committed versions that cannot stand together.
func oracle(ctx context.Context, db *database, versions []*Version, patches []Patch) (*State, string, error) {
	as := make([]outbox.Analysis, len(versions))
	for i, v := range versions {
		a, err := outbox.DecodeAnalysis(v.Analysis(patches))
		if err != nil {
			return nil, "", fmt.Errorf("error decoding version %d: %w", v.ID, err)
		}
		as[i] = a
	}
	var rejected string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		_, err := db.pub.PublishManyTx(ctx, tx, as)
		return err
	})
	if err != nil {
		if !strings.Contains(err.Error(), outbox.ErrRejected.Error()) {
			return nil, "", fmt.Errorf("error publishing the last versions into the oracle: %w", err)
		}
		rejected = "the oracle rejected the last committed versions: " + err.Error()
	}
	e := &executor{ctx: ctx, db: db}
	if err := e.work(1, false); err != nil {
		return nil, "", fmt.Errorf("error working the oracle's queues: %w", err)
	}
	st, err := readState(ctx, db.pool)
	return st, rejected, err
}

// Diff is how a history's database differs from its oracle's.
type Diff struct {
	POIs, Relationships, References, Failed []string
	// Outcomes are operations that did not do what the model expected
	// (a rejection, an analysis left in rejected_analyses).
	Outcomes []string
}

// Empty reports whether the databases agree.
func (d *Diff) Empty() bool {
	return len(d.POIs)+len(d.Relationships)+len(d.References)+len(d.Failed)+len(d.Outcomes) == 0
}

func (d *Diff) String() string {
	var b strings.Builder
	section := func(name string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", name)
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	section("outcomes", d.Outcomes)
	section("pois (- oracle only, + history only; repository|poi_id|file_id|name|type|line|symbol)", d.POIs)
	section("relationships (- oracle only, + history only; repository|source|target_repository|target|type)", d.Relationships)
	section("references (- oracle only, + history only; repository|source|type|name|target_repository|target)", d.References)
	section("actionable failed_pois (- oracle only, + history only; repository|file_id|poi_id|poi_index)", d.Failed)
	return b.String()
}

// diffLines compares two sorted multisets of lines.
func diffLines(want, got []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			out = append(out, "- "+want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			out = append(out, "+ "+got[j])
			j++
		default:
			i++
			j++
		}
	}
	return out
}

func (k failedKey) String() string {
	return fmt.Sprintf("%s|%s|%s|%d", k.Repo, k.File, k.POIID, k.Index)
}

// compare diffs the history's state with the oracle's. The oracle's
// actionable rows are the expectation, less those of versions an ignore
// set aside; history rows a repository delete kept and nothing has closed
// yet are neither expected nor unexpected.
func compare(hist, orc *State, e *executor, checkFailed bool) *Diff {
	d := &Diff{POIs: diffLines(orc.POIs, hist.POIs), Relationships: diffLines(orc.Relationships, hist.Relationships),
		References: diffLines(orc.References, hist.References)}
	if !checkFailed {
		return d
	}
	final := map[key]int{}
	for _, v := range e.finalVersions() {
		final[v.key()] = v.ID
	}
	var want, got []string
	for _, r := range orc.Failed {
		if !e.ignored[final[key{r.Repo, r.File}]] {
			want = append(want, r.String())
		}
	}
	kept := e.keptOpen()
	for _, r := range hist.Failed {
		if !kept[r] {
			got = append(got, r.String())
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	d.Failed = diffLines(want, got)
	return d
}
