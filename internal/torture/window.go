package torture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// hold is a publish whose transaction stays open. Its publish runs on a
// goroutine (open): a hold can wait for another, through the rows their
// files' references share, and then stays open only once that one closes.
type hold struct {
	step *Step
	conn *pgxpool.Conn
	tx   pgx.Tx
	pid  uint32
	// open finishes (open.done) when the hold's publish has run.
	open     *background
	openErr  error
	rejected []string
}

func (h *hold) opened() bool { return h != nil && h.open.finished() }

// background is an operation of a window running on its own goroutine.
type background struct {
	step *Step
	// pid is the backend of an in-process publish; app names the sessions
	// of a relay command (publish, worker).
	mu   sync.Mutex
	pid  uint32
	app  string
	done chan struct{}
	err  error
	// committed is set, with seq, when a publish committed.
	committed bool
	seq       int64
	// proc is a worker process, killed if it still waits when the holds
	// close.
	proc      *process
	sawWait   bool
	rejected  []string
	isWorkers bool
	apps      []string
}

func (b *background) finished() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// window runs a window step: open the holds, start each concurrent
// operation and wait until it has finished or waits for a hold
// (settled), kill worker processes that still wait, then close the holds
// in order, settling after each, and wait for every operation.
func (e *executor) window(s *Step) error {
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	holds := make([]*hold, len(s.Holds))
	defer func() {
		cancel()
		for _, h := range holds {
			if h != nil {
				<-h.open.done
				_ = h.tx.Rollback(context.WithoutCancel(ctx))
				h.conn.Release()
			}
		}
	}()
	for i, hs := range s.Holds {
		conn, err := e.db.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("error acquiring a connection for a hold: %w", err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			conn.Release()
			return fmt.Errorf("error beginning a hold: %w", err)
		}
		h := &hold{step: hs, conn: conn, tx: tx, pid: conn.Conn().PgConn().PID()}
		h.open = &background{step: hs, pid: h.pid, done: make(chan struct{})}
		holds[i] = h
		go func() {
			defer close(h.open.done)
			h.rejected, h.openErr = e.publishIn(ctx, tx, hs)
		}()
		if err := e.settle(ctx, opening(holds), holds); err != nil {
			return err
		}
	}
	e.counts.Holds += len(holds)

	var bgs []*background
	for _, c := range s.Concurrent {
		b := e.start(ctx, c)
		bgs = append(bgs, b)
		if err := e.settle(ctx, append(bgs, opening(holds)...), holds); err != nil {
			return err
		}
	}
	e.counts.Interleavings += len(bgs)
	for _, b := range bgs {
		if b.proc != nil && b.proc.running() {
			b.proc.kill()
			e.counts.Kills++
		}
	}
	// Close the holds in the history's order, but a hold still waiting
	// (for another hold) only once it is open: the order recorded is the
	// order they closed in.
	pending := slices.Clone(s.CloseOrder)
	for len(pending) > 0 {
		n := slices.IndexFunc(pending, func(i int) bool { return holds[i].opened() })
		if n < 0 {
			return fmt.Errorf("holds %v wait for each other", pending)
		}
		i := pending[n]
		pending = slices.Delete(pending, n, n+1)
		h := holds[i]
		commit := h.step.Commit && h.openErr == nil && len(h.rejected) == 0
		if len(h.rejected) > 0 {
			e.outcome("%s (held) was rejected: %s", strings.TrimSpace(h.step.Describe("")[0]), strings.Join(h.rejected, "; "))
		}
		if h.openErr != nil && !isDeadlock(h.openErr) {
			return fmt.Errorf("error opening hold #%d: %w", i, h.openErr)
		}
		if isDeadlock(h.openErr) {
			e.mu.Lock()
			e.counts.Deadlocks++
			e.mu.Unlock()
		}
		seq := e.seq.Add(1)
		var err error
		if commit {
			err = h.tx.Commit(ctx)
		} else {
			err = h.tx.Rollback(ctx)
		}
		h.conn.Release()
		holds[i] = nil
		if err != nil {
			return fmt.Errorf("error closing hold #%d: %w", i, err)
		}
		if commit {
			e.recordCommit(seq, h.step.Versions)
		}
		if len(pending) > 0 {
			if err := e.settle(ctx, append(slices.Clone(bgs), opening(holds)...), holds); err != nil {
				return err
			}
		}
	}
	var errs []error
	for _, b := range bgs {
		select {
		case <-b.done:
		case <-ctx.Done():
			return fmt.Errorf("%s still running %s after the holds closed", strings.TrimSpace(b.step.Describe("")[0]), deadline)
		}
		if b.sawWait {
			e.counts.LockWaits++
		}
		if b.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", strings.TrimSpace(b.step.Describe("")[0]), b.err))
			continue
		}
		if b.step.Kind == KindPublish {
			e.checkRejection(b.step, b.rejected)
			if b.committed {
				e.recordCommit(b.seq, b.step.Versions)
			}
		}
	}
	return errors.Join(errs...)
}

