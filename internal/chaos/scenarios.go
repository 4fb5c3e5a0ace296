package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/liveness"
)

// runScenario runs one scenario against a fresh database and checks the
// invariants afterwards. A fault that relay does not survive (a worker
// exiting non-zero, a deadline missed) is a violation in the result, not an
// error; errors are the harness's own failures.
func (h *harness) runScenario(ctx context.Context, name string) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.ScenarioTimeout)
	defer cancel()
	h.progress("\n== %s", name)
	db, pub, err := h.newDatabase(ctx, name)
	if err != nil {
		return nil, err
	}
	defer h.drop(db)
	res := &Result{Scenario: name, Database: db.name, Publish: pub, Violations: []string{}}
	h.progress("  published %d POIs into %s in %s", h.corpus.POIs, db.name, pub.Round(time.Millisecond))

	began := time.Now()
	var serr error
	switch name {
	case ScenarioKill:
		serr = h.scenarioKill(ctx, db, res)
	case ScenarioScaleOut:
		serr = h.scenarioScaleOut(ctx, db, res)
	case ScenarioPGRestart:
		serr = h.scenarioPGRestart(ctx, db, res)
	case ScenarioSIGTERM:
		serr = h.scenarioSIGTERM(ctx, db, res)
	case ScenarioSafetyNet:
		serr = h.scenarioSafetyNet(ctx, db, res)
	case ScenarioReprocess:
		serr = h.scenarioReprocessKill(ctx, db, res)
	case ScenarioMapReduce:
		serr = h.scenarioMapReduceKill(ctx, db, res)
	}
	res.Work = time.Since(began)
	if serr != nil {
		res.Violations = append(res.Violations, serr.Error())
		h.progress("  FAULT NOT SURVIVED: %v", serr)
	}
	inv, err := check(context.WithoutCancel(ctx), db.pool, h.corpus)
	if err != nil {
		return nil, err
	}
	res.Check, res.Lost, res.Duplicated = inv, inv.Lost(), inv.Duplicated()
	res.Violations = append(res.Violations, inv.Violations()...)
	res.Passed = len(res.Violations) == 0
	h.progress("  %s: %d POIs, %d failed_pois rows, %d relationships, lost %d, duplicated %d, %s",
		passFail(res.Passed), inv.POIsStored+inv.FailedPOIRows, inv.FailedPOIRows, inv.Relationships, res.Lost, res.Duplicated,
		res.Work.Round(time.Millisecond))
	for _, v := range res.Violations {
		h.progress("  violation: %s", v)
	}
	return res, nil
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// startWorker starts a long-running `relay worker`.
func (h *harness) startWorker(db *scenarioDB, res *Result, extra map[string]string) (*process, error) {
	res.Processes++
	return start(h.workDir, fmt.Sprintf("%s-worker-%02d", res.Scenario, res.Processes), h.binary, h.env(db, extra), nil, "worker")
}

// finish runs `relay worker --until-idle` until every batch is completed.
// A batch whose retry River scheduled beyond the worker's idle horizon
// (backoff grows with each attempt) is made due now with River's JobRetry
// and counted in res.Expedited. It goes on as long as the runs complete
// something, however many runs that takes (batches may fail more than
// once when the machine is busy: a connection the server refuses, for
// instance), and gives up once they have completed nothing for
// stallTimeout.
func (h *harness) finish(ctx context.Context, db *scenarioDB, res *Result) error {
	var st stall
	for round := 1; ; round++ {
		res.Processes++
		p, err := start(h.workDir, fmt.Sprintf("%s-until-idle-%02d", res.Scenario, round), h.binary, h.env(db, nil), nil,
			"worker", "--until-idle")
		if err != nil {
			return err
		}
		if err := p.wait(ctx); err != nil {
			return err
		}
		left, _, err := pending(ctx, db.pool)
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if st.stalled(left) {
			return fmt.Errorf("%d batches still not completed after %d runs of relay worker --until-idle, none completed in the last %s (%d runs)",
				left, round, stallTimeout, st.runs)
		}
		n, err := expedite(ctx, db)
		if err != nil {
			return err
		}
		res.Expedited += n
		h.progress("  until-idle run %d left %d batches waiting for a backed-off retry; made %d due now (JobRetry)", round, left, n)
	}
}

