package console

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
)

// inputLayouts are the times the filters take, read as UTC unless they say
// otherwise: what <input type="datetime-local"> sends, RFC 3339, a date.
var inputLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04", time.DateOnly}

func parseInputTime(s string) (time.Time, bool) {
	for _, l := range inputLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// maxTextInput bounds a free-text filter field, in bytes.
const maxTextInput = 500

// form reads and validates query or form values, collecting every invalid
// field.
type form struct {
	v    url.Values
	errs invalidInput
}

func (f *form) bad(field, format string) {
	f.errs = append(f.errs, fieldError{Field: field, Msg: format})
}

func (f *form) text(field string) string {
	s := strings.TrimSpace(f.v.Get(field))
	if len(s) > maxTextInput {
		f.bad(field, "at most "+strconv.Itoa(maxTextInput)+" bytes")
		return ""
	}
	return s
}

func (f *form) time(field string) time.Time {
	s := f.text(field)
	if s == "" {
		return time.Time{}
	}
	t, ok := parseInputTime(s)
	if !ok {
		f.bad(field, "not a time: use 2026-01-21T14:00 or 2026-01-21 (UTC)")
	}
	return t
}

func (f *form) intIn(field string, def, lo, hi int) int {
	s := f.text(field)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		f.bad(field, "must be a whole number from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return def
	}
	return n
}

func (f *form) bool(field string) bool {
	switch f.v.Get(field) {
	case "", "0", "false":
		return false
	case "1", "on", "true", "yes":
		return true
	}
	f.bad(field, "must be on or off")
	return false
}

// ids reads every value of field as a row id.
func (f *form) ids(field string) []int64 {
	vals := f.v[field]
	if len(vals) > failed.MaxFilterIDs {
		f.bad(field, "at most "+strconv.Itoa(failed.MaxFilterIDs)+" rows at once")
		return nil
	}
	out := make([]int64, 0, len(vals))
	for _, s := range vals {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || id < 1 {
			f.bad(field, "\""+s+"\" is not a row id (a positive integer)")
			return nil
		}
		out = append(out, id)
	}
	return out
}

// failedQuery is the failed_pois list's filter form.
type failedQuery struct {
	Status, Class, File, Signature, Search, POI, Since, Until string
	// Repository is the repository field as given: a name,
	// defaultRepositoryParam, or "" for every repository.
	Repository string
	Manual     bool
	Oldest     bool
	Limit      int
	filter     failed.Filter
	after      *failed.Cursor
}

// defaultRepositoryParam is the repository field's value that selects the
// default repository, whose name is "": an empty field selects every
// repository, as every empty filter field does. It is written as
// `relay failed list --repository ""` is typed.
const defaultRepositoryParam = `""`

// repositoryParam is the repository field's value that selects repository.
func repositoryParam(repository string) string {
	if repository == "" {
		return defaultRepositoryParam
	}
	return repository
}

// repositoryFilter is the failed.Filter's Repository of a repository
// field's value: nil (every repository) for "".
func repositoryFilter(param string) *string {
	switch param {
	case "":
		return nil
	case defaultRepositoryParam:
		name := ""
		return &name
	default:
		return &param
	}
}

// Params are the filter as query parameters (without the page position),
// for links and hidden form fields.
func (q failedQuery) Params() url.Values {
	order := ""
	if q.Oldest {
		order = "oldest"
	}
	return queryParams(map[string]string{"status": q.Status, "repository": q.Repository, "class": q.Class, "file": q.File,
		"signature": q.Signature, "q": q.Search, "poi": q.POI, "since": q.Since, "until": q.Until, "manual": flag(q.Manual), "order": order}, q.Limit)
}

// queryParams are a list page's query parameters: the non-empty values of
// params, and the page size unless it is the default.
func queryParams(params map[string]string, limit int) url.Values {
	v := url.Values{}
	for k, s := range params {
		if s != "" {
			v.Set(k, s)
		}
	}
	if limit != defaultPageSize {
		v.Set("limit", strconv.Itoa(limit))
	}
	return v
}

// flag is a checkbox's query value: "1" when set, "" (left out) otherwise.
func flag(set bool) string {
	if set {
		return "1"
	}
	return ""
}

// The list pages' sizes.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// parseFailedQuery validates the failed_pois filter in v.
func parseFailedQuery(v url.Values) (failedQuery, error) {
	f := &form{v: v}
	q := failedQuery{Status: f.text("status"), Repository: f.text("repository"), Class: f.text("class"), File: f.text("file"),
		Signature: f.text("signature"), Search: f.text("q"), POI: f.text("poi"), Since: f.text("since"), Until: f.text("until"),
		Manual: f.bool("manual"), Limit: f.intIn("limit", defaultPageSize, 1, maxPageSize)}
	switch f.text("order") {
	case "", "newest":
	case "oldest":
		q.Oldest = true
	default:
		f.bad("order", "must be newest or oldest")
	}
	if q.Status != "" {
		st, err := failed.ParseStatus(q.Status)
		if err != nil {
			f.bad("status", err.Error())
		}
		q.filter.Status = st
	}
	if q.Class != "" {
		c, err := failed.ParseErrorClass(q.Class)
		if err != nil {
			f.bad("class", err.Error())
		}
		q.filter.ErrorClass = c
	}
	if len(q.Search) > failed.MaxSearchLen {
		f.bad("q", "at most "+strconv.Itoa(failed.MaxSearchLen)+" bytes")
	}
	q.filter.Repository = repositoryFilter(q.Repository)
	q.filter.FileID, q.filter.Signature, q.filter.Search, q.filter.POIID, q.filter.ManualReview =
		q.File, q.Signature, q.Search, q.POI, q.Manual
	q.filter.Since, q.filter.Until = f.time("since"), f.time("until")
	if c := f.window(q.filter.Since, q.filter.Until); c != nil {
		q.after = &failed.Cursor{FailedAt: c.at, ID: c.id}
	}
	if len(f.errs) > 0 {
		return q, f.errs
	}
	return q, nil
}

// window checks a list's time range (until after since, when both are
// given) and reads its page position, "after": nil when there is none or
// it is invalid (reported as a bad field).
func (f *form) window(since, until time.Time) *cursor {
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		f.bad("until", "must be after since")
	}
	s := f.text("after")
	if s == "" {
		return nil
	}
	c, ok := parseCursor(s)
	if !ok {
		f.bad("after", "not a page position")
		return nil
	}
	return &c
}