// start runs concurrent step c on a goroutine of its own.
func (e *executor) start(ctx context.Context, c *Step) *background {
	b := &background{step: c, done: make(chan struct{})}
	switch {
	case c.Kind == KindWork:
		b.isWorkers = true
		for i := range c.Workers {
			b.apps = append(b.apps, fmt.Sprintf("torture-worker-%d", i))
		}
		b.apps = append(b.apps, "torture-process")
		procs := make(chan *process, 1)
		names := &clientNames{}
		go func() {
			defer close(b.done)
			errs := make([]error, c.Workers)
			var wg sync.WaitGroup
			for i := range c.Workers {
				wg.Go(func() { errs[i] = e.runWorker(ctx, i, c.Subprocess && i == 0, procs, names) })
			}
			wg.Wait()
			b.err = errors.Join(errs...)
		}()
		if c.Subprocess {
			b.proc = <-procs
		}
	case c.Path == PathCLI:
		b.app = e.app("publish")
		go func() {
			defer close(b.done)
			committed, rejected, err := e.publishCLI(ctx, c, b.app)
			b.finish(committed, rejected, err, e.seq.Add(1))
		}()
	default:
		conn, err := e.db.pool.Acquire(ctx)
		if err != nil {
			b.err = fmt.Errorf("error acquiring a connection: %w", err)
			close(b.done)
			return b
		}
		b.pid = conn.Conn().PgConn().PID()
		go func() {
			defer close(b.done)
			defer conn.Release()
			committed, rejected, err := e.publish(ctx, c, conn)
			b.finish(committed, rejected, err, e.seq.Add(1))
		}()
	}
	return b
}

func (b *background) finish(committed bool, rejected []string, err error, seq int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.committed, b.rejected, b.err, b.seq = committed, rejected, err, seq
}

// opening are the holds whose publish is still running.
func opening(holds []*hold) []*background {
	var out []*background
	for _, h := range holds {
		if h != nil && !h.open.finished() {
			out = append(out, h.open)
		}
	}
	return out
}

// session is one backend of the history's database.
type session struct {
	pid      uint32
	app      string
	state    string
	waitLock bool
	blockers []uint32
}