// stallTimeout is how long finish and the MapReduce scenario go on
// running `relay worker --until-idle` while the runs settle nothing: every
// retry is made due before each run, so runs that complete nothing for
// this long mean a batch fails every time, not a busy machine.
const stallTimeout = 2 * time.Minute

// stall tells, from the work left after each run, whether the runs have
// settled nothing for stallTimeout (and at least two runs).
type stall struct {
	best  int       // least work left after a run so far
	since time.Time // when a run last settled something; zero before the first run
	runs  int       // runs since then
}

func (s *stall) stalled(left int) bool {
	if s.since.IsZero() || left < s.best {
		s.best, s.since, s.runs = left, time.Now(), 0
		return false
	}
	s.runs++
	return s.runs >= 2 && time.Since(s.since) >= stallTimeout
}

// expedite makes every retryable or scheduled resolve_file or link job due
// now, through River's client API.
func expedite(ctx context.Context, db *scenarioDB) (int, error) {
	client, err := river.NewClient(riverpgxv5.New(db.pool), &river.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, fmt.Errorf("error creating River client: %w", err)
	}
	rows, err := db.pool.Query(ctx, `SELECT id FROM river_job WHERE kind IN ('resolve_file', 'link') AND state IN ('retryable', 'scheduled') ORDER BY id`)
	if err != nil {
		return 0, fmt.Errorf("error listing retryable jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("error listing retryable jobs: %w", err)
	}
	for _, id := range ids {
		if _, err := client.JobRetry(ctx, id); err != nil {
			return 0, fmt.Errorf("error retrying job %d: %w", id, err)
		}
	}
	return len(ids), nil
}

// inFlightWait is how long, after its random delay, a kill waits for a
// batch to be running before it strikes anyway.
const inFlightWait = time.Second

// kill is one SIGKILL and the batches it stranded.
type kill struct {
	at       time.Time
	stranded []int64
}

// scenarioKill SIGKILLs a worker at random moments while work remains,
// restarting it each time, then finishes with --until-idle.
func (h *harness) scenarioKill(ctx context.Context, db *scenarioDB, res *Result) error {
	res.Concurrent = 1
	var kills []kill
	for len(kills) < h.cfg.Kills {
		p, err := h.startWorker(db, res, nil)
		if err != nil {
			return err
		}
		span := h.cfg.KillDelayMax - h.cfg.KillDelayMin
		delay := h.cfg.KillDelayMin + time.Duration(h.rng.Int64N(int64(span)+1))
		select {
		case <-p.done:
			return fmt.Errorf("worker exited %d on its own before kill %d (log %s): %s", p.exitCode(), len(kills)+1, p.logPath, tail(p.logPath, 300))
		case <-ctx.Done():
			p.kill()
			return ctx.Err()
		case <-time.After(delay):
		}
		// Prefer to strike with a batch in flight: wait briefly for one.
		var left int
		err = waitFor(ctx, inFlightPoll, inFlightWait, "a batch in flight", func(ctx context.Context) (bool, error) {
			var mine int
			err := db.pool.QueryRow(ctx, `
				SELECT count(*) FILTER (WHERE state <> 'completed'),
				       count(*) FILTER (WHERE state = 'running' AND attempted_at >= $1)
				FROM river_job WHERE kind = 'resolve_file'`, p.started).Scan(&left, &mine)
			return left == 0 || mine > 0, err
		})
		if err != nil && left > 0 {
			h.progress("  no batch in flight within %s; killing anyway", inFlightWait)
		}
		if left == 0 {
			p.kill()
			return fmt.Errorf("work ran out after %d of %d kills: publish more POIs (--files/--pois-per-file) or shorten the kill delays", len(kills), h.cfg.Kills)
		}
		p.kill()
		k := kill{at: time.Now()}
		// Stranded: the batches this process fetched and never finished
		// (those still running from an earlier kill are that kill's).
		rows, err := db.pool.Query(ctx, `SELECT id FROM river_job WHERE kind = 'resolve_file' AND state = 'running' AND attempted_at >= $1`,
			p.started)
		if err == nil {
			k.stranded, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return fmt.Errorf("error listing stranded batches: %w", err)
		}
		kills = append(kills, k)
		res.Stranded += len(k.stranded)
		h.progress("  kill %2d after %6s: %4d batches left, %d stranded running", len(kills), delay.Round(time.Millisecond), left, len(k.stranded))
	}
	res.Kills = len(kills)
	if err := h.finish(ctx, db, res); err != nil {
		return err
	}
	return h.rescueLatency(ctx, db, kills, res)
}

// rescueLatency measures, for every kill, how long until every batch it
// stranded was back in the queue: the error entry that returned it (a live
// worker's heartbeat check, or River's rescuer).
func (h *harness) rescueLatency(ctx context.Context, db *scenarioDB, kills []kill, res *Result) error {
	var ids []int64
	for _, k := range kills {
		ids = append(ids, k.stranded...)
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := db.pool.Query(ctx, `
		SELECT j.id, (e->>'at')::timestamptz FROM river_job j, unnest(j.errors) AS e
		WHERE j.id = ANY($1) AND (e->>'error' = 'Stuck job rescued by JobRescuer' OR starts_with(e->>'error', $2))`, ids, liveness.ReturnedMessage)
	if err != nil {
		return fmt.Errorf("error reading rescues: %w", err)
	}
	rescues := map[int64][]time.Time{}
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			rows.Close()
			return fmt.Errorf("error reading rescues: %w", err)
		}
		rescues[id] = append(rescues[id], at)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading rescues: %w", err)
	}
	var lat []time.Duration // per kill: its last stranded batch's return
	missing := 0
	for _, k := range kills {
		last := time.Duration(-1)
		for _, id := range k.stranded {
			var best time.Duration = -1
			for _, at := range rescues[id] {
				if d := at.Sub(k.at); d >= 0 && (best < 0 || d < best) {
					best = d
				}
			}
			if best < 0 {
				missing++
				continue
			}
			last = max(last, best)
		}
		if last >= 0 {
			lat = append(lat, last)
		}
	}
	if missing > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d stranded batches have no return recorded after their kill: the killed worker's transaction committed them (its COMMIT was already sent), or a later worker finished them first", missing))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		p99 := lat[min(len(lat)-1, (len(lat)*99+99)/100-1)] // nearest rank
		res.RescueMin, res.RescueMedian, res.RescueP99, res.RescueMax = lat[0], lat[len(lat)/2], p99, lat[len(lat)-1]
		h.progress("  kill to retry: min %s, median %s, p99 %s, max %s over %d kills (worker_heartbeat_timeout %s, rescue_stuck_jobs_after %s)",
			res.RescueMin.Round(time.Millisecond), res.RescueMedian.Round(time.Millisecond), res.RescueP99.Round(time.Millisecond),
			res.RescueMax.Round(time.Millisecond), len(lat), config.WorkerHeartbeatTimeoutDefault, h.cfg.RescueAfter)
	}
	return nil
}

