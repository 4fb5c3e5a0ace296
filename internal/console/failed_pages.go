package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/failed"
)

type failedListData struct {
	Query    failedQuery
	Rows     []failed.Record
	Next     template.URL // the next page's query string ("" on the last page)
	QS       template.URL // the filter's query string
	First    bool         // this is the first page
	Statuses []failed.Status
	Classes  []failed.ErrorClass
	Params   url.Values
	// Repositories is set when a row is not of the default repository: the
	// table then shows each row's repository.
	Repositories bool
	// SearchedTo is set when a search stopped after searchScan rows: it
	// searched rows back to this time.
	SearchedTo time.Time
	SearchScan int
}

// searchScan is how many rows a page of a message search reads at most:
// a rare text is searched for a page at a time, in bounded time.
const searchScan = 20_000

// failedList lists failed_pois rows matching the filter, a keyset page at a
// time.
func (c *Console) failedList(w http.ResponseWriter, r *http.Request) error {
	q, err := parseFailedQuery(r.URL.Query())
	if err != nil {
		return err
	}
	res, err := c.failed.ListPage(r.Context(), q.filter, failed.Page{After: q.after, Limit: q.Limit, OldestFirst: q.Oldest,
		MaxScan: searchScan})
	if err != nil {
		return err
	}
	d := failedListData{Query: q, First: q.after == nil, Statuses: failed.Statuses(), Classes: failed.Classes(), Params: q.Params(),
		QS: template.URL(q.Params().Encode()), Rows: res.Rows,
		Repositories: slices.ContainsFunc(res.Rows, func(r failed.Record) bool { return r.Repository != "" })}
	if res.Next != nil {
		next := q.Params()
		next.Set("after", formatCursor(res.Next.FailedAt, res.Next.ID))
		d.Next = template.URL(next.Encode())
	}
	if q.Search != "" && res.Scanned == searchScan && res.ScannedTo != nil {
		d.SearchedTo, d.SearchScan = res.ScannedTo.FailedAt, searchScan
	}
	return c.render(w, r, http.StatusOK, "failed_list", "Failed POIs", "failed", d)
}

type failedGroupsData struct {
	Query    failedQuery
	Analysis *failed.Report
	Statuses []failed.Status
	Classes  []failed.ErrorClass
}

// failedGroups groups the rows matching the filter by error signature.
func (c *Console) failedGroups(w http.ResponseWriter, r *http.Request) error {
	q, err := parseFailedQuery(r.URL.Query())
	if err != nil {
		return err
	}
	tf := &form{v: r.URL.Query()}
	top := tf.intIn("top", 50, 1, 1000)
	if len(tf.errs) > 0 {
		return tf.errs
	}
	an, err := c.failed.Analyze(r.Context(), q.filter, top)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "failed_groups", "Failed POIs by signature", "groups",
		failedGroupsData{Query: q, Analysis: an, Statuses: failed.Statuses(), Classes: failed.Classes()})
}

type failedDetailData struct {
	Row    *failed.Inspection
	Events []deadletter.Event
	// RepositoryParam is the repository filter's value that selects the
	// row's repository.
	RepositoryParam string
}

func parseID(s, field string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, invalidInput{{Field: field, Msg: fmt.Sprintf("%q is not a row id (a positive integer)", s)}}
	}
	return id, nil
}

// failedDetail shows one row: its POI, error history, jobs and audit
// events.
func (c *Console) failedDetail(w http.ResponseWriter, r *http.Request) error {
	id, err := parseID(r.PathValue("id"), "id")
	if err != nil {
		return err
	}
	in, err := c.failed.Get(r.Context(), id)
	if errors.Is(err, failed.ErrNotFound) {
		return httpError{code: http.StatusNotFound, msg: fmt.Sprintf("failed_pois row %d does not exist", id)}
	}
	if err != nil {
		return err
	}
	events, err := c.failed.Events(r.Context(), in, 50)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "failed_detail", fmt.Sprintf("Failed POI #%d", id), "failed", failedDetailData{Row: in, Events: events,
		RepositoryParam: repositoryParam(in.Repository)})
}

// confirmData is a confirmation page: what an action would do, and a form
// that repeats the request with confirm=yes.
type confirmData struct {
	Heading string
	Lines   []string
	Action  string // the path the form posts to
	Button  string
	Hidden  []hiddenField
	// Reason asks for a reason (ignore).
	Reason    bool
	ReasonVal string
	Nothing   bool // there is nothing to do: no button
	Back      string
}

type hiddenField struct{ Name, Value string }

// hiddenFields repeats every posted field but the token and the
// confirmation (and reason, asked again).
func hiddenFields(v url.Values) []hiddenField {
	var out []hiddenField
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if k == "csrf" || k == "confirm" || k == "reason" {
			continue
		}
		for _, s := range v[k] {
			out = append(out, hiddenField{Name: k, Value: s})
		}
	}
	return out
}

// resultData is the page after an action.
type resultData struct {
	Heading string
	Lines   []string
	Links   []link
}

type link struct{ Href, Text string }