// sessions reads the backends of the history's database.
func (e *executor) sessions(ctx context.Context) (map[uint32]*session, error) {
	rows, err := e.db.pool.Query(ctx, `
		SELECT pid, coalesce(application_name, ''), coalesce(state, ''), coalesce(wait_event_type = 'Lock', false),
		       pg_blocking_pids(pid)
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil, fmt.Errorf("error reading pg_stat_activity: %w", err)
	}
	out := map[uint32]*session{}
	for rows.Next() {
		s := &session{}
		var blockers []int32
		if err := rows.Scan(&s.pid, &s.app, &s.state, &s.waitLock, &blockers); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error reading pg_stat_activity: %w", err)
		}
		for _, b := range blockers {
			s.blockers = append(s.blockers, uint32(b))
		}
		out[s.pid] = s
	}
	return out, rows.Err()
}

// settle waits until every operation of bgs has finished or cannot go on
// before a hold closes: one of its sessions waits, directly or through
// other waiting sessions, for a hold's backend. A worker run is settled
// also when it is only polling: none of its sessions is running a
// statement other than one that waits for a hold, three reads in a row.
func (e *executor) settle(ctx context.Context, bgs []*background, holds []*hold) error {
	quiet := map[*background]int{}
	start := time.Now()
	for {
		// The holds open now: one still opening when the settle started
		// (waiting, through rows their references share, for another
		// hold or a worker) may open while it runs, and an operation then
		// waits for it (relay-torture seeds 5001 and 5080).
		held := map[uint32]bool{}
		for _, h := range holds {
			if h.opened() {
				held[h.pid] = true
			}
		}
		if e.stuck == "" && time.Since(start) > stuckAfter {
			e.stuck = e.activity(held)
		}
		ss, err := e.sessions(ctx)
		if err != nil {
			return err
		}
		// waitsForHold: pid waits, through any chain of waiting sessions,
		// for a hold.
		memo := map[uint32]bool{}
		var waitsForHold func(pid uint32, depth int) bool
		waitsForHold = func(pid uint32, depth int) bool {
			if v, ok := memo[pid]; ok || depth > 16 {
				return v
			}
			memo[pid] = false
			s := ss[pid]
			if s == nil {
				return false
			}
			for _, b := range s.blockers {
				if held[b] || waitsForHold(b, depth+1) {
					memo[pid] = true
					return true
				}
			}
			return false
		}
		all := true
		for _, b := range bgs {
			if b.finished() {
				continue
			}
			waiting, busy, present := false, false, false
			for pid, s := range ss {
				if !(pid == b.pid || (b.app != "" && s.app == b.app) || contains(b.apps, s.app)) {
					continue
				}
				present = true
				if waitsForHold(pid, 0) {
					waiting = true
				} else if s.state == "active" {
					busy = true
				}
			}
			switch {
			case waiting && !b.isWorkers:
				b.sawWait = true
			case b.isWorkers && present && !busy && len(held) > 0:
				if waiting {
					b.sawWait = true
				}
				quiet[b]++
				if quiet[b] < 3 {
					all = false
				}
			default:
				quiet[b] = 0
				all = false
			}
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			var names []string
			for _, b := range bgs {
				if !b.finished() {
					names = append(names, strings.TrimSpace(b.step.Describe("")[0]))
				}
			}
			return fmt.Errorf("operations neither finished nor waiting for a hold within %s: %s\n%s", deadline, strings.Join(names, "; "), e.activity(held))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// stuckAfter is how long a settle runs before the backends are recorded
// for the message of a history that fails: well past any settle of a
// history that runs to its end, and before the statement timeout.
const stuckAfter = 30 * time.Second

// activity describes every backend of the history's database, with what
// it waits for and what blocks it, for the message of a history that
// overran its deadline: whether it was stuck in relay or in the harness is
// read from it.
func (e *executor) activity(held map[uint32]bool) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 10*time.Second)
	defer cancel()
	rows, err := e.db.pool.Query(ctx, `
		SELECT pid, coalesce(application_name, ''), coalesce(state, ''),
		       coalesce(wait_event_type || ':' || wait_event, ''), pg_blocking_pids(pid),
		       coalesce(now() - xact_start, '0'), left(regexp_replace(coalesce(query, ''), '\s+', ' ', 'g'), 160)
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
		ORDER BY pid`)
	if err != nil {
		return fmt.Sprintf("(error reading pg_stat_activity: %v)", err)
	}
	defer rows.Close()
	var b strings.Builder
	b.WriteString("backends of the history's database (* = hold):")
	for rows.Next() {
		var (
			pid           uint32
			app, st, wait string
			blockers      []int32
			inTx          time.Duration
			query         string
		)
		if err := rows.Scan(&pid, &app, &st, &wait, &blockers, &inTx, &query); err != nil {
			return fmt.Sprintf("(error reading pg_stat_activity: %v)", err)
		}
		mark := " "
		if held[pid] {
			mark = "*"
		}
		fmt.Fprintf(&b, "\n %s%d %s %s wait=%s blocked-by=%v tx=%s: %s", mark, pid, app, st, wait, blockers, inTx.Round(time.Millisecond), query)
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(&b, "\n(error reading pg_stat_activity: %v)", err)
	}
	var total, max int
	if err := e.db.pool.QueryRow(ctx, `SELECT count(*), current_setting('max_connections')::int FROM pg_stat_activity`).Scan(&total, &max); err == nil {
		fmt.Fprintf(&b, "\nserver: %d of %d connections in use", total, max)
	}
	return b.String()
}