// waitDrained waits until every resolve_file job is completed, failing
// early when a worker that should keep running exits.
func (h *harness) waitDrained(ctx context.Context, db *scenarioDB, procs []*process) error {
	return waitFor(ctx, pollInterval, h.cfg.ScenarioTimeout, "every batch to complete", func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if !p.running() {
				return false, hopeless(fmt.Errorf("%s exited %d while work remained (log %s): %s", p.name, p.exitCode(), p.logPath, tail(p.logPath, 300)))
			}
		}
		left, _, err := pending(ctx, db.pool)
		return left == 0, err
	})
}

// terminateAll sends SIGTERM to procs and requires each to exit 0 within
// the shutdown timeout plus a margin.
func (h *harness) terminateAll(procs []*process, res *Result) error {
	var errs []error
	for _, p := range procs {
		if !p.running() {
			errs = append(errs, fmt.Errorf("%s had already exited %d (log %s)", p.name, p.exitCode(), p.logPath))
			continue
		}
		res.SIGTERMs++
		took, err := p.terminate(h.cfg.ShutdownTimeout + sigtermMargin)
		res.SIGTERMExitMax = max(res.SIGTERMExitMax, took)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrs(errs)
}

// sigtermMargin is how much longer than shutdown_timeout a worker may take
// to exit after SIGTERM (closing its pool, River's own teardown).
const sigtermMargin = 10 * time.Second

// scenarioScaleOut runs three workers at once and compares the result with
// a single-worker run of the same corpus.
func (h *harness) scenarioScaleOut(ctx context.Context, db *scenarioDB, res *Result) error {
	if h.refRels == nil {
		if err := h.reference(ctx); err != nil {
			return err
		}
	}
	res.Concurrent = 3
	var procs []*process
	for range 3 {
		p, err := h.startWorker(db, res, nil)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	werr := h.waitDrained(ctx, db, procs)
	if err := h.terminateAll(procs, res); err != nil || werr != nil {
		return joinErrs([]error{werr, err})
	}
	got, err := relationships(ctx, db.pool)
	if err != nil {
		return err
	}
	match := slices.Equal(got, h.refRels)
	res.ReferenceMatch = &match
	h.progress("  relationships: %d with 3 workers, %d with 1 worker; identical: %v", len(got), len(h.refRels), match)
	if !match {
		return fmt.Errorf("relationships differ from the single-worker reference run (%d vs %d)", len(got), len(h.refRels))
	}
	return nil
}

// reference runs the corpus with a single `relay worker --until-idle` and
// keeps its relationships.
func (h *harness) reference(ctx context.Context) error {
	db, _, err := h.newDatabase(ctx, "reference")
	if err != nil {
		return err
	}
	defer h.drop(db)
	began := time.Now()
	if err := h.runRelay(ctx, "reference-until-idle", h.env(db, nil), nil, "worker", "--until-idle"); err != nil {
		return err
	}
	if left, _, err := pending(ctx, db.pool); err != nil || left > 0 {
		return fmt.Errorf("reference run left %d batches (%v)", left, err)
	}
	h.refRels, err = relationships(ctx, db.pool)
	h.refDB = db.name
	h.progress("  reference single-worker run: %d relationships in %s", len(h.refRels), time.Since(began).Round(time.Millisecond))
	return err
}

// scenarioPGRestart restarts PostgreSQL while two workers are busy.
func (h *harness) scenarioPGRestart(ctx context.Context, db *scenarioDB, res *Result) error {
	res.Concurrent = 2
	var procs []*process
	for range 2 {
		p, err := h.startWorker(db, res, nil)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	total := h.jobCount(ctx, db)
	// Restart mid-run: once a quarter of the batches are done.
	err := waitFor(ctx, pollInterval, 5*time.Minute, "the workers to make progress", func(ctx context.Context) (bool, error) {
		left, _, err := pending(ctx, db.pool)
		return left <= total*3/4 && left > 0, err
	})
	if err != nil {
		_ = h.terminateAll(procs, res)
		return err
	}
	left, running, _ := pending(ctx, db.pool)
	h.progress("  restarting PostgreSQL (%s) with %d batches left, %d running", h.cfg.PGRestart, left, running)
	began := time.Now()
	if out, err := exec.CommandContext(ctx, "sh", "-c", h.cfg.PGRestart).CombinedOutput(); err != nil {
		_ = h.terminateAll(procs, res)
		return fmt.Errorf("error restarting PostgreSQL: %w: %s", err, out)
	}
	res.PGRestarts++
	if err := waitFor(ctx, pollInterval, 2*time.Minute, "PostgreSQL to accept connections", func(ctx context.Context) (bool, error) {
		return exec.CommandContext(ctx, "pg_isready", "-q", "-d", db.url).Run() == nil, nil
	}); err != nil {
		return err
	}
	h.progress("  PostgreSQL back after %s", time.Since(began).Round(time.Millisecond))
	werr := h.waitDrained(ctx, db, procs)
	h.progress("  drained %s after the restart", time.Since(began).Round(time.Millisecond))
	if err := h.terminateAll(procs, res); err != nil || werr != nil {
		return joinErrs([]error{werr, err})
	}
	return nil
}

func (h *harness) jobCount(ctx context.Context, db *scenarioDB) int {
	var n int
	_ = db.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file'`).Scan(&n)
	return n
}

// scenarioSIGTERM sends SIGTERM to workers with batches in flight. Odd
// rounds give in-flight batches the full shutdown timeout (they finish);
// even rounds give them 1ms (they are cancelled, roll back and are retried).
func (h *harness) scenarioSIGTERM(ctx context.Context, db *scenarioDB, res *Result) error {
	res.Concurrent = 1
	var errs []error
	for round := 1; round <= h.cfg.SIGTERMs; round++ {
		extra := map[string]string{}
		timeout := h.cfg.ShutdownTimeout
		if round%2 == 0 {
			timeout = time.Millisecond
			extra["RELAY_SHUTDOWN_TIMEOUT"] = timeout.String()
		}
		p, err := h.startWorker(db, res, extra)
		if err != nil {
			return err
		}
		err = waitFor(ctx, inFlightPoll, time.Minute, "a batch in flight", func(ctx context.Context) (bool, error) {
			if !p.running() {
				return false, hopeless(fmt.Errorf("%s exited %d (log %s): %s", p.name, p.exitCode(), p.logPath, tail(p.logPath, 300)))
			}
			left, running, err := pending(ctx, db.pool)
			if err == nil && left == 0 {
				return true, nil
			}
			return running > 0, err
		})
		if err != nil {
			p.kill()
			return err
		}
		_, inFlight, _ := pending(ctx, db.pool)
		res.SIGTERMs++
		took, err := p.terminate(timeout + sigtermMargin)
		res.SIGTERMExitMax = max(res.SIGTERMExitMax, took)
		if err != nil {
			errs = append(errs, err)
		}
		left, running, qerr := pending(ctx, db.pool)
		if qerr != nil {
			return qerr
		}
		h.progress("  SIGTERM %d (shutdown_timeout %s) with %d batches in flight: exit %d after %s; %d left, %d running",
			round, timeout, inFlight, p.exitCode(), took.Round(time.Millisecond), left, running)
		if running > 0 {
			errs = append(errs, fmt.Errorf("%d batches left running after SIGTERM round %d", running, round))
		}
		if left == 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("work ran out after %d SIGTERM rounds", round))
			break
		}
	}
	if err := h.finish(ctx, db, res); err != nil {
		errs = append(errs, err)
	}
	return joinErrs(errs)
}

// scenarioSafetyNet makes failed_pois unwritable while a worker runs:
// batches with a malformed POI must fail and stay retryable, then succeed
// once the fault is removed.
func (h *harness) scenarioSafetyNet(ctx context.Context, db *scenarioDB, res *Result) error {
	res.Concurrent = 1
	if _, err := db.pool.Exec(ctx, `
		CREATE FUNCTION chaos_failed_pois_unwritable() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'chaos: failed_pois is unwritable'; END $$;
		CREATE TRIGGER chaos_failed_pois_unwritable BEFORE INSERT ON failed_pois
		FOR EACH ROW EXECUTE FUNCTION chaos_failed_pois_unwritable()`); err != nil {
		return fmt.Errorf("error installing the failed_pois fault: %w", err)
	}
	h.progress("  failed_pois made unwritable (a trigger that raises)")
	p, err := h.startWorker(db, res, nil)
	if err != nil {
		return err
	}
	// Every batch that holds a malformed POI fails, at least twice; the
	// rest complete.
	var failing int
	err = waitFor(ctx, pollInterval, 5*time.Minute, "every batch to complete or to have failed twice", func(ctx context.Context) (bool, error) {
		if !p.running() {
			return false, hopeless(fmt.Errorf("%s exited %d (log %s): %s", p.name, p.exitCode(), p.logPath, tail(p.logPath, 300)))
		}
		var notSettled int
		err := db.pool.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE state <> 'completed'),
			       count(*) FILTER (WHERE state <> 'completed' AND coalesce(array_length(errors, 1), 0) < 2)
			FROM river_job WHERE kind = 'resolve_file'`).Scan(&failing, &notSettled)
		return notSettled == 0, err
	})
	if err != nil {
		p.kill()
		return err
	}
	want := map[string]bool{}
	for _, s := range h.corpus.Malformed {
		want[s.FileID] = true
	}
	h.progress("  %d batches failing and retrying (expected: the %d files holding a malformed POI); removing the fault", failing, len(want))
	if failing != len(want) {
		res.Notes = append(res.Notes, fmt.Sprintf("%d batches failed under the fault, %d files hold malformed POIs", failing, len(want)))
	}
	if _, err := db.pool.Exec(ctx, `DROP TRIGGER chaos_failed_pois_unwritable ON failed_pois; DROP FUNCTION chaos_failed_pois_unwritable()`); err != nil {
		p.kill()
		return fmt.Errorf("error removing the fault: %w", err)
	}
	// Let the attempts under way settle, then make every backed-off retry
	// due now instead of waiting minutes for it.
	if err := waitFor(ctx, pollInterval, time.Minute, "no batch to be running", func(ctx context.Context) (bool, error) {
		var busy int
		err := db.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND state IN ('running', 'available')`).Scan(&busy)
		return busy == 0, err
	}); err != nil {
		p.kill()
		return err
	}
	n, err := expedite(ctx, db)
	if err != nil {
		p.kill()
		return err
	}
	res.Expedited += n
	werr := h.waitDrained(ctx, db, []*process{p})
	terr := h.terminateAll([]*process{p}, res)
	res.SafetyNetFailures = countLines(p.logPath, "could not write the batch, failed POIs included")
	h.progress("  made %d batches due now (JobRetry); %d batch failures logged with their POI ids", n, res.SafetyNetFailures)
	return joinErrs([]error{werr, terr})
}