// cursor is a page position in a URL: "<unix nanoseconds>.<id>".
type cursor struct {
	at time.Time
	id int64
}

func formatCursor(at time.Time, id int64) string {
	return strconv.FormatInt(at.UnixNano(), 10) + "." + strconv.FormatInt(id, 10)
}

func parseCursor(s string) (cursor, bool) {
	ns, id, ok := strings.Cut(s, ".")
	if !ok {
		return cursor{}, false
	}
	n, err1 := strconv.ParseInt(ns, 10, 64)
	i, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil || i < 1 {
		return cursor{}, false
	}
	return cursor{at: time.Unix(0, n).UTC(), id: i}, true
}

// itemsQuery is the dead_lettered_items list's filter form.
type itemsQuery struct {
	Job, Signature, Type, Item, Since, Until string
	Eligible, Reprocessed                    bool
	Limit                                    int
	filter                                   items.Filter
	after                                    *items.Cursor
}

// Params are the filter as query parameters (without the page position).
func (q itemsQuery) Params() url.Values {
	return queryParams(map[string]string{"job": q.Job, "signature": q.Signature, "type": q.Type, "item": q.Item,
		"since": q.Since, "until": q.Until, "eligible": flag(q.Eligible), "reprocessed": flag(q.Reprocessed)}, q.Limit)
}

func parseItemsQuery(v url.Values) (itemsQuery, error) {
	f := &form{v: v}
	q := itemsQuery{Job: f.text("job"), Signature: f.text("signature"), Type: f.text("type"), Item: f.text("item"),
		Since: f.text("since"), Until: f.text("until"), Eligible: f.bool("eligible"), Reprocessed: f.bool("reprocessed"),
		Limit: f.intIn("limit", defaultPageSize, 1, maxPageSize)}
	if q.Type != "" && !knownErrorType(q.Type) {
		f.bad("type", "unknown error type \""+q.Type+"\"")
	}
	q.filter = items.Filter{JobID: q.Job, Signature: q.Signature, ErrorType: agent.ErrorType(q.Type), ItemID: q.Item,
		EligibleOnly: q.Eligible, IncludeReprocessed: q.Reprocessed, Since: f.time("since"), Until: f.time("until")}
	if c := f.window(q.filter.Since, q.filter.Until); c != nil {
		q.after = &items.Cursor{LastAttempt: c.at, ID: c.id}
	}
	if len(f.errs) > 0 {
		return q, f.errs
	}
	return q, nil
}

func knownErrorType(s string) bool {
	for _, t := range agent.ErrorTypes() {
		if string(t) == s {
			return true
		}
	}
	return false
}
