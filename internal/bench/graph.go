package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/internal/graph"
	"github.com/relay-dev/relay/worker"
)

// Graph is the graph phase: reading the graph as `relay graph`, the SQL
// functions and the console's POI page do, on GraphPOIs POIs and about three
// times as many relationships written straight into pois and
// poi_references (the phase measures reads; the other phases measure
// writing them).
type Graph struct {
	POIs          int64 `json:"pois"`
	Relationships int64 `json:"relationships"`
	// BuildSeconds is the time to write the corpus and build its indexes.
	BuildSeconds float64 `json:"build_seconds"`
	// Samples is how many POIs, drawn at random, each one-level figure is
	// over.
	Samples int `json:"samples"`
	// Callers and Callees are one level of a POI's callers (callees), read
	// as `relay graph callers` reads them (graph.Walk: relay_callers,
	// relay_callees), in milliseconds.
	Callers Latency `json:"callers_ms"`
	Callees Latency `json:"callees_ms"`
	// DepthThree is the transitive callers, to depth 3, of a POI with
	// DepthThreeResults of them (graph.Walk, relay_callers), over
	// DepthThreeRuns runs (100: its P99 is the 99th, not the Max).
	DepthThree        Latency `json:"depth_three_ms"`
	DepthThreeResults int     `json:"depth_three_results"`
	DepthThreeRuns    int     `json:"depth_three_runs"`
	// Page is the console's POI page (/poi) fetched over HTTP (a loopback
	// httptest server), from the request until the last byte of the body;
	// Complete the search box's completion endpoint.
	Page     Latency `json:"poi_page_ms"`
	Complete Latency `json:"complete_ms"`
}

// Latency is a distribution of timings, in milliseconds. P50 and P99 are
// nearest-rank percentiles: the ceil(q*n)-th smallest of n timings, so P99
// is the largest of fewer than 100 timings (the Max) and the 99th smallest
// of 100.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func latency(ms []float64) Latency {
	slices.Sort(ms)
	at := func(q float64) float64 { return ms[max(0, int(math.Ceil(q*float64(len(ms))))-1)] }
	return Latency{P50: at(0.5), P99: at(0.99), Max: ms[len(ms)-1]}
}

// The graph phase's corpus: repository graphRepository; POI i is "p<i>",
// named "fn<i>", in file i/50. POIs 0 to treeSize-1 are a tree: POI j calls
// POI (j-1)/10, so POI 0 has 10 callers, 100 at depth 2 and 1,000 at depth
// 3 (1,110 in all), and no other POI calls into the tree. Every other POI
// calls three POIs outside the tree, drawn by a hash of its number: a
// random graph of in- and out-degree 3 on average.
const (
	graphRepository  = "bench"
	treeSize         = 1 + 10 + 100 + 1000
	graphPOIsPerFile = 50
	graphSamples     = 1000
	graphPageSamples = 300
	graphDepthRuns   = 100
)

// buildGraph writes the corpus with set-based SQL: files, then pois, then
// poi_references, with the secondary indexes of pois and poi_references
// dropped during the load and created again after it from their own
// definitions (pg_indexes), as a bulk load is done. The drops, the load
// and the creates are one transaction: a load that fails or is cancelled
// rolls the drops back with it, so the database never keeps the tables
// without their indexes (TestBuildGraph_FailedLoadKeepsTheIndexes). The
// rows are what the worker would write for POIs whose analyzer supplied
// references by POI id (name "id:<target>", its key the name as
// resolver.ReferenceKey says, resolved, round 1).
func (b *bench) buildGraph(ctx context.Context, n int) (float64, error) {
	return b.buildGraphWith(ctx, n, nil)
}

