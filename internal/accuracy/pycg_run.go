package accuracy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker"
)

// PyCGLayout is a way of publishing many cases (codebases) into relay.
type PyCGLayout string

const (
	// PyCGOwnDatabase publishes each case into a database of its own: the
	// reference the other layouts are held to.
	PyCGOwnDatabase PyCGLayout = "own-database"
	// PyCGPrefixedIDs publishes every case into one database, in the
	// default repository, with its file ids and POI ids (and filePaths,
	// which must equal the file id) prefixed by "<case>/": what a user had
	// to do before repositories. Names resolve across cases.
	PyCGPrefixedIDs PyCGLayout = "prefixed-ids"
	// PyCGRepositories publishes every case into one database, each case
	// its own repository named after it, ids unprefixed.
	PyCGRepositories PyCGLayout = "repositories"
)

// PyCGLayouts are the layouts RunPyCG measures, in order.
var PyCGLayouts = []PyCGLayout{PyCGOwnDatabase, PyCGPrefixedIDs, PyCGRepositories}

// Describe says what the layout is, for the table.
func (l PyCGLayout) Describe() string {
	switch l {
	case PyCGOwnDatabase:
		return "(a) a database per case"
	case PyCGPrefixedIDs:
		return "(b) one database, ids prefixed by case"
	case PyCGRepositories:
		return "(c) one database, a repository per case"
	}
	return string(l)
}

// PyCGDatabase is an empty, migrated relay database.
type PyCGDatabase struct {
	Pool *pgxpool.Pool
	// Config is relay's configuration pointed at it (its schema and the
	// worker's settings are taken from it).
	Config *config.Config
	// Release, when set, is called once the database is no longer needed.
	Release func()
}

// PyCGOptions are RunPyCG's.
type PyCGOptions struct {
	// NewDatabase returns an empty, migrated database.
	NewDatabase func(ctx context.Context) (*PyCGDatabase, error)
	// Parallel is how many cases' own databases are worked at once; with
	// 1 (or less) everything runs on the calling goroutine.
	Parallel int
	Logger   *slog.Logger
	// Progress, when set, is told what is being done.
	Progress func(msg string)
	// Layouts are the layouts measured, in order; none is PyCGLayouts.
	// The first is the one the others are compared with (DifferFromOwn).
	Layouts []PyCGLayout
}

// pycgEdge is a CALLS relationship of a case, by the POI ids of the case's
// own files (as a database of its own holds them). TargetCase names the
// case of the target when it is another case's POI.
type pycgEdge struct {
	Source, Target, TargetCase string
}

func (e pycgEdge) String() string {
	if e.TargetCase != "" {
		return e.Source + " CALLS " + e.TargetCase + ": " + e.Target
	}
	return e.Source + " CALLS " + e.Target
}

// pycgRun is what one layout gave: each case's relationships, sorted.
type pycgRun struct {
	Layout    PyCGLayout
	Databases int
	Edges     map[string][]pycgEdge
	// Failed counts dead-lettered POIs (failed_pois rows).
	Failed int
}

// runPyCGLayout publishes cases in layout through relay's outbox, works
// every job with relay's worker until the queue is idle, and reads the
// relationships back.
func runPyCGLayout(ctx context.Context, cases []*PyCGCase, layout PyCGLayout, opts PyCGOptions) (*pycgRun, error) {
	run := &pycgRun{Layout: layout, Edges: map[string][]pycgEdge{}}
	if layout == PyCGOwnDatabase {
		return run, runOwnDatabases(ctx, cases, run, opts)
	}
	var files []outbox.Analysis
	for _, c := range cases {
		for _, a := range c.Files {
			if layout == PyCGRepositories {
				a.Repository = c.Name
			} else {
				var err error
				if a, err = prefixAnalysis(a, c.Name+"/"); err != nil {
					return nil, err
				}
			}
			files = append(files, a)
		}
	}
	rows, failed, err := publishAndWork(ctx, opts, files)
	if err != nil {
		return nil, fmt.Errorf("error running layout %s: %w", layout, err)
	}
	run.Databases, run.Failed = 1, failed
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
	}
	for _, r := range rows {
		var e pycgEdge
		var srcCase, tgtCase string
		if layout == PyCGRepositories {
			srcCase, e.Source, tgtCase, e.Target = r.Repository, r.Source, r.TargetRepository, r.Target
		} else {
			srcCase, e.Source = splitCase(names, r.Source)
			tgtCase, e.Target = splitCase(names, r.Target)
		}
		if !names[srcCase] || !names[tgtCase] {
			return nil, fmt.Errorf("layout %s: relationship %s (repository %q) -> %s (repository %q) is of no case",
				layout, r.Source, r.Repository, r.Target, r.TargetRepository)
		}
		if tgtCase != srcCase {
			e.TargetCase = tgtCase
		}
		run.Edges[srcCase] = append(run.Edges[srcCase], e)
	}
	for name := range run.Edges {
		sortEdges(run.Edges[name])
	}
	return run, nil
}

