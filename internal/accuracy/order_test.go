package accuracy

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// TestResolve_GoOrderAndConcurrencyIndependent publishes a real Go tree
// (the standard library's text/template, with its parse package, so
// qualified calls cross directories) in shuffled orders from two goroutines
// while four workers run, re-publishes a file without its functions and
// then whole, and requires exactly the relationships of resolving the whole
// tree at once: qualified and receiver references re-resolve like plain
// names, and typed references (by symbol) like both.
func TestResolve_GoOrderAndConcurrencyIndependent(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{goanalyze.ReferencesLexical, goanalyze.ReferencesTyped} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testOrderIndependent(t, goanalyze.Options{References: mode})
		})
	}
}

func testOrderIndependent(t *testing.T, opts goanalyze.Options) {
	ctx := context.Background()
	root := filepath.Join(runtime.GOROOT(), "src", "text", "template")

	g, err := AnalyzeWith(ctx, root, opts)
	require.NoError(t, err)
	var want []string
	for _, e := range g.Edges {
		want = append(want, e.Source+" "+string(e.Type)+" "+e.Target)
	}
	slices.Sort(want)
	require.Greater(t, len(want), 500, "a tree large enough to matter")

	var files []outbox.Analysis
	require.NoError(t, goanalyze.WalkWith(ctx, root, opts, func(f goanalyze.File) error {
		require.Nil(t, f.Err)
		files = append(files, f.Analysis)
		return nil
	}))

	for _, seed := range []uint64{1, 2} {
		t.Run("seed", func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			cfg := worker.ConfigFrom(db.Config())
			cfg.Concurrency = 4
			w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
			require.NoError(t, err)
			pub := outbox.New(w.Client(), nil, testdb.Logger(t))
			publish := func(a outbox.Analysis) {
				require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					_, err := pub.PublishTx(ctx, tx, a)
					return err
				}))
			}

			order := slices.Clone(files)
			rand.New(rand.NewPCG(seed, 19)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() {
				stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				require.NoError(t, w.Stop(stopCtx))
			})
			var wg sync.WaitGroup
			for half := range 2 {
				wg.Go(func() {
					for i := half; i < len(order); i += 2 {
						publish(order[i])
					}
				})
			}
			wg.Wait()
			// A file re-published with its functions gone, then whole:
			// the references to them go unresolved, then resolve again.
			first := order[0]
			publish(outbox.Analysis{FileID: first.FileID, POIs: first.POIs[:1]})
			publish(first)

			waitDrained(t, db)
			rows, err := db.Pool.Query(ctx, `SELECT source_poi_id || ' ' || type || ' ' || target_poi_id FROM relationships`)
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			slices.Sort(got)
			require.Equal(t, want, got)
		})
	}
}

// waitDrained waits until no resolve_file job is pending (worker.WaitIdle),
// failing the test after a deadline.
func waitDrained(t *testing.T, db *testdb.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, worker.WaitIdle(ctx, db.Pool, nil), "queue not drained")
}
