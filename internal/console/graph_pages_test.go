package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/console"
)

// scriptRE finds the start of every script element (any case).
var scriptRE = regexp.MustCompile(`(?i)<script([^>]*)>`)

// requireNoInlineScript fails when body, a page of a console mounted at
// prefix ("" or "/ui"), has a script the CSP would refuse: every script
// is a file of prefix + "/static/", or JSON data.
func requireNoInlineScript(t *testing.T, prefix, path, body string) {
	t.Helper()
	for _, m := range scriptRE.FindAllStringSubmatch(body, -1) {
		attrs := m[1]
		ok := strings.Contains(attrs, ` src="`+prefix+`/static/`) || strings.Contains(attrs, ` type="application/json"`)
		require.True(t, ok, "%s: a script that is neither a static file of %s/static/ nor JSON data: %s", path, prefix, m[0])
	}
}

// gpoi is a POI's JSON with supplied CALLS references to the POI ids in
// calls.
func gpoi(id, name, file string, line int, symbol string, calls ...string) json.RawMessage {
	refs := []map[string]string{}
	for _, c := range calls {
		refs = append(refs, map[string]string{"type": "CALLS", "targetId": c})
	}
	p := map[string]any{"id": id, "type": "function_definition", "name": name, "filePath": file, "lineNumber": line,
		"references": refs}
	if symbol != "" {
		p["symbol"] = symbol
	}
	raw, _ := json.Marshal(p)
	return raw
}

// seedGraph publishes a small call graph and works it:
//
//	main -> Run -> Parse -> lex -> helper
//	        Run -> helper; Parse -> helper; Execute -> Run
//	cli.go and find.go both have a Find (an ambiguous name); hub has 120
//	callers (more than a page lists).
func (f *fixture) seedGraph(t *testing.T) {
	t.Helper()
	f.publish(t, "src/app.go",
		gpoi("app.main", "main", "src/app.go", 3, "app.main", "app.Run"),
		gpoi("app.Run", "Run", "src/app.go", 10, "app.Run", "app.Parse", "app.helper"),
		gpoi("app.Parse", "Parse", "src/app.go", 20, "app.Parse", "app.lex", "app.helper"),
		gpoi("app.lex", "lex", "src/app.go", 30, "app.lex", "app.helper"),
		gpoi("app.helper", "helper", "src/app.go", 40, "app.helper"))
	f.publish(t, "src/cli.go",
		gpoi("cli.Execute", "Execute", "src/cli.go", 5, "cli.Execute", "app.Run"),
		gpoi("cli.Find", "Find", "src/cli.go", 9, "cli.(*Command).Find"))
	f.publish(t, "src/find.go", gpoi("find.Find", "Find", "src/find.go", 2, "find.Find"))
	var hubCallers []json.RawMessage
	for i := range 120 {
		hubCallers = append(hubCallers, gpoi(fmt.Sprintf("hub.c%03d", i), fmt.Sprintf("caller%03d", i), "src/hub.go", 10+i, "", "hub.hub"))
	}
	f.publish(t, "src/hub.go", append(hubCallers, gpoi("hub.hub", "hub", "src/hub.go", 1, "hub.hub"))...)
	f.work(t)
}

// noRedirect makes the client return redirects instead of following them.
func noRedirect(f *fixture) {
	f.srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
}

// graphData reads a POI page's drawing data.
type graphData struct {
	Nodes []drawnNode
	Edges [][2]int
}

type drawnNode struct {
	ID, Label, URL string
	Root           bool
}