// runOwnDatabases works each case in a database of its own, opts.Parallel
// at a time.
func runOwnDatabases(ctx context.Context, cases []*PyCGCase, run *pycgRun, opts PyCGOptions) error {
	var mu sync.Mutex
	one := func(c *PyCGCase) error {
		rows, failed, err := publishAndWork(ctx, opts, c.Files)
		if err != nil {
			return fmt.Errorf("error running case %s in a database of its own: %w", c.Name, err)
		}
		edges := make([]pycgEdge, 0, len(rows))
		for _, r := range rows {
			edges = append(edges, pycgEdge{Source: r.Source, Target: r.Target})
		}
		sortEdges(edges)
		mu.Lock()
		defer mu.Unlock()
		run.Databases++
		run.Failed += failed
		if len(edges) > 0 {
			run.Edges[c.Name] = edges
		}
		if opts.Progress != nil && run.Databases%20 == 0 {
			opts.Progress(fmt.Sprintf("  %d of %d cases done", run.Databases, len(cases)))
		}
		return nil
	}
	if opts.Parallel <= 1 {
		for _, c := range cases {
			if err := one(c); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan *PyCGCase)
	var wg sync.WaitGroup
	for range opts.Parallel {
		wg.Go(func() {
			for c := range next {
				if err := one(c); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for _, c := range cases {
		select {
		case next <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

func sortEdges(es []pycgEdge) {
	slices.SortFunc(es, func(a, b pycgEdge) int { return cmpString(a.String(), b.String()) })
}

// relationshipRow is a CALLS row of the relationships view.
type relationshipRow struct {
	Repository, Source, TargetRepository, Target string
}

// publishAndWork publishes files into a new database in one transaction,
// as a service would with PublishManyTx, runs relay's worker on the
// resolve queue until it is idle (worker.Worker.RunUntilIdle, as `relay worker
// --until-idle`), and returns the CALLS relationships and the number of
// dead-lettered POIs.
func publishAndWork(ctx context.Context, opts PyCGOptions, files []outbox.Analysis) ([]relationshipRow, int, error) {
	db, err := opts.NewDatabase(ctx)
	if err != nil {
		return nil, 0, err
	}
	if db.Release != nil {
		defer db.Release()
	}
	wcfg := worker.ConfigFrom(db.Config)
	wcfg.Queues = []string{outbox.QueueResolve}
	w, err := worker.New(db.Pool, wcfg, opts.Logger)
	if err != nil {
		return nil, 0, err
	}
	pub := outbox.New(w.Client(), &wcfg.Publish, opts.Logger)
	if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := pub.PublishManyTx(ctx, tx, files)
		return err
	}); err != nil {
		return nil, 0, err
	}
	if err := w.RunUntilIdle(ctx, nil); err != nil {
		return nil, 0, err
	}
	var failed int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM failed_pois`).Scan(&failed); err != nil {
		return nil, 0, fmt.Errorf("error counting failed POIs: %w", err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT repository, source_poi_id, target_repository, target_poi_id
		FROM relationships WHERE type = $1`, string(resolver.Calls))
	if err != nil {
		return nil, 0, fmt.Errorf("error reading relationships: %w", err)
	}
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (relationshipRow, error) {
		var r relationshipRow
		err := row.Scan(&r.Repository, &r.Source, &r.TargetRepository, &r.Target)
		return r, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("error reading relationships: %w", err)
	}
	return rels, failed, nil
}

// prefixAnalysis returns a with prefix before its file id and its POIs'
// ids and filePaths (a filePath must equal the file id).
func prefixAnalysis(a outbox.Analysis, prefix string) (outbox.Analysis, error) {
	out := outbox.Analysis{Repository: a.Repository, FileID: prefix + a.FileID, POIs: make([]json.RawMessage, 0, len(a.POIs))}
	for _, raw := range a.POIs {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return out, fmt.Errorf("error decoding a POI of %s: %w", a.FileID, err)
		}
		for _, k := range []string{"id", "filePath"} {
			var s string
			if err := json.Unmarshal(fields[k], &s); err != nil {
				return out, fmt.Errorf("error decoding %s of a POI of %s: %w", k, a.FileID, err)
			}
			fields[k], _ = json.Marshal(prefix + s)
		}
		b, err := json.Marshal(fields)
		if err != nil {
			return out, err
		}
		out.POIs = append(out.POIs, b)
	}
	return out, nil
}

// splitCase splits a prefixed id into the case (the longest prefix before a
// "/" that names a case) and the id within the case.
func splitCase(cases map[string]bool, id string) (string, string) {
	for i := len(id) - 1; i > 0; i-- {
		if id[i] == '/' && cases[id[:i]] {
			return id[:i], id[i+1:]
		}
	}
	return "", id
}

// sameEdges reports whether two runs gave case the same relationships.
func sameEdges(a, b *pycgRun, name string) bool {
	return slices.Equal(a.Edges[name], b.Edges[name])
}
