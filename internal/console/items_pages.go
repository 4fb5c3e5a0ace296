package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/mapreduce"
)

type itemsListData struct {
	Query  itemsQuery
	Items  []*items.Item
	Next   template.URL
	QS     template.URL
	First  bool
	Types  []agent.ErrorType
	Params url.Values
}

// itemsList lists dead_lettered_items matching the filter, a keyset page at
// a time.
func (c *Console) itemsList(w http.ResponseWriter, r *http.Request) error {
	q, err := parseItemsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	list, err := c.items.ListPage(r.Context(), q.filter, q.after, q.Limit+1)
	if err != nil {
		return err
	}
	d := itemsListData{Query: q, First: q.after == nil, Types: agent.ErrorTypes(), Params: q.Params(), QS: template.URL(q.Params().Encode())}
	if len(list) > q.Limit {
		list = list[:q.Limit]
		last := list[len(list)-1]
		next := q.Params()
		next.Set("after", formatCursor(last.LastAttempt, last.ID))
		d.Next = template.URL(next.Encode())
	}
	d.Items = list
	return c.render(w, r, http.StatusOK, "items_list", "Dead-lettered items", "items", d)
}

type itemsGroupsData struct {
	Query    itemsQuery
	Analysis *items.Report
	Types    []agent.ErrorType
}

// itemsGroups groups the items matching the filter by error signature
// (items.Store.Analyze, as `relay dlq analyze`).
func (c *Console) itemsGroups(w http.ResponseWriter, r *http.Request) error {
	q, err := parseItemsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	an, err := c.items.Analyze(r.Context(), q.filter)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "items_groups", "Dead-lettered items by signature", "items",
		itemsGroupsData{Query: q, Analysis: an, Types: agent.ErrorTypes()})
}

type itemDetailData struct {
	Item   *items.Item
	Events []deadletter.Event
}

// itemDetail shows one item: its data, attempt history, log paths and
// audit events.
func (c *Console) itemDetail(w http.ResponseWriter, r *http.Request) error {
	jobID, itemID := r.PathValue("job"), r.PathValue("item")
	it, err := c.items.Get(r.Context(), jobID, itemID)
	if errors.Is(err, items.ErrNotFound) {
		return httpError{code: http.StatusNotFound, msg: fmt.Sprintf("item %q of job %q is not in dead_lettered_items", itemID, jobID)}
	}
	if err != nil {
		return err
	}
	events, err := c.items.Events(r.Context(), jobID, itemID, 50)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "item_detail", "Item "+itemID, "items", itemDetailData{Item: it, Events: events})
}

// errRollback rolls a dry run's transaction back.
var errRollback = errors.New("dry run: rolled back")

// job reads the job named by field, or an invalid-input error naming it.
func (c *Console) job(ctx context.Context, f *form, field string) (*mapreduce.Job, error) {
	id := f.text(field)
	if id == "" {
		f.bad(field, "required: a MapReduce job id")
		return nil, nil
	}
	job, err := c.mr.Job(ctx, id)
	if errors.Is(err, mapreduce.ErrJobNotFound) {
		f.bad(field, fmt.Sprintf("no MapReduce job %q", id))
		return nil, nil
	}
	return job, err
}

