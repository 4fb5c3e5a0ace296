package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/internal/testdb"
)

// chromiumPath finds headless Chromium, or fails the test saying what to
// install: the browser tests are never skipped.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the web console's browser tests need headless Chromium: install Debian's chromium package " +
		"(make chromium, or apt-get install chromium)")
	return ""
}

// browser is one headless Chromium tab on a fixture.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	// shots is where screenshots go (UPDATE_SCREENSHOTS=1), or "".
	shots string
}

func newBrowser(t *testing.T, f *fixture) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1360, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(actx)
	// The first run starts the browser, which lives as long as its context:
	// that context has no deadline; the actions after it do.
	require.NoError(t, chromedp.Do(tab), "starting Chromium")
	ctx, cancelTimeout := context.WithTimeout(tab, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, base: f.srv.URL}
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		b.shots = filepath.Join("..", "..", "docs", "ui")
		require.NoError(t, os.MkdirAll(b.shots, 0o755))
	}
	return b
}

func (b *browser) run(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...))
}

func get[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	require.NoError(b.t, err)
	return v
}

func (b *browser) open(path, waitFor string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// click clicks sel, which loads a page, and waits for waitFor on the new
// page: the old page's body is marked first, so an element of the old page
// never satisfies the wait.
func (b *browser) click(sel, waitFor string) {
	b.t.Helper()
	b.run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.body.dataset.stale = "1"; true`)(ctx, t)
		return err
	}), chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("body:not([data-stale]) "+waitFor)))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	// Read in the page by one script, not through a DOM node id, which
	// Chromium can invalidate between chromedp's query and its read ("No
	// node with given id found") on a loaded machine.
	text := get(b, chromedp.Evaluate[*string](fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e === null ? null : e.innerText; })()`, sel)))
	require.NotNil(b.t, text, "no element %s on the page", sel)
	return strings.TrimSpace(*text)
}