func confirmed(r *http.Request) bool { return r.PostForm.Get("confirm") == "yes" }

// selection reads the rows a reprocess or ignore names: mode "ids" (the
// rows checked, with their status) or "filter" (every row matching the
// filter fields).
func selection(v url.Values) (failed.Selection, string, error) {
	f := &form{v: v}
	switch mode := f.text("mode"); mode {
	case "ids":
		ids := f.ids("id")
		if len(f.errs) == 0 && len(ids) == 0 {
			f.bad("id", "select at least one row")
		}
		st := failed.StatusNew
		if s := f.text("status"); s != "" {
			var err error
			if st, err = failed.ParseStatus(s); err != nil {
				f.bad("status", err.Error())
			}
		}
		repository := repositoryFilter(f.text("repository"))
		if len(f.errs) > 0 {
			return failed.Selection{}, mode, f.errs
		}
		// Rows named one by one are taken even when they need manual
		// review: someone chose them.
		return failed.Selection{Filter: failed.Filter{Status: st, Repository: repository, IDs: ids}, IncludeManualReview: true}, mode, nil
	case "filter":
		q, err := parseFailedQuery(v)
		if err != nil {
			return failed.Selection{}, mode, err
		}
		if q.filter.Status == "" {
			return failed.Selection{}, mode, invalidInput{{Field: "status", Msg: "filter by a status first: a reprocess takes rows of one status"}}
		}
		return failed.Selection{Filter: q.filter}, mode, nil
	default:
		return failed.Selection{}, mode, invalidInput{{Field: "mode", Msg: "must be ids or filter"}}
	}
}