// itemsRetry re-enqueues a job's dead-lettered items matching a JSONPath
// filter: the same claim and requeue as `relay dlq retry`
// (mapreduce.Store.RetryDeadLettered) and the same items_reprocessed
// event. The dry run claims in a transaction that is rolled back, so it
// counts exactly what the retry would take.
func (c *Console) itemsRetry(w http.ResponseWriter, r *http.Request) error {
	if err := c.checkCSRF(r); err != nil {
		return err
	}
	ctx := r.Context()
	f := &form{v: r.PostForm}
	job, err := c.job(ctx, f, "job")
	if err != nil {
		return err
	}
	filter, force := f.text("filter"), f.bool("force")
	retries := f.intIn("max_retries", -1, 0, 100)
	if len(f.errs) > 0 {
		return f.errs
	}
	if retries < 0 {
		retries = job.MaxRetries
	}
	if !confirmed(r) {
		var ids []string
		err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
			var err error
			if ids, err = c.items.ClaimForRetryTx(ctx, tx, job.ID, filter, force); err != nil {
				return err
			}
			return errRollback
		})
		var bad *items.InvalidFilterError
		if errors.As(err, &bad) {
			return invalidInput{{Field: "filter", Msg: bad.Error()}}
		}
		if err != nil && !errors.Is(err, errRollback) {
			return err
		}
		what := "eligible dead-lettered items"
		if force {
			what = "dead-lettered items (eligible or not)"
		}
		d := confirmData{Heading: "Retry dead-lettered items?", Action: c.cfg.Prefix + "/items/retry", Button: fmt.Sprintf("Retry %d items", len(ids)),
			Hidden: hiddenFields(r.PostForm), Nothing: len(ids) == 0, Back: c.cfg.Prefix + "/items?job=" + url.QueryEscape(job.ID),
			Lines: []string{fmt.Sprintf("Dry run: %d %s of job %s match filter %q and would go back to the work queue with %d retries each.",
				len(ids), what, job.ID, filter, retries)}}
		if len(ids) > 0 {
			d.Lines = append(d.Lines, "Items: "+joinStrings(ids, 20)+".")
		}
		return c.render(w, r, http.StatusOK, "confirm", "Confirm retry", "items", d)
	}
	ids, err := c.mr.RetryDeadLettered(context.WithoutCancel(ctx), c.items, c.cfg.Jobs, job, filter, force, retries)
	var bad *items.InvalidFilterError
	if errors.As(err, &bad) {
		return invalidInput{{Field: "filter", Msg: bad.Error()}}
	}
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		if err := c.items.RecordEvent(ctx, actor(r), items.EventItemsReprocessed, len(ids), map[string]any{
			"job_id": job.ID, "count": len(ids), "filter": filter, "force": force, "max_retries": retries, "successful": nil,
		}); err != nil {
			return err
		}
	}
	return c.render(w, r, http.StatusOK, "result", "Retry enqueued", "items", resultData{Heading: "Retry enqueued",
		Lines: []string{fmt.Sprintf("%d items of job %s are back in the work queue (actor %s); a running relay worker works them.", len(ids), job.ID, actor(r))},
		Links: []link{{Href: c.cfg.Prefix + "/jobs/" + url.PathEscape(job.ID), Text: "Job " + job.ID}, {Href: c.cfg.Prefix + "/items?job=" + url.QueryEscape(job.ID), Text: "Its dead-lettered items"}}})
}