func (b *browser) exists(sel string) bool {
	b.t.Helper()
	return get(b, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
}

// post sends a form post from the page (same origin) with fetch and
// returns the status.
func (b *browser) post(path, body string) int {
	b.t.Helper()
	return get(b, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %q}).then(r => r.status)`,
		path, body), chromedp.EvalAwaitPromise))
}

// shot writes the page to docs/ui/name.png when UPDATE_SCREENSHOTS=1.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png := get(b, chromedp.FullScreenshot(100))
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644))
}

// TestBrowser_OperatorFlow drives the console in headless Chromium the way
// an operator would: the overview; filter failed POIs and open one;
// reprocess it and see its status change once a real worker has run;
// ignore another; group by signature; retry a dead-lettered item.
func TestBrowser_OperatorFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.publish(t, "src/app.go",
		poi("app.Run", "Run", "src/app.go", 3),
		poi("app.broken", "broken", "src/app.go", "three"),
		poi("app.other", "other", "src/app.go", "four"))
	f.work(t)
	f.seedFailed(t, 40)
	f.seedDeadLettered(t, "mr-demo", "item-1", "item-2", "item-3")
	require.Equal(t, 2, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE file_id = 'src/app.go' AND status = 'new'`))
	b := newBrowser(t, f)

	f.exec(t, `SELECT relay_publish('{"fileId": "src/queued.go", "pois": []}')`)
	f.exec(t, `INSERT INTO rejected_analyses (file_id, analysis, reason, file_version, queued_at)
		VALUES ('src/thief.go', '{"fileId": "src/thief.go", "pois": []}', 'poi "x": id already belongs to a POI of file "src/app.go"', 0, now())`)

	// 1. The overview.
	b.open("/", "#depth")
	require.Contains(t, b.text("#depth"), "failed_pois new")
	require.Regexp(t, `1\s+analyses queued by relay_publish\s+1\s+rejected_analyses`, b.text("#sql-publish"))
	b.shot("overview")

	// 2. Filter failed POIs and open one.
	b.open("/failed", "#filters")
	b.shot("failed_list")
	b.run(chromedp.SendKeys(chromedp.CSS(`input[name="poi"]`), "app.broken"))
	b.click("#apply", "a.row-link")
	require.Equal(t, 1, get(b, chromedp.Evaluate[int](`document.querySelectorAll("a.row-link").length`)))
	b.click(`a.row-link`, "#detail")
	require.Equal(t, "new", b.text("#status"))
	require.Contains(t, b.text("#poi-data"), `"name": "broken"`)
	b.shot("failed_detail")
	detailURL := get(b, chromedp.Location())

	// 3. Reprocess it, with its data corrected first (as an operator would
	// with SQL), and see its status change after the worker runs.
	f.exec(t, `UPDATE failed_pois SET original_poi_data = jsonb_set(original_poi_data, '{lineNumber}', '5') WHERE poi_id = 'app.broken'`)
	b.click("#reprocess", "#confirm")
	require.Contains(t, b.text("#confirm"), "Dry run: 1 rows of 1 files")
	b.shot("confirm_reprocess")
	b.click("#confirm-button", "#result")
	require.Contains(t, b.text("#result"), "1 rows moved to reprocessing")
	b.run(chromedp.Navigate(detailURL), chromedp.WaitVisible(chromedp.CSS("#status")))
	require.Equal(t, "reprocessing", b.text("#status"))
	f.work(t)
	b.run(chromedp.Navigate(detailURL), chromedp.WaitVisible(chromedp.CSS("#status")))
	require.Equal(t, "reprocessed", b.text("#status"))
	require.Contains(t, b.text("#events"), "reprocess_outcome")

	// 4. Ignore another.
	b.open("/failed?poi=app.other", "a.row-link")
	b.click("a.row-link", "#ignore")
	b.click("#ignore", "#reason")
	b.run(chromedp.SendKeys(chromedp.CSS("#reason"), "lineNumber is spelled out; fixed upstream"))
	b.click("#confirm-button", "#result")
	require.Contains(t, b.text("#result"), "1 rows ignored")
	b.click(`#result a`, "#status")
	require.Equal(t, "ignored", b.text("#status"))
	require.Equal(t, "lineNumber is spelled out; fixed upstream", b.text("#ignored-reason"))
	require.Contains(t, b.text("#events"), "ui:")

	// 5. Group by signature.
	b.open("/failed/groups", "#groups")
	require.Contains(t, b.text("#groups"), "failure cause a")
	b.shot("failed_groups")
	b.click(`a.group-link`, "#failed-rows")

	// 6. Retry a dead-lettered item with a JSONPath filter.
	b.open("/items?job=mr-demo", "#items")
	b.shot("items_list")
	b.open("/items/mr-demo/item-2", "#attempts")
	require.Contains(t, b.text("#logs"), "/var/log/relay/item-2-2.log")
	b.shot("item_detail")
	b.open("/items/groups", "#groups")
	b.shot("items_groups")
	b.open("/items?job=mr-demo", "#retry-form")
	b.run(chromedp.SendKeys(chromedp.CSS("#retry-filter"), `$.item_id == "item-2"`))
	b.click("#retry", "#confirm")
	require.Contains(t, b.text("#confirm"), "Dry run: 1 eligible dead-lettered items of job mr-demo")
	b.click("#confirm-button", "#result")
	require.Contains(t, b.text("#result"), "1 items of job mr-demo are back in the work queue")
	f.work(t)
	b.open("/items/mr-demo/item-2", "#status")
	require.Equal(t, "reprocessed", b.text("#status"))
	// The job's page names the variables its agents are given (set after
	// the retry: relay gives an agent only variables it has).
	f.exec(t, `UPDATE mapreduce_jobs SET agent_env = '{ANTHROPIC_API_KEY,GITHUB_TOKEN}' WHERE job_id = 'mr-demo'`)
	b.open("/jobs/mr-demo", "#counts")
	require.Contains(t, b.text("#agent-env"), "ANTHROPIC_API_KEY GITHUB_TOKEN")
	b.shot("job_detail")
	b.open("/jobs", "#mr-jobs")
	b.shot("jobs")

	// River UI is served under /river/ and links from the detail pages land
	// there.
	b.open("/river/jobs?state=completed", "body")
	require.True(t, get(b, chromedp.Poll[bool](`document.body.innerText.includes("resolve_file")`, chromedp.WithPollingTimeout(30*time.Second))))
	b.shot("river_ui")

	// A form posted without its CSRF token is refused.
	b.open("/failed", "#filters")
	require.Equal(t, 403, b.post("/failed/ignore", "id=1&reason=x&confirm=yes"))
}

// TestBrowser_ReadOnly: no action is shown, and a post is answered 403.
func TestBrowser_ReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *console.Config) { c.ReadOnly = true })
	f.seedFailed(t, 5)
	f.seedDeadLettered(t, "mr-demo", "item-1")
	b := newBrowser(t, f)
	b.open("/failed/1", "#detail")
	require.False(t, b.exists("#reprocess"))
	require.False(t, b.exists("#ignore"))
	b.open("/failed", "#failed-rows")
	require.False(t, b.exists(`input[type="checkbox"][name="id"]`))
	require.False(t, b.exists("form[method=post]"))
	b.open("/items", "#items")
	require.False(t, b.exists("#retry-form"))
	require.Equal(t, 403, b.post("/failed/ignore", "id=1&reason=x&confirm=yes"))
	require.Equal(t, 5, testdb.Count(t, f.db.Pool, `SELECT count(*) FROM failed_pois WHERE status = 'new'`))
}