func describe(m map[string]any) string {
	if len(m) == 0 {
		return "every row"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "repository" && m[k] == "" {
			parts = append(parts, "repository="+defaultRepositoryParam+" (the default repository)")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// failedReprocess reprocesses rows: first a dry run (failed.Reprocessor.Plan)
// on a confirmation page, then, confirmed, failed.Reprocessor.Run, as
// `relay reprocess` does.
func (c *Console) failedReprocess(w http.ResponseWriter, r *http.Request) error {
	if err := c.checkCSRF(r); err != nil {
		return err
	}
	sel, _, err := selection(r.PostForm)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if !confirmed(r) {
		plan, err := c.reproc.Plan(ctx, sel, 10)
		if err != nil {
			return err
		}
		d := confirmData{Heading: "Reprocess failed POIs?", Action: c.cfg.Prefix + "/failed/reprocess", Button: "Reprocess",
			Hidden: hiddenFields(r.PostForm), Nothing: plan.Rows == 0, Back: c.cfg.Prefix + "/failed",
			Lines: []string{
				fmt.Sprintf("Selection: %s.", describe(plan.Filter)),
				fmt.Sprintf("Dry run: %d rows of %d files (%d signatures) would be enqueued as resolve_file jobs.", plan.Rows, plan.Files, plan.Signatures),
			}}
		for _, g := range plan.BySignature {
			d.Lines = append(d.Lines, fmt.Sprintf("%d × %s", g.Count, g.Key))
		}
		if plan.Rows == 0 {
			d.Lines = append(d.Lines, "Nothing matches: rows needing manual review are taken only when selected one by one, and rows in reprocessing only when their job is gone.")
		}
		return c.render(w, r, http.StatusOK, "confirm", "Confirm reprocess", "failed", d)
	}
	res, err := c.reproc.Run(context.WithoutCancel(ctx), sel, actor(r), nil)
	if err != nil {
		return err
	}
	d := resultData{Heading: "Reprocess enqueued", Lines: []string{
		fmt.Sprintf("%d rows moved to reprocessing in %d jobs (audit event %d, actor %s).", res.Rows, res.Jobs, res.EventID, actor(r)),
		"A running relay worker works the jobs; each row then becomes reprocessed or returns to new with its new error.",
	}, Links: []link{{Href: c.cfg.Prefix + "/failed?" + reprocessingQuery(sel.Repository), Text: "Rows in reprocessing"},
		{Href: c.cfg.Prefix + "/river/jobs", Text: "Jobs in River UI"}}}
	if len(sel.IDs) == 1 {
		d.Links = append([]link{{Href: fmt.Sprintf("%s/failed/%d", c.cfg.Prefix, sel.IDs[0]), Text: fmt.Sprintf("Row #%d", sel.IDs[0])}}, d.Links...)
	}
	return c.render(w, r, http.StatusOK, "result", "Reprocess enqueued", "failed", d)
}

// failedIgnore sets rows aside with a reason (failed.Store.Ignore, as
// `relay failed ignore` does), after a confirmation that asks the reason.
func (c *Console) failedIgnore(w http.ResponseWriter, r *http.Request) error {
	if err := c.checkCSRF(r); err != nil {
		return err
	}
	f := &form{v: r.PostForm}
	ids := f.ids("id")
	if len(f.errs) == 0 && len(ids) == 0 {
		f.bad("id", "select at least one row")
	}
	reason := f.text("reason")
	if len(f.errs) > 0 {
		return f.errs
	}
	if !confirmed(r) || reason == "" {
		d := confirmData{Heading: "Ignore failed POIs?", Action: c.cfg.Prefix + "/failed/ignore", Button: "Ignore",
			Hidden: hiddenFields(r.PostForm), Reason: true, ReasonVal: reason, Back: c.cfg.Prefix + "/failed",
			Lines: []string{fmt.Sprintf("%d rows (ids %s) would be set aside: status ignored, with the reason below. "+
				"Rows in new or ignored are ignored; rows in reprocessing, reprocessed or superseded are refused.", len(ids), joinIDs(ids))}}
		status := http.StatusOK
		if confirmed(r) {
			d.Lines = append(d.Lines, "A reason is required.")
			status = http.StatusBadRequest
		}
		return c.render(w, r, status, "confirm", "Confirm ignore", "failed", d)
	}
	res, err := c.failed.Ignore(r.Context(), ids, reason, actor(r))
	if err != nil {
		return err
	}
	d := resultData{Heading: "Ignored", Lines: []string{fmt.Sprintf("%d rows ignored (actor %s).", len(res.Ignored), actor(r))}}
	if len(res.NotFound) > 0 {
		d.Lines = append(d.Lines, "Not found: "+joinIDs(res.NotFound)+".")
	}
	for _, id := range slices.Sorted(maps.Keys(res.Refused)) {
		d.Lines = append(d.Lines, fmt.Sprintf("Row %d refused: its status is %s.", id, res.Refused[id]))
	}
	for _, id := range res.Ignored {
		d.Links = append(d.Links, link{Href: fmt.Sprintf("%s/failed/%d", c.cfg.Prefix, id), Text: fmt.Sprintf("Row #%d", id)})
	}
	d.Links = append(d.Links, link{Href: c.cfg.Prefix + "/failed?status=ignored", Text: "Ignored rows"})
	return c.render(w, r, http.StatusOK, "result", "Ignored", "failed", d)
}

// reprocessingQuery is the query string of the rows in reprocessing, of
// repository when it is set.
func reprocessingQuery(repository *string) string {
	v := url.Values{"status": {string(failed.StatusReprocessing)}}
	if repository != nil {
		v.Set("repository", repositoryParam(*repository))
	}
	return v.Encode()
}

func joinIDs(ids []int64) string {
	parts := make([]string, 0, min(len(ids), 20))
	for i, id := range ids {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("… %d more", len(ids)-20))
			break
		}
		parts = append(parts, strconv.FormatInt(id, 10))
	}
	return strings.Join(parts, ", ")
}

// maxAgeDays bounds an age in days (100 years), as the CLI does.
const maxAgeDays = 36500

// failedPurge deletes rows not updated for N days (failed.Store.Purge, as
// `relay failed purge` does), after a confirmation with
// failed.Store.PurgePreview's counts.
func (c *Console) failedPurge(w http.ResponseWriter, r *http.Request) error {
	if err := c.checkCSRF(r); err != nil {
		return err
	}
	f := &form{v: r.PostForm}
	days := f.intIn("older_than_days", 0, 1, maxAgeDays)
	if f.text("older_than_days") == "" {
		f.bad("older_than_days", "required: a number of days from 1 to "+strconv.Itoa(maxAgeDays))
	}
	p := failed.PurgeFilter{OlderThan: time.Duration(days) * 24 * time.Hour}
	if s := f.text("status"); s != "" {
		st, err := failed.ParseStatus(s)
		switch {
		case err != nil:
			f.bad("status", err.Error())
		case st == failed.StatusReprocessing:
			f.bad("status", failed.ErrPurgeReprocessing.Error())
		}
		p.Status = st
	}
	if len(f.errs) > 0 {
		return f.errs
	}
	ctx := r.Context()
	if !confirmed(r) {
		counts, err := c.failed.PurgePreview(ctx, p)
		if err != nil {
			return err
		}
		var total int64
		var parts []string
		for _, st := range failed.Statuses() {
			if n := counts[st]; n > 0 {
				total += n
				parts = append(parts, fmt.Sprintf("%s %d", st, n))
			}
		}
		d := confirmData{Heading: "Purge failed POIs?", Action: c.cfg.Prefix + "/failed/purge", Button: fmt.Sprintf("Delete %d rows", total),
			Hidden: hiddenFields(r.PostForm), Nothing: total == 0, Back: c.cfg.Prefix + "/failed",
			Lines: []string{fmt.Sprintf("%d rows not updated for %d days would be deleted permanently (rows in reprocessing never are).", total, days)}}
		if len(parts) > 0 {
			d.Lines = append(d.Lines, "By status: "+strings.Join(parts, ", ")+".")
		}
		return c.render(w, r, http.StatusOK, "confirm", "Confirm purge", "failed", d)
	}
	n, err := c.failed.Purge(context.WithoutCancel(ctx), p, actor(r))
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "result", "Purged", "failed", resultData{Heading: "Purged",
		Lines: []string{fmt.Sprintf("%d rows deleted (actor %s).", n, actor(r))},
		Links: []link{{Href: c.cfg.Prefix + "/failed", Text: "Failed POIs"}}})
}