func joinStrings(ss []string, n int) string {
	out := ""
	for i, s := range ss {
		if i == n {
			return out + fmt.Sprintf(", … %d more", len(ss)-n)
		}
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// itemsPurge deletes items dead-lettered more than N days ago, of one job
// or all (items.Store.Purge, as `relay dlq purge`).
func (c *Console) itemsPurge(w http.ResponseWriter, r *http.Request) error {
	if err := c.checkCSRF(r); err != nil {
		return err
	}
	f := &form{v: r.PostForm}
	days := f.intIn("older_than_days", 0, 1, maxAgeDays)
	if f.text("older_than_days") == "" {
		f.bad("older_than_days", "required: a number of days from 1 to 36500")
	}
	jobID := f.text("job")
	if len(f.errs) > 0 {
		return f.errs
	}
	cutoff := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	scope := "every job"
	if jobID != "" {
		scope = "job " + jobID
	}
	ctx := r.Context()
	if !confirmed(r) {
		n, err := c.items.CountOlderThan(ctx, cutoff, jobID)
		if err != nil {
			return err
		}
		return c.render(w, r, http.StatusOK, "confirm", "Confirm purge", "items", confirmData{Heading: "Purge dead-lettered items?",
			Action: c.cfg.Prefix + "/items/purge", Button: fmt.Sprintf("Delete %d items", n), Hidden: hiddenFields(r.PostForm),
			Nothing: n == 0, Back: c.cfg.Prefix + "/items",
			Lines: []string{fmt.Sprintf("%d items of %s dead-lettered more than %d days ago would be deleted permanently.", n, scope, days)}})
	}
	n, err := c.items.Purge(context.WithoutCancel(ctx), cutoff, jobID, fmt.Sprintf("purged: older than %d days", days), actor(r))
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "result", "Purged", "items", resultData{Heading: "Purged",
		Lines: []string{fmt.Sprintf("%d items of %s deleted (actor %s).", n, scope, actor(r))},
		Links: []link{{Href: c.cfg.Prefix + "/items", Text: "Dead-lettered items"}}})
}

// itemsClear deletes a job's items that were reprocessed successfully
// (items.Store.Clear, as `relay dlq clear`).
func (c *Console) itemsClear(w http.ResponseWriter, r *http.Request) error {
	if err := c.checkCSRF(r); err != nil {
		return err
	}
	f := &form{v: r.PostForm}
	jobID := f.text("job")
	if jobID == "" {
		f.bad("job", "required: a MapReduce job id")
	}
	if len(f.errs) > 0 {
		return f.errs
	}
	ctx := r.Context()
	if !confirmed(r) {
		n, err := c.items.CountReprocessed(ctx, jobID)
		if err != nil {
			return err
		}
		return c.render(w, r, http.StatusOK, "confirm", "Confirm clear", "items", confirmData{Heading: "Clear reprocessed items?",
			Action: c.cfg.Prefix + "/items/clear", Button: fmt.Sprintf("Delete %d items", n), Hidden: hiddenFields(r.PostForm),
			Nothing: n == 0, Back: c.cfg.Prefix + "/items?job=" + url.QueryEscape(jobID),
			Lines: []string{fmt.Sprintf("%d items of job %s were reprocessed successfully and would be deleted.", n, jobID)}})
	}
	n, err := c.items.Clear(context.WithoutCancel(ctx), jobID, actor(r))
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "result", "Cleared", "items", resultData{Heading: "Cleared",
		Lines: []string{fmt.Sprintf("%d reprocessed items of job %s deleted (actor %s).", n, jobID, actor(r))},
		Links: []link{{Href: c.cfg.Prefix + "/items?job=" + url.QueryEscape(jobID), Text: "Job's items"}}})
}

type jobRow struct {
	Job    *mapreduce.Job
	Counts *mapreduce.Counts
}

// maxJobs bounds the MapReduce jobs page.
const maxJobs = 100

// jobsList shows the newest MapReduce jobs with where their items are.
func (c *Console) jobsList(w http.ResponseWriter, r *http.Request) error {
	jobs, err := c.mr.Jobs(r.Context(), maxJobs)
	if err != nil {
		return err
	}
	rows := make([]jobRow, len(jobs))
	for i, j := range jobs {
		cnt, err := c.mr.Counts(r.Context(), j.ID)
		if err != nil {
			return err
		}
		rows[i] = jobRow{Job: j, Counts: cnt}
	}
	return c.render(w, r, http.StatusOK, "jobs", "MapReduce jobs", "jobs", rows)
}

type jobDetailData struct {
	Job    *mapreduce.Job
	Counts *mapreduce.Counts
	DLQ    *items.Stats
}

// jobDetail is `relay mapreduce status JOB`.
func (c *Console) jobDetail(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	job, err := c.mr.Job(r.Context(), id)
	if errors.Is(err, mapreduce.ErrJobNotFound) {
		return httpError{code: http.StatusNotFound, msg: fmt.Sprintf("no MapReduce job %q", id)}
	}
	if err != nil {
		return err
	}
	cnt, err := c.mr.Counts(r.Context(), job.ID)
	if err != nil {
		return err
	}
	st, err := c.items.Stats(r.Context(), job.ID)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "job_detail", "Job "+job.ID, "jobs", jobDetailData{Job: job, Counts: cnt, DLQ: st})
}