// buildGraphWith is buildGraph; afterLoad, when not nil, runs in the
// transaction once the rows are written, before the indexes are created
// again (its error fails the build, as a failed step would).
func (b *bench) buildGraphWith(ctx context.Context, n int, afterLoad func(context.Context, pgx.Tx) error) (float64, error) {
	if err := b.reset(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename IN ('pois', 'poi_references') AND indexname NOT LIKE '%\_pkey'
			ORDER BY indexname`)
		if err != nil {
			return fmt.Errorf("error reading the graph tables' indexes: %w", err)
		}
		type index struct{ name, def string }
		var indexes []index
		for rows.Next() {
			var ix index
			if err := rows.Scan(&ix.name, &ix.def); err != nil {
				return fmt.Errorf("error reading the graph tables' indexes: %w", err)
			}
			indexes = append(indexes, ix)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("error reading the graph tables' indexes: %w", err)
		}
		for _, ix := range indexes {
			if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{ix.name}.Sanitize()); err != nil {
				return fmt.Errorf("error dropping index %s for the load: %w", ix.name, err)
			}
		}
		for _, s := range graphSteps() {
			if _, err := tx.Exec(ctx, s.sql, graphRepository, n); err != nil {
				return fmt.Errorf("error writing the graph corpus's %s: %w", s.what, err)
			}
			b.progress("  wrote %s (%.1fs)", s.what, time.Since(start).Seconds())
		}
		if afterLoad != nil {
			if err := afterLoad(ctx, tx); err != nil {
				return err
			}
		}
		for _, ix := range indexes {
			if _, err := tx.Exec(ctx, ix.def); err != nil {
				return fmt.Errorf("error creating index %s again: %w", ix.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if _, err := b.pool.Exec(ctx, `ANALYZE files, pois, poi_references`); err != nil {
		return 0, fmt.Errorf("error analyzing the graph corpus: %w", err)
	}
	b.progress("  indexes and statistics (%.1fs)", time.Since(start).Seconds())
	return time.Since(start).Seconds(), nil
}

// graphSteps are the corpus's INSERTs, in order; each takes the repository
// ($1) and the number of POIs ($2).
func graphSteps() []struct{ what, sql string } {
	file := `'g/f' || lpad((%s / ` + strconv.Itoa(graphPOIsPerFile) + `)::text, 6, '0') || '.go'`
	return []struct{ what, sql string }{
		{"files", `INSERT INTO files (repository, file_id, version, poi_count)
			SELECT $1, ` + fmt.Sprintf(file, "f * "+strconv.Itoa(graphPOIsPerFile)) + `, 1, ` + strconv.Itoa(graphPOIsPerFile) + `
			FROM generate_series(0, ($2::int - 1) / ` + strconv.Itoa(graphPOIsPerFile) + `) AS f`},
		{"pois", `INSERT INTO pois (repository, poi_id, file_id, name, type, line_number, symbol)
			SELECT $1, 'p' || i, ` + fmt.Sprintf(file, "i") + `, 'fn' || i, 'function_definition',
			       1 + (i % ` + strconv.Itoa(graphPOIsPerFile) + `) * 10, 'bench/g.fn' || i
			FROM generate_series(0, $2::int - 1) AS i`},
		{"tree references", `INSERT INTO poi_references (repository, source_poi_id, source_file_id, type, name, key,
			    target_repository, target_poi_id, target_file_id, resolved_at, resolved_round)
			SELECT $1, 'p' || j, ` + fmt.Sprintf(file, "j") + `, 'CALLS', 'id:p' || (j - 1) / 10, 'id:p' || (j - 1) / 10,
			       $1, 'p' || (j - 1) / 10, ` + fmt.Sprintf(file, "((j - 1) / 10)") + `, now(), 1
			FROM generate_series(1, least($2::int, ` + strconv.Itoa(treeSize) + `) - 1) AS j`},
		{"references", `INSERT INTO poi_references (repository, source_poi_id, source_file_id, type, name, key,
			    target_repository, target_poi_id, target_file_id, resolved_at, resolved_round)
			SELECT $1, 'p' || i, ` + fmt.Sprintf(file, "i") + `, 'CALLS', 'id:p' || t, 'id:p' || t, $1, 'p' || t, ` + fmt.Sprintf(file, "t") + `, now(), 1
			FROM generate_series(` + strconv.Itoa(treeSize) + `, $2::int - 1) AS i
			CROSS JOIN generate_series(0, 2) AS k
			CROSS JOIN LATERAL (SELECT ` + strconv.Itoa(treeSize) + ` + abs(hashint8(i::bigint * 3 + k)::bigint) % ($2::int - ` + strconv.Itoa(treeSize) + `) AS t) x
			WHERE t <> i
			ON CONFLICT DO NOTHING`},
	}
}

// graphPhase is the graph phase (see Graph).
func (b *bench) graphPhase(ctx context.Context, res *Result) error {
	n := b.cfg.GraphPOIs
	g := &Graph{Samples: graphSamples, DepthThreeRuns: graphDepthRuns}
	var err error
	b.progress("  writing %d POIs and their relationships", n)
	if g.BuildSeconds, err = b.buildGraph(ctx, n); err != nil {
		return err
	}
	if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pois), (SELECT count(*) FROM poi_references WHERE target_poi_id IS NOT NULL)`).
		Scan(&g.POIs, &g.Relationships); err != nil {
		return fmt.Errorf("error counting the graph corpus: %w", err)
	}
	rnd := rand.New(rand.NewPCG(39, 1))
	item := func(i int) graph.Item { return graph.Item{Repository: graphRepository, POIID: "p" + strconv.Itoa(i)} }
	randomPOI := func() graph.Item { return item(treeSize + rnd.IntN(n-treeSize)) }

	// One level, as relay graph reads it; a first pass of the same size
	// warms the caches and is not counted.
	for _, dir := range []graph.Direction{graph.Callers, graph.Callees} {
		var ms []float64
		for i := range 2 * graphSamples {
			it := randomPOI()
			t0 := time.Now()
			nodes, err := graph.Walk(ctx, b.pool, it, dir, "CALLS", 1)
			if err != nil {
				return err
			}
			if dir == graph.Callees && len(nodes) == 0 {
				return fmt.Errorf("POI %s has no callees: the corpus is wrong", it.POIID)
			}
			if i >= graphSamples {
				ms = append(ms, millis(time.Since(t0)))
			}
		}
		l := latency(ms)
		if dir == graph.Callers {
			g.Callers = l
		} else {
			g.Callees = l
		}
		b.progress("  %s of a POI: p50 %.2f ms, p99 %.2f ms, max %.2f ms", dir, l.P50, l.P99, l.Max)
	}

	var ms []float64
	for i := range graphDepthRuns + 1 {
		t0 := time.Now()
		nodes, err := graph.Walk(ctx, b.pool, item(0), graph.Callers, "CALLS", 3)
		if err != nil {
			return err
		}
		if i > 0 {
			ms = append(ms, millis(time.Since(t0)))
		}
		g.DepthThreeResults = countNodes(nodes)
	}
	if want := min(n, treeSize) - 1; g.DepthThreeResults != want {
		return fmt.Errorf("POI p0 has %d callers to depth 3, not %d: the corpus is wrong", g.DepthThreeResults, want)
	}
	g.DepthThree = latency(ms)
	b.progress("  transitive callers to depth 3 (%d, %d runs): p50 %.2f ms, p99 %.2f ms, max %.2f ms", g.DepthThreeResults, graphDepthRuns,
		g.DepthThree.P50, g.DepthThree.P99, g.DepthThree.Max)

	if g.Page, g.Complete, err = b.graphPages(ctx, rnd, n); err != nil {
		return err
	}
	res.Graph = g
	return nil
}