func pageGraph(t *testing.T, body string) graphData {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="graph-data">(.*?)</script>`).FindStringSubmatch(body)
	require.NotNil(t, m, "the page has its drawing's data")
	var g graphData
	require.NoError(t, json.Unmarshal([]byte(m[1]), &g))
	return g
}

func (g graphData) ids() []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.ID)
	}
	slices.Sort(out)
	return out
}

func (g graphData) edges() []string {
	var out []string
	for _, e := range g.Edges {
		out = append(out, g.Nodes[e[0]].ID+">"+g.Nodes[e[1]].ID)
	}
	slices.Sort(out)
	return out
}

func TestGraphPages_SearchFindsOneAndRedirectsToItsPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	noRedirect(f)
	for _, q := range []string{"Run", "app.Run", "src/app.go:Run"} {
		code, body, h := f.get(t, "/search?q="+url.QueryEscape(q))
		require.Equal(t, http.StatusSeeOther, code, "%s: %s", q, body)
		require.Equal(t, "/poi?id=app.Run&repository=%22%22", h.Get("Location"), q)
	}

	code, body, _ := f.get(t, "/poi?id=app.Run&repository=%22%22")
	require.Equal(t, http.StatusOK, code, body)
	requireNoInlineScript(t, "", "/poi", body)
	require.Contains(t, body, `<code id="poi-location">src/app.go:10</code>`)
	require.Contains(t, body, `<dd id="poi-type">function_definition</dd>`)
	require.Contains(t, body, `<code>app.Run</code>`)
	callers := regexp.MustCompile(`class="caller">(\w+)<`).FindAllStringSubmatch(body, -1)
	callees := regexp.MustCompile(`class="callee">(\w+)<`).FindAllStringSubmatch(body, -1)
	require.Equal(t, []string{"main", "Execute"}, []string{callers[0][1], callers[1][1]}) // by file, then line
	require.Len(t, callers, 2)
	require.Len(t, callees, 2)
	require.Equal(t, []string{"Parse", "helper"}, []string{callees[0][1], callees[1][1]})
	require.Contains(t, body, `href="/poi?id=app.Parse&amp;repository=%22%22" class="callee"`)

	// Depth 2 both ways: callers of callers (none above main and Execute),
	// callees of callees (lex; helper is reached twice).
	g := pageGraph(t, body)
	require.Equal(t, []string{"app.Parse", "app.Run", "app.helper", "app.lex", "app.main", "cli.Execute"}, g.ids())
	require.True(t, g.Nodes[0].Root)
	require.Equal(t, "app.Run", g.Nodes[0].ID)
	require.Equal(t, []string{"app.Parse>app.helper", "app.Parse>app.lex", "app.Run>app.Parse", "app.Run>app.helper",
		"app.main>app.Run", "cli.Execute>app.Run"}, g.edges())
	require.NotContains(t, body, `id="capped"`)
	require.Contains(t, body, `id="failed-none"`)
}

func TestGraphPages_AmbiguousAndUnknownSearches(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	code, body, _ := f.get(t, "/search?q=Find")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "2 POIs match <code>Find</code> by name")
	require.Regexp(t, `(?s)href="/poi\?id=cli.Find&amp;repository=%22%22" class="candidate">Find</a>.*<code>src/cli.go:9</code>`, body)
	require.Contains(t, body, `href="/poi?id=find.Find&amp;repository=%22%22" class="candidate"`)

	code, body, _ = f.get(t, "/search?q=Parze")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body, "No POI is named <code>Parze</code>")
	require.Contains(t, body, `<a href="/search?q=Parse">Parse</a>`)

	code, body, _ = f.get(t, "/search?q=zzzzzzzz")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body, "No name is near it.")
}

func TestGraphPages_BadInputAndUnknownPOIs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	for path, want := range map[string]struct {
		code int
		text string
	}{
		"/search":                               {400, `q</code>: type a name, a symbol, file:name or a POI id`},
		"/search?q=+++":                         {400, `q</code>: type a name`},
		"/search?q=" + strings.Repeat("x", 501): {400, `q</code>: longer than 500 bytes`},
		"/search?q=%ff":                         {400, `q</code>: not valid UTF-8`},
		"/poi":                                  {400, `id</code>: type a name`},
		"/poi?id=app.Run&type=CALLZ":            {400, `type</code>: not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS`},
		"/poi?id=app.Nope":                      {404, "no POI with id app.Nope in any repository"},
		"/poi?id=app.Run&repository=elsewhere":  {404, "no POI with id app.Run in repository elsewhere"},
		"/poi?id=Run&repository=%22%22":         {404, "search by name instead (/search?q=Run)"},
	} {
		code, body, _ := f.get(t, path)
		require.Equal(t, want.code, code, "%s: %s", path, body)
		require.Contains(t, body, want.text, path)
	}
	for path, want := range map[string]string{
		"/search/complete": "q: type a name",
		"/search/complete?q=" + strings.Repeat("y", 600): "q: longer than 500 bytes",
	} {
		code, body, h := f.get(t, path)
		require.Equal(t, http.StatusBadRequest, code, path)
		require.Equal(t, "application/json", h.Get("Content-Type"))
		var e struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		require.Contains(t, e.Error, want, path)
	}
	// Without a repository, an id found in one repository is enough.
	code, body, _ := f.get(t, "/poi?id=app.Run")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<code id="poi-id">app.Run</code>`)
}

