package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestConsole_EveryPageRendersWithSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedFailed(t, 30)
	f.seedDeadLettered(t, "job-a", "item-1", "item-2")
	for _, path := range []string{"/", "/failed", "/failed?status=new&class=validation&q=cause+b&order=oldest&limit=5",
		"/failed/groups", "/failed/1", "/items", "/items/groups", "/items/job-a/item-1", "/jobs", "/jobs/job-a"} {
		code, body, h := f.get(t, path)
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'self'", path)
		require.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
		require.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		require.Equal(t, "same-origin", h.Get("Referrer-Policy"), path)
		requireNoInlineScript(t, "", path, body)
	}
	code, body, _ := f.get(t, "/river/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "River")
}

func TestConsole_FailedListPagesByKeyset(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedFailed(t, 12)
	seen := map[string]bool{}
	path := "/failed?limit=5"
	for pages := 0; path != ""; pages++ {
		require.Less(t, pages, 4)
		code, body, _ := f.get(t, path)
		require.Equal(t, http.StatusOK, code, body)
		for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
			require.False(t, seen[m[1]], "row %s on two pages", m[1])
			seen[m[1]] = true
		}
		path = ""
		if m := nextRE.FindStringSubmatch(body); m != nil {
			path = "/failed?" + htmlUnescape(m[1])
		}
	}
	require.Len(t, seen, 12)
}

func TestConsole_InvalidInputIs400NamingTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for path, field := range map[string]string{
		"/failed?status=bogus":                      "status",
		"/failed?class=nope":                        "class",
		"/failed?since=yesterday":                   "since",
		"/failed?since=2026-01-02&until=2026-01-01": "until",
		"/failed?limit=0":                           "limit",
		"/failed?after=x":                           "after",
		"/failed?order=up":                          "order",
		"/failed/abc":                               "id",
		"/items?type=Boom":                          "type",
		"/failed/groups?top=100000":                 "top",
	} {
		code, body, _ := f.get(t, path)
		require.Equal(t, http.StatusBadRequest, code, path)
		require.Contains(t, body, `<code class="field">`+field+`</code>`, path)
	}
	code, _, _ := f.get(t, "/failed/999999")
	require.Equal(t, http.StatusNotFound, code)
	code, _, _ = f.get(t, "/jobs/none")
	require.Equal(t, http.StatusNotFound, code)

	tok := f.token(t)
	code, body, _ := f.post(t, "/failed/purge", url.Values{"csrf": {tok}, "older_than_days": {"-1"}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `<code class="field">older_than_days</code>`)
	code, body, _ = f.post(t, "/items/retry", url.Values{"csrf": {tok}, "job": {"none"}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `<code class="field">job</code>`)
}

func TestConsole_PostWithoutAValidCSRFTokenIs403(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedFailed(t, 2)
	form := url.Values{"id": {"1"}, "reason": {"r"}, "confirm": {"yes"}}
	code, _, _ := f.post(t, "/failed/ignore", form)
	require.Equal(t, http.StatusForbidden, code)
	form.Set("csrf", "forged")
	code, _, _ = f.post(t, "/failed/ignore", form)
	require.Equal(t, http.StatusForbidden, code)
	// A browser's cross-origin post is refused before the token is read.
	form.Set("csrf", f.token(t))
	code, _, _ = f.post(t, "/failed/ignore", form, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") })
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, 0, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'ignored'`))

	code, body, _ := f.post(t, "/failed/ignore", form)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'ignored'`))
}

func TestConsole_ReadOnlyShowsNoActionAndRejectsEveryPost(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *console.Config) { c.ReadOnly = true })
	f.seedFailed(t, 3)
	f.seedDeadLettered(t, "job-a", "item-1")
	for _, path := range []string{"/failed", "/failed/1", "/items"} {
		code, body, _ := f.get(t, path)
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, body, "<button type=\"submit\" id=\"reprocess", path)
		require.NotContains(t, body, `method="post"`, path)
	}
	for _, path := range []string{"/failed/reprocess", "/failed/ignore", "/failed/purge", "/items/retry", "/items/purge",
		"/items/clear", "/river/api/jobs/retry"} {
		code, _, _ := f.post(t, path, url.Values{"id": {"1"}, "confirm": {"yes"}, "reason": {"r"}})
		require.Equal(t, http.StatusForbidden, code, path)
	}
	require.Equal(t, 3, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'new'`))
}

func TestConsole_AuthenticationIsRequiredWhenConfigured(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *console.Config) {
		c.Auth = console.Auth{User: "alice", Password: "s3cret", Token: "tok-123"}
	})
	f.seedFailed(t, 2)
	code, _, h := f.get(t, "/")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, h.Get("WWW-Authenticate"), "Basic")
	code, _, _ = f.get(t, "/river/", func(r *http.Request) { r.SetBasicAuth("alice", "wrong") })
	require.Equal(t, http.StatusUnauthorized, code)
	code, _, _ = f.get(t, "/", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-12") })
	require.Equal(t, http.StatusUnauthorized, code)
	code, body, _ := f.get(t, "/", func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") })
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "signed in as alice")
	require.NotContains(t, body, "s3cret")
	code, _, _ = f.get(t, "/", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123") })
	require.Equal(t, http.StatusOK, code)

	// The action is audited with the authenticated user.
	alice := func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") }
	code, body, _ = f.post(t, "/failed/ignore", url.Values{"csrf": {f.token(t, alice)}, "id": {"2"}, "reason": {"known bug"},
		"confirm": {"yes"}}, alice)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM dead_letter_events WHERE actor = 'ui:alice' AND action = 'ignore'`))
	// Another user's token is not alice's.
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123") }
	code, _, _ = f.post(t, "/failed/ignore", url.Values{"csrf": {f.token(t, alice)}, "id": {"1"}, "reason": {"x"}, "confirm": {"yes"}}, bearer)
	require.Equal(t, http.StatusForbidden, code)
}