// graphPages times the console's POI page and completion endpoint over
// HTTP, on random POIs and names (a first pass of each warms up, not
// counted), the tree's root included among the pages.
func (b *bench) graphPages(ctx context.Context, rnd *rand.Rand, n int) (page, complete Latency, err error) {
	jobs, err := worker.NewInsertClient(b.pool, worker.ConfigFrom(b.workerConfig()), b.cfg.Logger)
	if err != nil {
		return page, complete, err
	}
	c, err := console.New(console.Config{Pool: b.pool, Jobs: jobs, HeartbeatTimeout: b.workerConfig().WorkerHeartbeatTimeout,
		Logger: b.cfg.Logger})
	if err != nil {
		return page, complete, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.Start(cctx); err != nil {
		return page, complete, err
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	client := srv.Client()
	fetch := func(path string) (float64, error) {
		t0 := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("error fetching %s: %w", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("error reading %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("console %s: status %d: %.300s", path, resp.StatusCode, body)
		}
		return millis(time.Since(t0)), nil
	}
	run := func(name string, samples int, path func(i int) string) (Latency, error) {
		var ms []float64
		for i := range 2 * samples {
			d, err := fetch(path(i))
			if err != nil {
				return Latency{}, err
			}
			if i >= samples {
				ms = append(ms, d)
			}
		}
		l := latency(ms)
		b.progress("  console %s over HTTP: p50 %.2f ms, p99 %.2f ms, max %.2f ms", name, l.P50, l.P99, l.Max)
		return l, nil
	}
	poiPath := func(i int) string {
		id := 0
		if i%graphPageSamples != 0 {
			id = treeSize + rnd.IntN(n-treeSize)
		}
		return "/poi?" + url.Values{"repository": {graphRepository}, "id": {"p" + strconv.Itoa(id)}}.Encode()
	}
	if page, err = run("POI page", graphPageSamples, poiPath); err != nil {
		return page, complete, err
	}
	// Prefixes of random names: "fn" and 1 to 4 digits.
	completePath := func(int) string {
		name := "fn" + strconv.Itoa(rnd.IntN(n))
		return "/search/complete?" + url.Values{"q": {name[:min(len(name), 3+rnd.IntN(4))]}}.Encode()
	}
	complete, err = run("search completion", graphPageSamples, completePath)
	return page, complete, err
}

func countNodes(nodes []*graph.Node) int {
	n := 0
	for _, x := range nodes {
		n += 1 + countNodes(x.Children)
	}
	return n
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
