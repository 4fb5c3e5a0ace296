package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Serial is how much of a run's wall time went to the sections that run
// one at a time: each linker lane's lock, from link_rounds (a round's wait
// for its lane and its hold of it, read to the clock of its last
// statement). Rounds that found their lane empty are not recorded; they
// hold the lock for one read.
type Serial struct {
	// Lanes are the lanes that ran a round, by lane.
	Lanes []LaneShare `json:"lanes"`
	// MaxHeldShare and MaxWaitShare are the largest of Lanes': the serial
	// share that bounds the run (Amdahl).
	MaxHeldShare float64 `json:"max_held_share"`
	MaxWaitShare float64 `json:"max_wait_share"`
	// LinkSeconds is every round's hold, added up over the lanes.
	LinkSeconds float64 `json:"link_seconds"`
	// Waits are the wait events sampled (--sample-waits), most frequent
	// first.
	Waits []WaitSample `json:"waits,omitempty"`
}

// LaneShare is one lane's rounds in a run.
type LaneShare struct {
	Lane   int `json:"lane"`
	Rounds int `json:"rounds"`
	// HeldShare and WaitShare are its rounds' hold of the lane's lock and
	// their wait for it, over the run's wall time.
	HeldShare float64 `json:"held_share"`
	WaitShare float64 `json:"wait_share"`
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
// sets each lane's shares of wall seconds.
func serialShares(ctx context.Context, pool *pgxpool.Pool, after int64, wall float64) (*Serial, error) {
	rows, err := pool.Query(ctx, `
		SELECT lane, count(*), coalesce(sum(extract(epoch FROM linked_at - locked_at)), 0)::float8,
		       coalesce(sum(extract(epoch FROM locked_at - began_at)), 0)::float8
		FROM link_rounds CROSS JOIN LATERAL unnest(lanes) AS lane WHERE id > $1 GROUP BY lane ORDER BY lane`, after)
	if err != nil {
		return nil, fmt.Errorf("error reading link rounds: %w", err)
	}
	s := &Serial{Lanes: []LaneShare{}}
	var l LaneShare
	var held, wait float64
	_, err = pgx.ForEachRow(rows, []any{&l.Lane, &l.Rounds, &held, &wait}, func() error {
		l.HeldShare, l.WaitShare = ratio(held, wall), ratio(wait, wall)
		s.Lanes = append(s.Lanes, l)
		s.LinkSeconds += held
		s.MaxHeldShare, s.MaxWaitShare = max(s.MaxHeldShare, l.HeldShare), max(s.MaxWaitShare, l.WaitShare)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error reading link rounds: %w", err)
	}
	return s, nil
}

// waitSampler samples pg_stat_activity's active backends of the bench
// database every interval until stop, as internal/bench/scale/scale.sh's SAMPLE=1 does.
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
func printSerial(w io.Writer, s *Serial) {
	if s == nil {
		return
	}
	var lanes []string
	for _, l := range s.Lanes {
		lanes = append(lanes, fmt.Sprintf("%d: %.1f%%+%.1f%%", l.Lane, 100*l.HeldShare, 100*l.WaitShare))
	}
	fmt.Fprintf(w, "  serial sections (linker lanes, held+waited, of wall time): max held %.1f%%, max waited %.1f%%; %.2f s of rounds in all; %s\n",
		100*s.MaxHeldShare, 100*s.MaxWaitShare, s.LinkSeconds, strings.Join(lanes, ", "))
	for _, x := range s.Waits {
		fmt.Fprintf(w, "    %5d  %-28s %s\n", x.Samples, x.Event, x.Statement)
	}
}