type completions struct {
	Query   string
	Matches []struct {
		POIID    string `json:"poi_id"`
		Label    string
		Location string
		URL      string
	}
}

func (f *fixture) complete(t *testing.T, q string) completions {
	t.Helper()
	code, body, _ := f.get(t, "/search/complete?q="+url.QueryEscape(q))
	require.Equal(t, http.StatusOK, code, body)
	var c completions
	require.NoError(t, json.Unmarshal([]byte(body), &c), body)
	return c
}

func TestGraphPages_CompletionMatchesNamesAndSymbolsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	ids := func(c completions) []string {
		var out []string
		for _, m := range c.Matches {
			out = append(out, m.POIID)
		}
		return out
	}
	// A name's prefix, in either case of its first letter; the exact name
	// first.
	require.Equal(t, []string{"app.Run"}, ids(f.complete(t, "Ru")))
	require.Equal(t, []string{"app.Run"}, ids(f.complete(t, "ru")))
	require.Equal(t, []string{"app.Parse"}, ids(f.complete(t, "par")))
	c := f.complete(t, "Find")
	require.Equal(t, []string{"cli.Find", "find.Find"}, ids(c))
	require.Equal(t, "cli.(*Command).Find", c.Matches[0].Label)
	require.Equal(t, "src/cli.go:9", c.Matches[0].Location)
	require.Equal(t, "/poi?id=cli.Find&repository=%22%22", c.Matches[0].URL)
	// A symbol's prefix.
	require.Equal(t, []string{"cli.Find", "cli.Execute"}, ids(f.complete(t, "cli.")))
	// Bounded: 120 names start with "caller".
	c = f.complete(t, "caller")
	require.Len(t, c.Matches, 10)
	require.Equal(t, "hub.c000", c.Matches[0].POIID)
	require.Empty(t, f.complete(t, "nothing like it").Matches)
	// % and _ are text, not patterns.
	require.Empty(t, f.complete(t, "%").Matches)
	require.Empty(t, f.complete(t, "_").Matches)
}

func TestGraphPages_HubIsCappedAndSaysSo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	code, body, _ := f.get(t, "/poi?id=hub.hub")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, regexp.MustCompile(`class="caller"`).FindAllString(body, -1), 100)
	require.Contains(t, body, `id="more-callers"`)
	require.Contains(t, body, `<strong id="capped">Capped:</strong>`)
	g := pageGraph(t, body)
	require.Len(t, g.Nodes, 40)
	require.Len(t, g.Edges, 39)
	// The caller's page: one callee, hub.
	code, body, _ = f.get(t, "/poi?id=hub.c007")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `class="callee">hub<`)
	require.NotContains(t, body, `id="capped"`)
}

func TestGraphPages_FailedHistoryLinksToFailedPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedGraph(t)
	f.exec(t, `
		INSERT INTO failed_pois (original_job_id, file_id, poi_id, poi_index, failed_at, error_message, error_class,
		                         error_signature, error_history, original_poi_data, status, superseded_at, superseded_reason)
		SELECT 2000 + i, 'src/app.go', 'app.lex', 0, now() - make_interval(mins => i), 'lex failed ' || i, 'validation',
		       'lex failed', '[]', '{}', CASE WHEN i = 1 THEN 'new' ELSE 'superseded' END,
		       CASE WHEN i > 1 THEN now() END, CASE WHEN i > 1 THEN 'a newer failure of the same POI' END
		FROM generate_series(1, 12) AS i`)
	var first int64
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), `SELECT min(id) FROM failed_pois WHERE original_job_id = 2001`).Scan(&first))
	code, body, _ := f.get(t, "/poi?id=app.lex")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, regexp.MustCompile(`<a href="/failed/\d+">`).FindAllString(body, -1), 10)
	require.Contains(t, body, fmt.Sprintf(`<a href="/failed/%d">`, first), "the newest failure first")
	require.Contains(t, body, `<a href="/failed?poi=app.lex&amp;repository=%22%22" id="failed-all">Every failed_pois row of this POI</a>`)
	code, body, _ = f.get(t, "/failed?poi=app.lex&repository=%22%22")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, rowRE.FindAllString(body, -1), 12)
}

