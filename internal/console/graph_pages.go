package console

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/graph"
)

// The bounds of the graph pages: what a page reads costs the same whatever
// the POI's degree or the table's size.
const (
	// maxTargetLen bounds a search, in bytes.
	maxTargetLen = 500
	// completions is the most matches the completion endpoint returns.
	completions = 10
	// maxCandidates is the most candidates a search lists.
	maxCandidates = 200
	// poiFailedRows is the most failed_pois rows a POI page lists.
	poiFailedRows = 10
)

// neighbourhoodLimits bound a POI page: 100 direct callers and callees
// listed, a drawing of at most 40 POIs with at most 5 callers (or callees)
// of each direct one.
var neighbourhoodLimits = graph.Limits{Direct: 100, Items: 40, PerItem: 5}

// poiLink is an item with its POI page's URL.
type poiLink struct {
	graph.Item
	URL string
}

// poiURL is the path and query of the POI page of it (relType "" or CALLS:
// the default).
func (c *Console) poiURL(it graph.Item, relType string) string {
	v := url.Values{"repository": {repositoryParam(it.Repository)}, "id": {it.POIID}}
	if relType != "" && relType != graph.RelTypes[0] {
		v.Set("type", relType)
	}
	return c.cfg.Prefix + "/poi?" + v.Encode()
}

func (c *Console) links(items []graph.Item, relType string) []poiLink {
	out := make([]poiLink, len(items))
	for i, it := range items {
		out[i] = poiLink{Item: it, URL: c.poiURL(it, relType)}
	}
	return out
}

// target reads the q parameter: a name, file:name, symbol or POI id.
func target(v url.Values, field string) (string, error) {
	q := strings.TrimSpace(v.Get(field))
	switch {
	case q == "":
		return "", invalidInput{{Field: field, Msg: "type a name, a symbol, file:name or a POI id"}}
	case len(q) > maxTargetLen:
		return "", invalidInput{{Field: field, Msg: "longer than 500 bytes"}}
	case !utf8.ValidString(q):
		return "", invalidInput{{Field: field, Msg: "not valid UTF-8"}}
	}
	return q, nil
}

type searchData struct {
	Query      string
	Repository string
	// MatchedBy says how the candidates matched (graph.Find).
	MatchedBy  graph.MatchedBy
	Candidates []poiLink
	More       bool
	// Near are names near an unknown target, with their search URLs.
	Near []nearName
}

type nearName struct{ Name, URL string }

// search finds the POIs q names, as `relay graph` does (graph.Find): one
// goes straight to its page (303), several are listed as candidates with
// their locations, none answers 404 with near names.
func (c *Console) search(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	q, err := target(v, "q")
	if err != nil {
		return err
	}
	repo := repositoryFilter(v.Get("repository"))
	items, by, err := graph.Find(r.Context(), c.pool, q, repo)
	if err != nil {
		return err
	}
	if len(items) == 1 {
		http.Redirect(w, r, c.poiURL(items[0], ""), http.StatusSeeOther)
		return nil
	}
	d := searchData{Query: q, Repository: v.Get("repository"), MatchedBy: by}
	if len(items) > maxCandidates {
		items, d.More = items[:maxCandidates], true
	}
	d.Candidates = c.links(items, "")
	if len(items) > 0 {
		return c.render(w, r, http.StatusOK, "search", "POIs matching "+q, "", d)
	}
	near, err := graph.Suggest(r.Context(), c.pool, q, repo)
	if err != nil {
		return err
	}
	for _, n := range near {
		sv := url.Values{"q": {n}}
		if d.Repository != "" {
			sv.Set("repository", d.Repository)
		}
		d.Near = append(d.Near, nearName{Name: n, URL: c.cfg.Prefix + "/search?" + sv.Encode()})
	}
	return c.render(w, r, http.StatusNotFound, "search", "No POI named "+q, "", d)
}

// completion is one match of the completion endpoint.
type completion struct {
	graph.Item
	Label    string `json:"label"`
	Location string `json:"location"`
	URL      string `json:"url"`
}

// complete answers the search box as the user types: up to completions
// POIs whose name (or symbol) starts with q (graph.Complete), as JSON
// {"query": q, "matches": [...]}. Bad input is a 400 with {"error": ...}.
func (c *Console) complete(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	securityHeaders(h, pageCSP)
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	v := r.URL.Query()
	q, err := target(v, "q")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	items, err := graph.Complete(r.Context(), c.pool, q, repositoryFilter(v.Get("repository")), completions)
	if err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console completion failed", slog.Int("query_bytes", len(q)),
			slog.String("error", err.Error()))
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "the completion failed; the console's log says why"})
		return
	}
	out := struct {
		Query   string       `json:"query"`
		Matches []completion `json:"matches"`
	}{Query: q, Matches: make([]completion, len(items))}
	for i, it := range items {
		out.Matches[i] = completion{Item: it, Label: it.Label(), Location: it.Location(), URL: c.poiURL(it, "")}
	}
	_ = json.NewEncoder(w).Encode(out)
}

