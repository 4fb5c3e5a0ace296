package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
	"github.com/relay-dev/relay/worker"
	"github.com/relay-dev/relay/worker/link"
	"github.com/relay-dev/relay/worker/resolvefile"
)

// Freshness is the freshness phase: the time from a publish until its
// batch committed and its relationships were final
// (resolvefile.BatchSummary.Freshness), during a bulk load of the main corpus
// and for re-publishes of one file that renames a function that Callers
// other files call, with the corpus loaded and the worker running.
type Freshness struct {
	BulkBatches int     `json:"bulk_batches"`
	BulkP50     float64 `json:"bulk_p50_seconds"`
	BulkP99     float64 `json:"bulk_p99_seconds"`
	Callers     int     `json:"callers"`
	Renames     int     `json:"renames"`
	RenameP50   float64 `json:"rename_p50_seconds"`
	RenameP99   float64 `json:"rename_p99_seconds"`
	// RenameReresolved is the references the renames resolved again, in
	// all (each rename moves every caller's reference).
	RenameReresolved int64 `json:"rename_reresolved"`
}

// freshnessCallers and freshnessRenames size the rename measurement.
const (
	freshnessCallers = 1000
	freshnessRenames = 20
	hotFile          = "bench/hot.go"
)

// freshnessObserver collects the publishes' freshness from the link
// rounds, and hands the hot file's to a channel, with the references its
// round resolved again.
type freshnessObserver struct {
	mu   sync.Mutex
	bulk []time.Duration
	hot  chan hotFinal
}

type hotFinal struct {
	freshness  time.Duration
	reresolved int
}

func (*freshnessObserver) BatchDone(*resolvefile.BatchSummary) {}

func (*freshnessObserver) BatchFailed(time.Duration) {}

func (o *freshnessObserver) Linked(sum *link.Summary) {
	for _, f := range sum.Final {
		if f.FileID == hotFile {
			o.hot <- hotFinal{f.Freshness, sum.Reresolved}
			continue
		}
		o.mu.Lock()
		o.bulk = append(o.bulk, f.Freshness)
		o.mu.Unlock()
	}
}

// hotAnalysis is the hot file, defining the function name.
func hotAnalysis(name string) outbox.Analysis {
	raw, _ := json.Marshal(poiJSON{ID: "hot.p0", Type: resolver.TypeFunction, Name: name, FilePath: hotFile, LineNumber: 3,
		RawCode: "func " + name + "(ctx context.Context) int {\n\treturn 1\n}"})
	return outbox.Analysis{FileID: hotFile, POIs: []json.RawMessage{raw}}
}

// callerAnalysis is caller file k, whose one function calls hot_a.
func callerAnalysis(k int) outbox.Analysis {
	file := fmt.Sprintf("bench/caller%04d.go", k)
	raw, _ := json.Marshal(poiJSON{ID: fmt.Sprintf("caller%04d.p0", k), Type: resolver.TypeFunction,
		Name: fmt.Sprintf("caller_%04d", k), FilePath: file, LineNumber: 3,
		RawCode: fmt.Sprintf("func caller_%04d(ctx context.Context) int {\n\treturn hot_a(ctx) + 1\n}", k)})
	return outbox.Analysis{FileID: file, POIs: []json.RawMessage{raw}}
}

func (b *bench) freshness(ctx context.Context, res *Result) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	c := b.mainCorpus()
	main, err := pregenerated(corpusSource(c))
	if err != nil {
		return err
	}
	src := source{files: main.files + 1 + freshnessCallers, next: func(k int) (outbox.Analysis, error) {
		switch {
		case k < main.files:
			return main.next(k)
		case k == main.files:
			return hotAnalysis("hot_a"), nil
		default:
			return callerAnalysis(k - main.files - 1), nil
		}
	}}
	wcfg := worker.ConfigFrom(b.workerConfig())
	obs := &freshnessObserver{hot: make(chan hotFinal, freshnessRenames+1)}
	w, err := b.newWorker(wcfg, obs)
	if err != nil {
		return err
	}
	inserter, err := worker.NewInsertClient(b.pool, wcfg, b.cfg.Logger)
	if err != nil {
		return err
	}
	pub := outbox.New(inserter, &outbox.Config{}, b.cfg.Logger)
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()
	b.progress("  bulk load: %d files published while the worker runs", src.files)
	if err := b.publish(ctx, src, pub, &RunResult{}); err != nil {
		return err
	}
	if err := worker.WaitIdle(ctx, b.pool, b.workProgress()); err != nil {
		return err
	}
	<-obs.hot // the hot file's first batch
	f := &Freshness{Callers: freshnessCallers, Renames: freshnessRenames}
	obs.mu.Lock()
	f.BulkBatches = len(obs.bulk)
	f.BulkP50, f.BulkP99 = percentile(obs.bulk, 0.5), percentile(obs.bulk, 0.99)
	obs.mu.Unlock()

	var renames []time.Duration
	for i := range freshnessRenames {
		name := "hot_b"
		if i%2 == 1 {
			name = "hot_a"
		}
		if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := pub.PublishTx(ctx, tx, hotAnalysis(name))
			return err
		}); err != nil {
			return fmt.Errorf("error re-publishing %s: %w", hotFile, err)
		}
		select {
		case h := <-obs.hot:
			renames = append(renames, h.freshness)
			f.RenameReresolved += int64(h.reresolved)
		case <-time.After(time.Minute):
			return fmt.Errorf("the re-publish of %s was not worked within a minute", hotFile)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.RenameP50, f.RenameP99 = percentile(renames, 0.5), percentile(renames, 0.99)
	res.Freshness = f
	b.progress("  freshness: bulk p50 %.3fs p99 %.3fs over %d batches; rename of a function %d files call: p50 %.3fs p99 %.3fs over %d, %d references re-resolved",
		f.BulkP50, f.BulkP99, f.BulkBatches, f.Callers, f.RenameP50, f.RenameP99, f.Renames, f.RenameReresolved)
	return nil
}

// percentile returns the q-quantile of ds in seconds (nearest rank).
func percentile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, int(q*float64(len(s))+0.5)-1)
	return s[max(i, 0)].Seconds()
}