// TestVendoredDagre_IsThePinnedRelease: static/vendor holds @dagrejs/dagre
// 3.1.3's dist/dagre.min.js byte for byte (VENDOR.md).
func TestVendoredDagre_IsThePinnedRelease(t *testing.T) {
	t.Parallel()
	js, err := os.ReadFile("static/vendor/dagre-3.1.3.min.js")
	require.NoError(t, err)
	sum := sha256.Sum256(js)
	doc, err := os.ReadFile("static/vendor/VENDOR.md")
	require.NoError(t, err)
	require.Contains(t, string(doc), hex.EncodeToString(sum[:]))
	lic, err := os.ReadFile("static/vendor/dagre-3.1.3.LICENSE.txt")
	require.NoError(t, err)
	require.Contains(t, string(lic), "Permission is hereby granted, free of charge")
}

// TestGraphPages_UnderAPrefix: mounted under /ui/ (the worker's
// worker_console), every link, redirect, script and completion URL has the
// prefix.
func TestGraphPages_UnderAPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *console.Config) { c.Prefix = "/ui" })
	f.seedGraph(t)
	noRedirect(f)
	for _, path := range []string{"/ui/search?q=Find", "/ui/search?q=Parze"} {
		_, body, _ := f.get(t, path)
		requireNoInlineScript(t, "/ui", path, body)
		require.Contains(t, body, `<script src="/ui/static/search.js" defer></script>`, path)
	}
	code, _, h := f.get(t, "/ui/search?q=Run")
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/ui/poi?id=app.Run&repository=%22%22", h.Get("Location"))
	code, body, _ := f.get(t, "/ui/poi?id=app.Run&repository=%22%22")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<form id="search" class="search" action="/ui/search"`)
	requireNoInlineScript(t, "/ui", "/ui/poi", body)
	require.Contains(t, body, `<script src="/ui/static/search.js" defer></script>`)
	require.Contains(t, body, `<script src="/ui/static/vendor/dagre-3.1.3.min.js" defer></script>`)
	require.Contains(t, body, `href="/ui/poi?id=app.Parse&amp;repository=%22%22" class="callee"`)
	nodes := pageGraph(t, body).Nodes
	parse := slices.IndexFunc(nodes, func(n drawnNode) bool { return n.ID == "app.Parse" })
	require.Equal(t, "/ui/poi?id=app.Parse&repository=%22%22", nodes[parse].URL)
	code, body, _ = f.get(t, "/ui/search/complete?q=Ru")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"url":"/ui/poi?id=app.Run\u0026repository=%22%22"`)
	code, _, _ = f.get(t, "/ui/static/vendor/dagre-3.1.3.min.js")
	require.Equal(t, http.StatusOK, code)
}

