package failed

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relay-dev/relay/deadletter"
)

// Statuses lists every status, in life-cycle order. It returns a new slice
// on each call.
func Statuses() []Status {
	return []Status{StatusNew, StatusReprocessing, StatusReprocessed, StatusIgnored, StatusSuperseded}
}

// ParseStatus returns the status named s, ignoring case and surrounding
// space, or an error that names s and lists the valid statuses (the
// failed_pois CHECK constraint's list).
func ParseStatus(s string) (Status, error) {
	want := strings.ToLower(strings.TrimSpace(s))
	names := make([]string, 0, 5)
	for _, st := range Statuses() {
		if string(st) == want {
			return st, nil
		}
		names = append(names, string(st))
	}
	return "", fmt.Errorf("unknown status %q (valid statuses: %s)", s, strings.Join(names, ", "))
}

// Filter selects failed_pois rows. Zero fields do not filter. Every value
// reaches PostgreSQL as a query parameter, never as SQL text.
type Filter struct {
	Status Status
	// Repository, when set, keeps only rows of that repository ("" the
	// default one).
	Repository *string
	FileID     string
	// deadletter.Signature matches error_signature. It is normalized with deadletter.Signature
	// first, so a raw error message selects its signature's rows too.
	Signature  string
	ErrorClass ErrorClass
	// Since and Until bound failed_at (the latest failure): Since <=
	// failed_at < Until.
	Since, Until time.Time
	// ManualReview, when true, keeps only rows needing manual review.
	ManualReview bool
	// POIID matches poi_id exactly.
	POIID string
	// Search keeps rows whose error_message contains it, ignoring case (a
	// substring, not a pattern: % and _ match themselves).
	Search string
	// IDs keeps only these rows (at most MaxFilterIDs).
	IDs []int64
}

// MaxFilterIDs bounds Filter.IDs.
const MaxFilterIDs = 10000

// MaxSearchLen bounds Filter.Search, in bytes.
const MaxSearchLen = 200

// Validate checks the filter's values.
func (f Filter) Validate() error {
	if f.Status != "" {
		if _, err := ParseStatus(string(f.Status)); err != nil {
			return err
		}
	}
	if f.ErrorClass != "" {
		if _, err := ParseErrorClass(string(f.ErrorClass)); err != nil {
			return err
		}
	}
	if len(f.IDs) > MaxFilterIDs {
		return fmt.Errorf("%d ids: at most %d rows can be named at once", len(f.IDs), MaxFilterIDs)
	}
	for _, id := range f.IDs {
		if id < 1 {
			return fmt.Errorf("id %d must be a failed_pois id (a positive integer)", id)
		}
	}
	if len(f.Search) > MaxSearchLen {
		return fmt.Errorf("search text of %d bytes: at most %d", len(f.Search), MaxSearchLen)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return nil
}

// Describe returns the filter as a JSON-friendly map for audit events and
// reports.
func (f Filter) Describe() map[string]any {
	m := map[string]any{}
	if f.Status != "" {
		m["status"] = f.Status
	}
	if f.Repository != nil {
		m["repository"] = *f.Repository
	}
	if f.FileID != "" {
		m["file_id"] = f.FileID
	}
	if f.Signature != "" {
		m["signature"] = deadletter.Signature(f.Signature)
	}
	if f.ErrorClass != "" {
		m["error_class"] = f.ErrorClass
	}
	if !f.Since.IsZero() {
		m["since"] = f.Since.UTC()
	}
	if !f.Until.IsZero() {
		m["until"] = f.Until.UTC()
	}
	if f.ManualReview {
		m["manual_review"] = true
	}
	if f.POIID != "" {
		m["poi_id"] = f.POIID
	}
	if f.Search != "" {
		m["search"] = f.Search
	}
	if len(f.IDs) > 0 {
		m["ids"] = slices.Sorted(slices.Values(f.IDs))
	}
	return m
}

// queryArgs collects positional parameters while a statement is built.
type queryArgs struct {
	vals []any
	// distributed: the statement is for a distributed failed_pois (Citus),
	// where a lookup by id needs no skip scan of the repositories.
	distributed bool
}

// add appends v and returns its placeholder ($n).
func (a *queryArgs) add(v any) string {
	a.vals = append(a.vals, v)
	return "$" + strconv.Itoa(len(a.vals))
}

// where renders f as a boolean SQL expression over the columns of alias
// (e.g. "f."), adding its values to a. Only fixed SQL text and placeholders
// are produced.
func (f Filter) where(a *queryArgs, alias string) string {
	conds := []string{"true"}
	if f.Status != "" {
		conds = append(conds, alias+"status = "+a.add(string(f.Status)))
	}
	if f.Repository != nil {
		conds = append(conds, alias+"repository = "+a.add(*f.Repository))
	} else if (f.FileID != "" || f.POIID != "" || len(f.IDs) > 0) && !a.distributed {
		// The primary key and the file and POI id indexes begin with the
		// repository.
		conds = append(conds, alias+"repository = ANY("+everyRepository+")")
	}
	if f.FileID != "" {
		conds = append(conds, alias+"file_id = "+a.add(f.FileID))
	}
	if f.Signature != "" {
		conds = append(conds, alias+"error_signature = "+a.add(deadletter.Signature(f.Signature)))
	}
	if f.ErrorClass != "" {
		conds = append(conds, alias+"error_class = "+a.add(string(f.ErrorClass)))
	}
	if !f.Since.IsZero() {
		conds = append(conds, alias+"failed_at >= "+a.add(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, alias+"failed_at < "+a.add(f.Until))
	}
	if f.ManualReview {
		conds = append(conds, alias+"manual_review_required")
	}
	if f.POIID != "" {
		conds = append(conds, alias+"poi_id = "+a.add(f.POIID))
	}
	if f.Search != "" {
		conds = append(conds, alias+"error_message ILIKE "+a.add("%"+likeEscaper.Replace(f.Search)+"%"))
	}
	if len(f.IDs) > 0 {
		conds = append(conds, alias+"id = ANY("+a.add(f.IDs)+")")
	}
	return strings.Join(conds, " AND ")
}

// everyRepository is an array of the repositories failed_pois has rows of,
// read from the start of the indexes that begin with the repository, one
// probe per repository (a loose index scan): a file or POI id condition
// with it runs as a probe of failed_pois_file_id_idx or
// failed_pois_poi_id_idx per repository, and a row id condition as a probe
// of the primary key (repository, id), where without it the whole index
// would be read.
//
// On a distributed failed_pois (Citus) it is left out: Citus plans a
// recursive CTE only with a condition on the repository ("recursive CTEs
// are only supported when they contain a filter on the distribution
// column"). There the lookup without it runs on every shard at once, each
// reading its part of the table, as the skip scan would have to anyway.
const everyRepository = `ARRAY(WITH RECURSIVE r(repo) AS (
		SELECT min(repository) FROM failed_pois
		UNION ALL
		SELECT (SELECT min(repository) FROM failed_pois WHERE repository > r.repo) FROM r WHERE r.repo IS NOT NULL)
	SELECT repo FROM r WHERE repo IS NOT NULL)`

// likeEscaper escapes LIKE's wildcards and its escape character (a
// backslash, the default ESCAPE), so a search is a plain substring.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// ErrNotFound is returned for a failed_pois id that does not exist.
var ErrNotFound = errors.New("failed_pois row not found")