func joinErrs(errs []error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	msg := out[0].Error()
	for _, e := range out[1:] {
		msg += "; " + e.Error()
	}
	return fmt.Errorf("%s", msg)
}

// scenarioReprocessKill works the corpus, then SIGKILLs `relay reprocess
// --status new` at random moments while it marks failed_pois rows and
// enqueues their jobs, reruns it to completion and works the jobs. The
// malformed POIs fail again, so every row must end back in new with
// attempts exactly 2: reprocessed once, never lost (still 1) nor enqueued
// twice (3 or more). A reprocess killed between marking and enqueuing
// would leave rows in reprocessing with no job.
func (h *harness) scenarioReprocessKill(ctx context.Context, db *scenarioDB, res *Result) error {
	res.Concurrent = 1
	if err := h.finish(ctx, db, res); err != nil {
		return err
	}
	env := h.env(db, nil)
	// Small chunks at a rate slow enough that the rows outlast every kill:
	// each run gets about a mean kill delay's worth of rows before it dies.
	var rows int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM failed_pois`).Scan(&rows); err != nil {
		return fmt.Errorf("error counting failed_pois: %w", err)
	}
	meanDelay := (h.cfg.KillDelayMin + h.cfg.KillDelayMax).Seconds() / 2
	rate := max(5, int(float64(rows)/(float64(h.cfg.Kills)*meanDelay*1.5)))
	args := []string{"reprocess", "--status", "new", "--yes", "--chunk-size", "5", "--rate", fmt.Sprintf("%d/s", rate)}
	for res.Kills < h.cfg.Kills {
		res.Processes++
		p, err := start(h.workDir, fmt.Sprintf("%s-reprocess-%02d", res.Scenario, res.Processes), h.binary, env, nil, args...)
		if err != nil {
			return err
		}
		span := h.cfg.KillDelayMax - h.cfg.KillDelayMin
		delay := h.cfg.KillDelayMin + time.Duration(h.rng.Int64N(int64(span)+1))
		select {
		case <-p.done:
			// It finished before the kill: every row has been taken.
			h.progress("  reprocess finished before kill %d", res.Kills+1)
		case <-ctx.Done():
			p.kill()
			return ctx.Err()
		case <-time.After(delay):
			if p.running() {
				p.kill()
				<-p.done
				res.Kills++
				var left, marked int
				if err := db.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'new'), count(*) FILTER (WHERE status = 'reprocessing') FROM failed_pois`).
					Scan(&left, &marked); err != nil {
					return fmt.Errorf("error counting failed_pois: %w", err)
				}
				h.progress("  kill %2d after %6s: %d rows still new, %d reprocessing", res.Kills, delay.Round(time.Millisecond), left, marked)
				continue
			}
		}
		break
	}
	// Finish what the kills interrupted; a second run must find nothing.
	for run := 1; run <= 2; run++ {
		res.Processes++
		if err := h.runRelay(ctx, fmt.Sprintf("%s-reprocess-final-%d", res.Scenario, run), env, nil, "reprocess", "--status", "new", "--yes"); err != nil {
			return fmt.Errorf("reprocess run to completion: %w", err)
		}
	}
	var orphans int
	if err := db.pool.QueryRow(ctx, `
		SELECT count(*) FROM failed_pois f
		WHERE f.status = 'reprocessing'
		  AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.id = f.reprocess_job_id)`).Scan(&orphans); err != nil {
		return fmt.Errorf("error looking for rows marked without a job: %w", err)
	}
	if orphans > 0 {
		return fmt.Errorf("%d failed_pois rows are marked reprocessing without a job", orphans)
	}
	if err := h.finish(ctx, db, res); err != nil {
		return err
	}
	var total, once int
	if err := db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'new' AND attempts = 2) FROM failed_pois`).
		Scan(&total, &once); err != nil {
		return fmt.Errorf("error checking reprocess outcomes: %w", err)
	}
	if once != total {
		return fmt.Errorf("%d of %d failed_pois rows were not reprocessed exactly once (want status new, attempts 2)", total-once, total)
	}
	h.progress("  %d kills of relay reprocess; all %d rows reprocessed exactly once", res.Kills, total)
	return nil
}

// scenarioMapReduceKill enqueues a MapReduce job whose agent succeeds on
// most items and always fails on every tenth, SIGKILLs `relay worker` at
// random moments while agents run, restarts it, and finishes with
// `relay worker --until-idle`. Every item must end succeeded or
// dead-lettered (the failing ones, each exactly once in the DLQ with
// max_retries+1 River attempts), none pending. Agent runs are at least
// once: a killed attempt runs again, which the scenario counts but allows.
func (h *harness) scenarioMapReduceKill(ctx context.Context, db *scenarioDB, res *Result) error {
	res.Concurrent = 1
	if err := h.finish(ctx, db, res); err != nil { // the POI corpus first, so the invariants hold
		return err
	}
	dir := filepath.Join(h.workDir, res.Scenario)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	runs := filepath.Join(dir, "runs.log")
	agent := filepath.Join(dir, "agent.sh")
	script := "#!/bin/sh\ncat >/dev/null\necho \"$RELAY_ITEM_ID $RELAY_ATTEMPT\" >> " + runs + "\nsleep 0.05\n" +
		"case \"$RELAY_ITEM_ID\" in *0) echo 'upstream refused item' >&2; exit 3 ;; esac\necho ok\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		return err
	}
	items := max(50, h.corpus.POIs/100)
	var input strings.Builder
	for i := 1; i <= items; i++ {
		fmt.Fprintf(&input, "{\"id\": \"%d\", \"n\": %d}\n", i, i)
	}
	inputPath := filepath.Join(dir, "items.ndjson")
	if err := os.WriteFile(inputPath, []byte(input.String()), 0o600); err != nil {
		return err
	}
	settings := map[string]string{"RELAY_MAPREDUCE_WORKDIR": filepath.Join(dir, "work"), "RELAY_MAPREDUCE_PARALLEL": "4"}
	if os.Geteuid() == 0 {
		// relay runs no agent as root: the agents run as nobody, who must
		// reach the script (h.workDir is MkdirTemp's, 0700) and append to
		// runs.log.
		settings["RELAY_AGENT_USER"] = "nobody"
		if err := os.Chmod(h.workDir, 0o711); err != nil {
			return err
		}
		if err := os.WriteFile(runs, nil, 0o600); err != nil {
			return err
		}
		if err := os.Chmod(runs, 0o666); err != nil {
			return err
		}
	}
	env := h.env(db, settings)
	res.Processes++
	if err := h.runRelay(ctx, res.Scenario+"-enqueue", env, nil, "mapreduce", "run", "--input", inputPath, "--agent", agent,
		"--job-id", "chaos", "--max-retries", "1", "--retry-backoff", "10ms", "--timeout", "30s"); err != nil {
		return fmt.Errorf("mapreduce run: %w", err)
	}
	pendingItems := func() (int, error) {
		var n int
		err := db.pool.QueryRow(ctx, `SELECT count(*) FROM mapreduce_items WHERE job_id = 'chaos' AND status = 'pending'`).Scan(&n)
		return n, err
	}
	for res.Kills < h.cfg.Kills {
		res.Processes++
		p, err := start(h.workDir, fmt.Sprintf("%s-worker-%02d", res.Scenario, res.Processes), h.binary, env, nil, "worker")
		if err != nil {
			return err
		}
		span := h.cfg.KillDelayMax - h.cfg.KillDelayMin
		delay := h.cfg.KillDelayMin + time.Duration(h.rng.Int64N(int64(span)+1))
		select {
		case <-p.done:
			return fmt.Errorf("worker exited %d on its own (log %s): %s", p.exitCode(), p.logPath, tail(p.logPath, 300))
		case <-ctx.Done():
			p.kill()
			return ctx.Err()
		case <-time.After(delay):
		}
		p.kill()
		<-p.done
		left, err := pendingItems()
		if err != nil {
			return fmt.Errorf("error counting items: %w", err)
		}
		res.Kills++
		h.progress("  kill %2d after %6s: %d items pending", res.Kills, delay.Round(time.Millisecond), left)
		if left == 0 {
			break
		}
	}
	var st stall
	for round := 1; ; round++ {
		res.Processes++
		if err := h.runRelay(ctx, fmt.Sprintf("%s-until-idle-%d", res.Scenario, round), env, nil, "worker", "--until-idle"); err != nil {
			return err
		}
		left, err := pendingItems()
		if err != nil {
			return err
		}
		if left == 0 {
			break
		}
		if st.stalled(left) {
			return fmt.Errorf("%d MapReduce items still pending after %d runs of relay worker --until-idle, none settled in the last %s (%d runs)",
				left, round, stallTimeout, st.runs)
		}
		n, err := expedite(ctx, db)
		if err != nil {
			return err
		}
		res.Expedited += n
	}
	failing := items / 10
	// lostOnly: items dead-lettered because every attempt they had was
	// lost with a killed worker (the policy counts a lost attempt as a
	// failure). Killed workers' items come back within seconds, while the
	// kills go on, so a healthy item can lose all of its attempts. A
	// failing item (every tenth, id ending in 0) that lost all of its
	// attempts is counted in failing, not here.
	var succeeded, deadLettered, dlqRows, dlqDistinct, badHistory, lostOnly int
	if err := db.pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status = 'dead_lettered'),
		       (SELECT count(*) FROM dead_lettered_items WHERE job_id = 'chaos'),
		       (SELECT count(DISTINCT item_id) FROM dead_lettered_items WHERE job_id = 'chaos'),
		       (SELECT count(*) FROM dead_lettered_items WHERE job_id = 'chaos' AND failure_count < 2),
		       (SELECT count(*) FROM dead_lettered_items d WHERE job_id = 'chaos' AND right(d.item_id, 1) <> '0' AND NOT EXISTS (
		            SELECT 1 FROM jsonb_array_elements(d.failure_history) e WHERE NOT e ? 'river_attempt'))
		FROM mapreduce_items WHERE job_id = 'chaos'`).Scan(&succeeded, &deadLettered, &dlqRows, &dlqDistinct, &badHistory, &lostOnly); err != nil {
		return fmt.Errorf("error checking MapReduce outcomes: %w", err)
	}
	raw, err := os.ReadFile(runs)
	if err != nil {
		return err
	}
	agentRuns := strings.Count(string(raw), "\n")
	h.progress("  %d kills; %d items: %d succeeded, %d dead-lettered (%d DLQ rows, %d of them healthy items whose attempts were all lost with killed workers); %d agent runs",
		res.Kills, items, succeeded, deadLettered, dlqRows, lostOnly, agentRuns)
	switch {
	case succeeded != items-failing-lostOnly || deadLettered != failing+lostOnly:
		return fmt.Errorf("want %d succeeded and %d dead-lettered items, got %d and %d", items-failing-lostOnly, failing+lostOnly, succeeded, deadLettered)
	case dlqRows != deadLettered || dlqDistinct != deadLettered:
		return fmt.Errorf("want %d dead_lettered_items rows, one per dead-lettered item, got %d (%d distinct)", deadLettered, dlqRows, dlqDistinct)
	case badHistory > 0:
		// An attempt killed with its worker is recorded from River's
		// rescuer error, so every dead-lettered item shows max_retries+1.
		return fmt.Errorf("%d dead-lettered items have fewer than max_retries+1 = 2 recorded failures", badHistory)
	}
	var lostRecorded int
	if err := db.pool.QueryRow(ctx, `
		SELECT count(*) FROM mapreduce_items i, jsonb_array_elements(i.failure_history) e
		WHERE i.job_id = 'chaos' AND e ? 'river_attempt'`).Scan(&lostRecorded); err != nil {
		return fmt.Errorf("error counting recorded lost attempts: %w", err)
	}
	h.progress("  %d attempts lost with a killed worker recorded in failure_history", lostRecorded)
	return nil
}