// TestGraphPages_HostileNamesRenderEscaped: a POI whose name or symbol is
// markup ("</script><img ...>", "<!--") or has U+2028 (a line terminator in
// JavaScript) shows as text on its page, in its drawing's JSON, among the
// search candidates, as a near name and in the completion JSON: no element,
// comment or script end comes from the data.
func TestGraphPages_HostileNamesRenderEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const (
		evil    = `</script><img src=x onerror=alert(1)>`
		comment = "<!--x\u2028y"
		symbol  = "evil.<!--\u2028</script>"
	)
	f.publish(t, "src/evil.go",
		gpoi("evil.a", evil, "src/evil.go", 1, symbol, "evil.b"),
		gpoi("evil.b", comment, "src/evil.go", 2, "evil.b"),
		gpoi("evil.c", evil, "src/evil.go", 3, "evil.c"))
	f.work(t)
	// requireInert: body has no markup from the data, and the data's
	// characters appear only escaped.
	requireInert := func(path, body string) {
		t.Helper()
		requireNoInlineScript(t, "", path, body)
		require.NotContains(t, body, "<img", path)
		require.NotContains(t, body, "<!--", path)
		require.Equal(t, strings.Count(body, "<script"), strings.Count(body, "</script>"), "%s: every </script> ends a script of the page", path)
	}
	htmlEvil := `&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`

	code, body, _ := f.get(t, "/poi?id=evil.a")
	require.Equal(t, http.StatusOK, code, body)
	requireInert("/poi", body)
	require.Contains(t, body, `<dd id="poi-name">`+htmlEvil+`</dd>`)
	require.Contains(t, body, "<code>evil.&lt;!--\u2028&lt;/script&gt;</code>")
	require.Contains(t, body, `class="callee">&lt;!--x`+"\u2028"+`y</a>`)
	m := regexp.MustCompile(`(?s)<script type="application/json" id="graph-data">(.*?)</script>`).FindStringSubmatch(body)
	require.NotNil(t, m)
	require.NotContains(t, m[1], "<", "the drawing's JSON has no markup")
	require.NotContains(t, m[1], "\u2028", "nor a raw U+2028")
	require.Contains(t, m[1], `\u003c/script\u003e\u003cimg src=x onerror=alert(1)\u003e`)
	g := pageGraph(t, body)
	labels := map[string]string{}
	for _, n := range g.Nodes {
		labels[n.ID] = n.Label
	}
	require.Equal(t, map[string]string{"evil.a": evil, "evil.b": comment}, labels, "the JSON reads back as the names")

	// Two POIs have the name: the candidates.
	code, body, _ = f.get(t, "/search?q="+url.QueryEscape(evil))
	require.Equal(t, http.StatusOK, code, body)
	requireInert("/search", body)
	require.Contains(t, body, "2 POIs match <code>"+htmlEvil+"</code> by name")
	require.Equal(t, 2, strings.Count(body, `class="candidate">`+htmlEvil+`</a>`))
	require.Contains(t, body, "<code>evil.&lt;!--\u2028&lt;/script&gt;</code>")

	// One letter off: a near name, its link's query encoded.
	near := strings.Replace(evil, "alert(1)", "alert(2)", 1)
	code, body, _ = f.get(t, "/search?q="+url.QueryEscape(near))
	require.Equal(t, http.StatusNotFound, code, body)
	requireInert("/search (unknown)", body)
	require.Regexp(t, `<span id="near"><a href="/search\?q=%3C%2Fscript%3E%3Cimg[^"<>]*">`+regexp.QuoteMeta(htmlEvil)+`</a>`, body)

	// The completion JSON: names and symbols escaped, reading back as
	// they are.
	for _, q := range []string{"</scr", "<!--", "evil.<"} {
		code, body, h := f.get(t, "/search/complete?q="+url.QueryEscape(q))
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "application/json", h.Get("Content-Type"))
		require.NotContains(t, body, "<", q)
		require.NotContains(t, body, ">", q)
		require.NotContains(t, body, "\u2028", q)
		var c struct {
			Matches []struct {
				POIID string `json:"poi_id"`
				Name  string
				Label string
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &c), body)
		require.NotEmpty(t, c.Matches, q)
		for _, x := range c.Matches {
			switch x.POIID {
			case "evil.a":
				require.Equal(t, evil, x.Name, q)
				require.Equal(t, symbol, x.Label, q)
			case "evil.b":
				require.Equal(t, comment, x.Name, q)
			case "evil.c":
				require.Equal(t, evil, x.Name, q)
			default:
				t.Fatalf("%s: unexpected match %s", q, x.POIID)
			}
		}
	}
	code, body, _ = f.get(t, "/search/complete?q="+url.QueryEscape("</scr"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `\u003c/script\u003e\u003cimg src=x onerror=alert(1)\u003e`)
	code, body, _ = f.get(t, "/search/complete?q="+url.QueryEscape("<!--"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `\u003c!--x\u2028y`)
}