// TestBrowser_GraphFlow walks the graph as a reader would: type a name in
// the header's search box and pick a completion; read the POI's page and
// its drawing (laid out by dagre); follow a caller, then a callee, link by
// link; search an ambiguous name and pick a candidate.
func TestBrowser_GraphFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	b := newBrowser(t, f)

	// 1. Completion from the overview's search box.
	b.open("/", "#search-q")
	b.run(chromedp.SendKeys(chromedp.CSS("#search-q"), "pars"))
	b.run(chromedp.WaitVisible(chromedp.CSS("#search-suggestions a.suggestion")))
	require.Equal(t, "app.Parsesrc/app.go:20", b.text("#search-suggestions li:first-child a"))
	b.shot("search_completion")
	b.click("#search-suggestions a.suggestion", "#poi")
	require.Equal(t, "Parse", b.text("#poi-name"))
	require.Equal(t, "src/app.go:20", b.text("#poi-location"))

	// 2. The drawing: dagre laid out Parse's neighbourhood at depth 2.
	drawn := func() []string {
		b.t.Helper()
		b.run(chromedp.WaitVisible(chromedp.CSS("svg#neighbourhood[data-drawn] g.node")))
		return get(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("svg#neighbourhood g.node")].map(g => g.dataset.poiId).sort()`))
	}
	require.Equal(t, []string{"app.Parse", "app.Run", "app.helper", "app.lex", "app.main", "cli.Execute"}, drawn())
	require.Equal(t, "app.Parse", get(b, chromedp.Evaluate[string](`document.querySelector("svg#neighbourhood g.node.root").dataset.poiId`)))
	require.Equal(t, 6, get(b, chromedp.Evaluate[int](`document.querySelectorAll("svg#neighbourhood path.edge").length`)))
	// Every node has a place of its own.
	require.Equal(t, 6, get(b, chromedp.Evaluate[int](`new Set([...document.querySelectorAll("svg#neighbourhood g.node")].map(g => g.getAttribute("transform"))).size`)))

	// 3. Walk: Parse's caller Run, Run's caller main, main's callee Run,
	// Run's callee helper; and a node of the drawing.
	b.click(`#callers a.caller`, "#poi")
	require.Equal(t, "Run", b.text("#poi-name"))
	require.Equal(t, []string{"app.Parse", "app.Run", "app.helper", "app.lex", "app.main", "cli.Execute"}, drawn())
	b.shot("poi")
	b.click(`#callers tr:nth-child(2) a.caller`, "#poi")
	require.Equal(t, "main", b.text("#poi-name"))
	require.Equal(t, "none", b.text("#callers td.muted"))
	b.click(`#callees a.callee`, "#poi")
	require.Equal(t, "Run", b.text("#poi-name"))
	b.click(`#callees tr:nth-child(3) a.callee`, "#poi")
	require.Equal(t, "helper", b.text("#poi-name"))
	require.Equal(t, []string{"Run", "Parse", "lex"}, get(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#callers a.caller")].map(a => a.textContent)`)))
	b.click(`svg#neighbourhood g.node[data-poi-id="app.lex"] a`, "#poi")
	require.Equal(t, "lex", b.text("#poi-name"))

	// 4. An ambiguous name: the candidates, then one of them.
	b.run(chromedp.SendKeys(chromedp.CSS("#search-q"), "Find"))
	b.run(chromedp.WaitVisible(chromedp.CSS("#search-suggestions a.suggestion")))
	b.run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.body.dataset.stale = "1"; document.getElementById("search").submit(); true`)(ctx, t)
		return err
	}), chromedp.WaitVisible(chromedp.CSS("body:not([data-stale]) #candidates")))
	require.Contains(t, b.text("#matched"), "2 POIs match Find by name")
	b.shot("search")
	b.click(`#candidates tr:nth-child(3) a.candidate`, "#poi")
	require.Equal(t, "src/find.go:2", b.text("#poi-location"))

	// 5. An unknown name: near names.
	b.open("/search?q=Parze", "#not-found")
	b.click("#near a", "#poi")
	require.Equal(t, "Parse", b.text("#poi-name"))
}