// drawing is the neighbourhood as static/poi_graph.js draws it with dagre.
type drawing struct {
	Nodes []drawNode `json:"nodes"`
	// Edges are [from, to] indexes into Nodes.
	Edges [][2]int `json:"edges"`
}

type drawNode struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Title string `json:"title"`
	URL   string `json:"url"`
	Root  bool   `json:"root"`
}

type poiData struct {
	POI      poiLink
	RelType  string
	RelTypes []relTab
	Callers  []poiLink
	Callees  []poiLink
	N        *graph.Neighbourhood
	Drawing  drawing
	Failed   []failed.Record
	// FailedMore is set when the POI has more failed_pois rows than
	// listed; FailedURL lists them all.
	FailedMore bool
	FailedURL  string
	Limits     graph.Limits
}

type relTab struct {
	Type, URL string
	On        bool
}

// poiPage shows a POI: its location, its direct callers and callees (type
// CALLS, or the type parameter's), each linking to its own page, a drawing
// of its neighbourhood to depth 2, and its failed_pois rows.
func (c *Console) poiPage(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	id, err := target(v, "id")
	if err != nil {
		return err
	}
	relType := v.Get("type")
	if relType == "" {
		relType = graph.RelTypes[0]
	}
	if !slices.Contains(graph.RelTypes, relType) {
		return invalidInput{{Field: "type", Msg: "not one of " + strings.Join(graph.RelTypes, ", ")}}
	}
	repo := repositoryFilter(v.Get("repository"))
	items, by, err := graph.Find(r.Context(), c.pool, id, repo)
	if err != nil {
		return err
	}
	if by != graph.ByID || len(items) == 0 {
		where := "any repository"
		if repo != nil {
			where = "repository " + repositoryParam(*repo)
		}
		return httpError{code: http.StatusNotFound, msg: "no POI with id " + id + " in " + where +
			": search by name instead (" + c.cfg.Prefix + "/search?" + url.Values{"q": {id}}.Encode() + ")"}
	}
	if len(items) > 1 {
		// The same id in several repositories: let the user pick.
		http.Redirect(w, r, c.cfg.Prefix+"/search?"+url.Values{"q": {id}}.Encode(), http.StatusSeeOther)
		return nil
	}
	it := items[0]
	n, err := graph.ReadNeighbourhood(r.Context(), c.pool, it, relType, neighbourhoodLimits)
	if err != nil {
		return err
	}
	itRepo := it.Repository
	rows, err := c.failed.List(r.Context(), failed.Filter{Repository: &itRepo, POIID: it.POIID}, poiFailedRows+1)
	if err != nil {
		return err
	}
	d := poiData{POI: poiLink{Item: it, URL: c.poiURL(it, relType)}, RelType: relType, N: n, Limits: neighbourhoodLimits,
		Callers: c.links(n.Callers, relType), Callees: c.links(n.Callees, relType), Failed: rows,
		FailedURL: c.cfg.Prefix + "/failed?" + url.Values{"repository": {repositoryParam(it.Repository)}, "poi": {it.POIID}}.Encode()}
	if len(d.Failed) > poiFailedRows {
		d.Failed, d.FailedMore = d.Failed[:poiFailedRows], true
	}
	for _, t := range graph.RelTypes {
		d.RelTypes = append(d.RelTypes, relTab{Type: t, URL: c.poiURL(it, t), On: t == relType})
	}
	index := map[graph.Key]int{}
	for i, x := range n.Items {
		index[x.Key()] = i
		d.Drawing.Nodes = append(d.Drawing.Nodes, drawNode{ID: x.POIID, Label: x.Name, Title: x.Label() + " · " + x.Location(),
			URL: c.poiURL(x, relType), Root: i == 0})
	}
	d.Drawing.Edges = [][2]int{}
	for _, e := range n.Edges {
		from, okFrom := index[e.From]
		to, okTo := index[e.To]
		if !okFrom || !okTo {
			return errors.New("a neighbourhood edge names a POI it does not list")
		}
		d.Drawing.Edges = append(d.Drawing.Edges, [2]int{from, to})
	}
	return c.render(w, r, http.StatusOK, "poi", it.Label(), "", d)
}