func TestCheckAddr_RefusesNonLoopbackWithoutAuthentication(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		auth console.Auth
		ok   bool
	}{
		{"127.0.0.1:8080", console.Auth{}, true},
		{"[::1]:8080", console.Auth{}, true},
		{"localhost:8080", console.Auth{}, true},
		{"0.0.0.0:8080", console.Auth{}, false},
		{":8080", console.Auth{}, false},
		{"10.1.2.3:8080", console.Auth{}, false},
		{"0.0.0.0:8080", console.Auth{User: "a", Password: "b"}, true},
		{"0.0.0.0:8080", console.Auth{Token: "t"}, true},
		{"0.0.0.0:8080", console.Auth{User: "a"}, false},
	} {
		err := console.CheckAddr(tc.addr, tc.auth)
		require.Equal(t, tc.ok, err == nil, "%s %+v: %v", tc.addr, tc.auth, err)
	}
	require.ErrorIs(t, console.CheckAddr("0.0.0.0:1", console.Auth{}), console.ErrAuthRequired)
}

func TestConsole_ActionsAreConfirmedAndCallTheStores(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedFailed(t, 8)
	f.seedDeadLettered(t, "job-a", "item-1", "item-2")
	tok := f.token(t)

	// Reprocess everything matching a filter: a dry run first, changing
	// nothing.
	form := url.Values{"csrf": {tok}, "mode": {"filter"}, "status": {"new"}, "signature": {"failure cause b"}}
	code, body, _ := f.post(t, "/failed/reprocess", form)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "Dry run: 2 rows of 2 files")
	require.Equal(t, 0, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing'`))
	form.Set("confirm", "yes")
	code, body, _ = f.post(t, "/failed/reprocess", form)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 2, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing'`))
	require.Equal(t, 1, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'reprocess' AND actor LIKE 'ui:%' AND item_count = 2`))

	// Ignore without a reason asks for one.
	code, body, _ = f.post(t, "/failed/ignore", url.Values{"csrf": {tok}, "id": {"2", "3"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "A reason is required.")

	// Purge counts first.
	code, body, _ = f.post(t, "/failed/purge", url.Values{"csrf": {tok}, "older_than_days": {"1"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "0 rows not updated for 1 days")

	// Retry with a JSONPath filter: the dry run claims and rolls back.
	code, body, _ = f.post(t, "/items/retry", url.Values{"csrf": {tok}, "job": {"job-a"}, "filter": {`$.item_id == "item-2"`}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "Dry run: 1 eligible dead-lettered items of job job-a")
	require.Equal(t, 0, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE status = 'reprocessing'`))
	code, body, _ = f.post(t, "/items/retry", url.Values{"csrf": {tok}, "job": {"job-a"}, "filter": {`$.item_id ==`}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `<code class="field">filter</code>`)
	code, body, _ = f.post(t, "/items/retry", url.Values{"csrf": {tok}, "job": {"job-a"}, "filter": {`$.item_id == "item-2"`}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM dead_lettered_items WHERE status = 'reprocessing' AND item_id = 'item-2'`))
	require.Equal(t, 1, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM dead_letter_events WHERE action = 'items_reprocessed' AND actor LIKE 'ui:%'`))

	code, body, _ = f.post(t, "/items/clear", url.Values{"csrf": {tok}, "job": {"job-a"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "0 items of job job-a were reprocessed")
	code, body, _ = f.post(t, "/items/purge", url.Values{"csrf": {tok}, "older_than_days": {"1"}, "job": {"job-a"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, fmt.Sprintf("%d items of job job-a", 0))
}

func TestConsole_FailedListFiltersByRepositoryAndCarriesItOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedFailed(t, 12)
	// Rows 3, 6, 9 and 12 are repository alpha's; the rest the default
	// repository's. Row i failed i minutes ago.
	f.exec(t, `UPDATE failed_pois SET repository = 'alpha' WHERE id % 3 = 0`)
	f.exec(t, `INSERT INTO files (repository, file_id) VALUES ('alpha', 'f0'), ('alpha', 'f1'), ('alpha', 'f2')`)
	rows := func(body string) []string {
		var ids []string
		for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}

	// Every repository: the rows show their repository.
	code, body, _ := f.get(t, "/failed")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, rows(body), 12)
	require.Contains(t, body, "<th>Repository</th>")
	require.Contains(t, body, `<td class="repository">alpha</td>`)
	require.Contains(t, body, `<td class="repository"><span class="muted">default</span></td>`)

	// One repository, a page at a time: the filter goes into the next
	// page's link, the grouping link, the form and the selected rows'
	// actions.
	var seen []string
	path := "/failed?repository=alpha&limit=3"
	for pages := 0; path != ""; pages++ {
		require.Less(t, pages, 3)
		code, body, _ = f.get(t, path)
		require.Equal(t, http.StatusOK, code, body)
		seen = append(seen, rows(body)...)
		require.Contains(t, body, `name="repository" value="alpha"`)
		require.Contains(t, body, `<input type="hidden" name="repository" value="alpha">`)
		require.Contains(t, body, `/failed/groups?limit=3&amp;repository=alpha"`)
		path = ""
		if m := nextRE.FindStringSubmatch(body); m != nil {
			require.Contains(t, m[1], "repository=alpha")
			path = "/failed?" + htmlUnescape(m[1])
		}
	}
	require.Equal(t, []string{"3", "6", "9", "12"}, seen)

	// The default repository is written "" (as --repository "" is typed);
	// its rows alone show no repository column.
	code, body, _ = f.get(t, "/failed?"+url.Values{"repository": {`""`}}.Encode())
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{"1", "2", "4", "5", "7", "8", "10", "11"}, rows(body))
	require.NotContains(t, body, "<th>Repository</th>")
	code, body, _ = f.get(t, "/failed?repository=none")
	require.Equal(t, http.StatusOK, code, body)
	require.Empty(t, rows(body))

	// The groups keep the repository in their links to the rows.
	code, body, _ = f.get(t, "/failed/groups?repository=alpha")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "4 failed POIs in")
	require.Regexp(t, `href="/failed\?[^"]*repository=alpha[^"]*" class="group-link"`, body)

	// The detail page shows the repository, and its links select it.
	code, body, _ = f.get(t, "/failed/3")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dd id="repository"><a href="/failed?repository=alpha">alpha</a></dd>`)
	require.Contains(t, body, `<a href="/failed?file=f0&amp;repository=alpha">f0</a>`)
	code, body, _ = f.get(t, "/failed/1")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dd id="repository"><a href="/failed?repository=%22%22">default</a></dd>`)

	// Reprocess everything matching the filter: the repository's rows only.
	tok := f.token(t)
	form := url.Values{"csrf": {tok}, "mode": {"filter"}, "status": {"new"}, "repository": {"alpha"}}
	code, body, _ = f.post(t, "/failed/reprocess", form)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "repository=alpha")
	require.Contains(t, body, "Dry run: 4 rows")
	require.Contains(t, body, `<input type="hidden" name="repository" value="alpha">`)
	form.Set("confirm", "yes")
	code, body, _ = f.post(t, "/failed/reprocess", form)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 4, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing' AND repository = 'alpha'`))
	require.Equal(t, 4, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'reprocessing'`))
	require.Contains(t, body, `href="/failed?repository=alpha&amp;status=reprocessing"`)

	// Selected rows with the page's repository: a row of another
	// repository is not taken.
	code, body, _ = f.post(t, "/failed/reprocess", url.Values{"csrf": {tok}, "mode": {"ids"}, "status": {"new"},
		"repository": {`""`}, "id": {"1", "2", "3"}})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `repository=&#34;&#34; (the default repository)`)
	require.Contains(t, body, "Dry run: 2 rows")
}

// A row superseded by a publish of its file shows why and when, and
// offers no action: it can be neither reprocessed nor ignored. The list
// filters by the status.
func TestConsole_SupersededRowShowsWhyAndOffersNoAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for range 2 {
		f.publish(t, "src/a.py", poi("a1", "a", "src/a.py", "one"))
		f.work(t)
	}
	var id int64
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), `SELECT id FROM failed_pois WHERE status = 'superseded'`).Scan(&id))
	code, body, _ := f.get(t, fmt.Sprintf("/failed/%d", id))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<span class="status status-superseded" id="status">superseded</span>`)
	require.Contains(t, body, `<dd id="superseded-reason">version 2 of the file was published</dd>`)
	require.Contains(t, body, `<dd id="file-version">1</dd>`)
	require.NotContains(t, body, `id="reprocess"`)
	require.NotContains(t, body, `id="ignore"`)

	code, body, _ = f.get(t, "/failed?status=superseded")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, rowRE.FindAllStringSubmatch(body, -1), 1)
	code, body, _ = f.get(t, "/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "superseded")
}
