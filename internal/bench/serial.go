package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Serial is how much of a run's wall time went to the sections that run
// one at a time. The one on the path of every batch is the linker lock
// (worker/link): link_rounds says how long each round waited for it and
// held it (to the clock of its last statement, just before it commits).
// Rounds that found link_queue empty are not recorded; they hold the lock
// for one read.
type Serial struct {
	// Rounds is how many link rounds the run committed.
	Rounds int `json:"rounds"`
	// LinkerHeldShare and LinkerWaitShare are the rounds' hold of the
	// linker lock and their wait for it, over the run's wall time.
	LinkerHeldShare float64 `json:"linker_held_share"`
	LinkerWaitShare float64 `json:"linker_wait_share"`
	// LinkerSeconds is the rounds' hold, added up.
	LinkerSeconds float64 `json:"linker_seconds"`
	// Waits are the wait events sampled (--sample-waits), most frequent
	// first.
	Waits []WaitSample `json:"waits,omitempty"`
}

// WaitSample is one wait event (or "cpu") and statement seen among the
// active backends, with how many samples saw it.
type WaitSample struct {
	Event     string `json:"event"`
	Statement string `json:"statement"`
	Samples   int    `json:"samples"`
}

// lastRound is the id of the last link round committed so far (0: none):
// a run's rounds are those after it.
func lastRound(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var id int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM link_rounds`).Scan(&id); err != nil {
		return 0, fmt.Errorf("error reading link rounds: %w", err)
	}
	return id, nil
}

// serialShares reads the link rounds after round after (the run's) and
// sets their shares of wall seconds.
func serialShares(ctx context.Context, pool *pgxpool.Pool, after int64, wall float64) (*Serial, error) {
	s := &Serial{}
	var wait float64
	if err := pool.QueryRow(ctx, `
		SELECT count(*), coalesce(sum(extract(epoch FROM linked_at - locked_at)), 0)::float8,
		       coalesce(sum(extract(epoch FROM locked_at - began_at)), 0)::float8
		FROM link_rounds WHERE id > $1 AND locked_at IS NOT NULL`, after).Scan(&s.Rounds, &s.LinkerSeconds, &wait); err != nil {
		return nil, fmt.Errorf("error reading link rounds: %w", err)
	}
	s.LinkerHeldShare, s.LinkerWaitShare = ratio(s.LinkerSeconds, wall), ratio(wait, wall)
	return s, nil
}

// waitSampler samples pg_stat_activity's active backends of the bench
// database every interval until stop, as ../shared/scale's SAMPLE=1 does.
type waitSampler struct {
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	counts map[WaitSample]int
	err    error
}

func sampleWaits(ctx context.Context, pool *pgxpool.Pool, interval time.Duration) *waitSampler {
	w := &waitSampler{stop: make(chan struct{}), done: make(chan struct{}), counts: map[WaitSample]int{}}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rows, err := pool.Query(ctx, `
				SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu'), left(regexp_replace(query, '\s+', ' ', 'g'), 90)
				FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()`)
			if err == nil {
				var s WaitSample
				_, err = pgx.ForEachRow(rows, []any{&s.Event, &s.Statement}, func() error {
					s.Statement = strings.TrimSpace(s.Statement)
					w.mu.Lock()
					w.counts[s]++
					w.mu.Unlock()
					return nil
				})
			}
			if err != nil && ctx.Err() == nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
		}
	}()
	return w
}

// Stop ends the sampling and returns the n most frequent samples.
func (w *waitSampler) Stop(n int) ([]WaitSample, error) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, fmt.Errorf("error sampling wait events: %w", w.err)
	}
	out := make([]WaitSample, 0, len(w.counts))
	for s, c := range w.counts {
		s.Samples = c
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Samples != out[j].Samples {
			return out[i].Samples > out[j].Samples
		}
		return out[i].Event+out[i].Statement < out[j].Event+out[j].Statement
	})
	return out[:min(n, len(out))], nil
}

// printSerial writes s as the table's lines, indented.
func printSerial(w interface{ Write([]byte) (int, error) }, s *Serial) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "  serial sections, of wall time: the linker lock held %.1f%% and waited for %.1f%% (%d rounds, %.2f s)\n",
		100*s.LinkerHeldShare, 100*s.LinkerWaitShare, s.Rounds, s.LinkerSeconds)
	for _, x := range s.Waits {
		fmt.Fprintf(w, "    %5d  %-28s %s\n", x.Samples, x.Event, x.Statement)
	}
}
