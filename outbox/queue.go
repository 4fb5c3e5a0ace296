package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Beginner starts transactions; *pgxpool.Pool is one.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Defaults for DrainConfig.
const (
	DrainIntervalDefault = 200 * time.Millisecond
	DrainBatchDefault    = 100
	DrainLoopsDefault    = 4
)

// DrainConfig tunes a Drainer. Zero values take the defaults.
type DrainConfig struct {
	// Interval is how often an idle Drainer looks for queued analyses: a
	// queued analysis waits at most this long for its publish.
	Interval time.Duration
	// Batch is how many analyses one drain transaction publishes.
	Batch int
	// Loops is how many drains Run runs at once, at most, while a backlog
	// lasts (each on a connection of its own); an idle Drainer runs one.
	Loops int
}

// Drainer publishes the analyses that the SQL API (relay_publish and
// relay_publish_many, migration 22) queued in publish_queue. Each drain
// takes up to Batch committed rows, oldest first, FOR UPDATE SKIP LOCKED
// (so any number of drainers share the queue, each row published by one),
// publishes them with the Publisher and deletes them, in one transaction:
// a drainer that dies publishes nothing and the rows stay queued. An
// analysis the Publisher rejects moves to rejected_analyses with the reason
// in the same transaction, so nothing queued is lost or published twice.
//
// Drains running at once (Run's loops, other processes' drainers) take
// different rows, and so different files: publish_queue holds one row per
// file. A drain publishes a file only under the file's publish lock
// (migration 27), which it tries to take and otherwise leaves the file for a
// later drain: every publish of the file, Go or SQL, holds that lock until it
// commits, so a drain never applies a queued analysis over a publish that
// committed after it (TestPublish_LastCommittedWinsBetweenGoAndSQL), and
// never waits for a publish lock: a SQL publish waiting for a row the drain
// holds is skipped, not waited for. Files drained together are published
// together, so a POI id may move between them
// (TestPublish_APOIMovesBetweenFilesPublishedTogether); an analysis taking
// an id from a file whose analysis is still queued waits for it
// (ownerQueued). The files' rows are locked in file_id order, as every
// publish locks them, so concurrent drains do not deadlock on them. A drain
// can deadlock, as any publish can, with a caller's transaction that holds
// what the drain needs and waits for what it holds (the row of a file of the
// drain, a POI id the drain inserts): PostgreSQL aborts one of the two, and
// an aborted drain's rows stay queued.
type Drainer struct {
	db     Beginner
	pub    *Publisher
	cfg    DrainConfig
	logger *slog.Logger
	// rejectedHook, set by tests only, runs after a drain's publish was
	// rejected and before the drain looks for the owner's queued analysis:
	// a test commits another drain there.
	rejectedHook func(*RejectError)
}

// NewDrainer returns a Drainer that publishes through pub.
func NewDrainer(db Beginner, pub *Publisher, cfg DrainConfig, logger *slog.Logger) *Drainer {
	cfg.Interval = cmp.Or(cfg.Interval, DrainIntervalDefault)
	cfg.Batch = cmp.Or(cfg.Batch, DrainBatchDefault)
	cfg.Loops = cmp.Or(cfg.Loops, DrainLoopsDefault)
	return &Drainer{db: db, pub: pub, cfg: cfg, logger: logger}
}

// DrainResult says what one drain did.
type DrainResult struct {
	// Published is the number of analyses published, Rejected the number
	// moved to rejected_analyses, Deferred the number left queued for a
	// later drain (an id of theirs belongs to a file whose analysis is
	// queued too).
	Published, Rejected, Deferred int
}

// Run drains until ctx ends. One loop drains every Interval, and again at
// once after a full batch; a full batch also wakes another of up to Loops
// loops, which drains beside it until it takes a batch that is not full:
// a backlog is drained Loops batches at a time, an idle queue costs one
// drain every Interval. A failed drain (the database unreachable, a
// deadlock) is logged and its rows stay queued: the first loop tries again
// after Interval, another goes idle. Run returns nil when ctx ends, once
// every loop's drain in progress has committed or rolled back.
func (d *Drainer) Run(ctx context.Context) error {
	// Buffered, so that a wake-up sent while every other loop is busy is
	// taken by the next to go idle rather than lost.
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for range d.cfg.Loops - 1 {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-wake:
				}
				for d.step(ctx, wake) {
				}
			}
		})
	}
	defer wg.Wait()
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
		if d.step(ctx, wake) {
			wait.Reset(0)
		} else {
			wait.Reset(d.cfg.Interval)
		}
	}
}

// step runs one drain of Run's loops and reports whether it took a full
// batch, in which case it wakes another loop if one is idle.
func (d *Drainer) step(ctx context.Context, wake chan<- struct{}) (full bool) {
	res, err := d.Drain(ctx)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		d.logger.ErrorContext(ctx, "publishing queued analyses failed; they stay queued", slog.String("error", err.Error()))
		return false
	case res.Published+res.Rejected < d.cfg.Batch:
		return false
	}
	select {
	case wake <- struct{}{}:
	default:
	}
	return true
}

// queued is one publish_queue row.
type queued struct {
	repo     string
	fileID   string
	analysis []byte
	queuedAt time.Time
	seq      int64
}

// Drain publishes, in one transaction, up to Batch queued analyses.
func (d *Drainer) Drain(ctx context.Context) (DrainResult, error) {
	var res DrainResult
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("error draining the publish queue: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	qs, err := takeQueued(ctx, tx, d.cfg.Batch)
	if err != nil || len(qs) == 0 {
		return res, err
	}

	var as []Analysis
	var asQueued []queued
	var rejected []rejection
	for _, q := range qs {
		a, err := DecodeAnalysis(q.analysis)
		if err != nil {
			rejected = append(rejected, rejectionOf(q, err))
			continue
		}
		as, asQueued = append(as, a), append(asQueued, q)
	}
	// All at once; if one is rejected, all at once again without it
	// (PublishManyTx leaves tx usable), so that one bad analysis holds up no
	// other and files published together still are (a POI id moving
	// between them). An analysis rejected for a POI id of a file whose
	// analysis is queued too takes that analysis into the drain, ahead of
	// it, or, when another transaction holds it, stays queued for a later
	// drain: relay_publish_many's files are published together even when
	// the queue's order splits them between drains
	// (TestDrain_APOIMovingBetweenFilesDrainedApart).
	pulled := map[fileKey]bool{}
	for len(as) > 0 {
		_, err = d.pub.PublishManyTx(ctx, tx, as)
		var rej *RejectError
		if err == nil {
			res.Published = len(as)
			break
		}
		if !errors.As(err, &rej) {
			return DrainResult{}, err
		}
		i := slices.IndexFunc(as, func(a Analysis) bool { return a.Repository == rej.Repository && a.FileID == rej.FileID })
		if i < 0 {
			return DrainResult{}, fmt.Errorf("error draining the publish queue: a rejection names no analysis of the drain: %w", err)
		}
		if d.rejectedHook != nil {
			d.rejectedHook(rej)
		}
		if owner := (fileKey{rej.Repository, rej.OwnerFileID}); owner.id != "" && !pulled[owner] {
			pulled[owner] = true
			q, queued, took, qerr := takeFile(ctx, tx, owner)
			if qerr != nil {
				return DrainResult{}, qerr
			}
			switch {
			case took:
				a, derr := DecodeAnalysis(q.analysis)
				if derr != nil {
					rejected = append(rejected, rejectionOf(q, derr))
					continue
				}
				as, asQueued = slices.Insert(as, i, a), slices.Insert(asQueued, i, q)
				continue
			case queued:
				res.Deferred++
				as, asQueued = slices.Delete(as, i, i+1), slices.Delete(asQueued, i, i+1)
				continue
			default:
				// The other file's analysis was published since the
				// rejection (by another drain or a publish that committed
				// meanwhile), and may have released the id: once more
				// (TestDrain_RejectedForAnIDAnotherDrainReleasesMeanwhile).
				continue
			}
		}
		rejected = append(rejected, rejectionOf(asQueued[i], err))
		as, asQueued = slices.Delete(as, i, i+1), slices.Delete(asQueued, i, i+1)
	}
	if err := recordRejections(ctx, tx, rejected); err != nil {
		return DrainResult{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return DrainResult{}, fmt.Errorf("error committing a drain of the publish queue: %w", err)
	}
	res.Rejected = len(rejected)
	for _, r := range rejected {
		d.logger.WarnContext(ctx, "queued analysis rejected; kept in rejected_analyses for `relay outbox retry`",
			slog.String("file_id", r.fileID), slog.String("poi_id", r.poiID), slog.String("reason", r.reason))
	}
	if res.Published > 0 {
		d.logger.DebugContext(ctx, "queued analyses published", slog.Int("published", res.Published), slog.Int("rejected", res.Rejected))
	}
	return res, nil
}

// takeQueued takes up to n queued analyses, oldest first, whose files'
// publish locks it can take at once (lockQueued). It reads the oldest rows
// (candidatesSQL), then, for each repository among them, takes that
// repository's oldest rows FOR UPDATE SKIP LOCKED (takeRepositorySQL):
// concurrent drains take different rows. While rows it read were held by
// another transaction, or had their publish lock taken elsewhere, it reads
// more, leaving those out, a few times at most: files being published hold
// up no other file's drain.
//
// FOR UPDATE names one repository ($1): on Citus, where the tables are
// distributed by repository, it runs on the node holding the repository's
// rows, which a FOR UPDATE over every shard cannot.
func takeQueued(ctx context.Context, tx pgx.Tx, n int) ([]queued, error) {
	var out []queued
	// left are the rows left out: the rows taken, and those held elsewhere.
	left := map[fileKey]bool{}
	for range 4 {
		rows, err := tx.Query(ctx, candidatesSQL, n+len(left))
		if err != nil {
			return nil, fmt.Errorf("error reading the publish queue: %w", err)
		}
		cands, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (fileKey, error) {
			var k fileKey
			err := row.Scan(&k.repo, &k.id)
			return k, err
		})
		if err != nil {
			return nil, fmt.Errorf("error reading the publish queue: %w", err)
		}
		// How many rows to take from each repository, in the order of its
		// oldest row.
		var repos []string
		var asked []fileKey
		want := map[string]int{}
		for _, k := range cands {
			if len(out)+len(asked) == n {
				break
			}
			if left[k] {
				continue
			}
			if want[k.repo] == 0 {
				repos = append(repos, k.repo)
			}
			want[k.repo]++
			asked = append(asked, k)
		}
		if len(repos) == 0 {
			break
		}
		batch := &pgx.Batch{}
		for _, repo := range repos {
			files := []string{}
			for k := range left {
				if k.repo == repo {
					files = append(files, k.id)
				}
			}
			batch.Queue(takeRepositorySQL, repo, files, want[repo])
		}
		br := tx.SendBatch(ctx, batch)
		var qs []queued
		short := false
		for _, repo := range repos {
			rows, err := br.Query()
			if err != nil {
				_ = br.Close()
				return nil, fmt.Errorf("error taking queued analyses of repository %q: %w", repo, err)
			}
			got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queued, error) {
				q := queued{repo: repo}
				err := row.Scan(&q.fileID, &q.analysis, &q.queuedAt, &q.seq)
				return q, err
			})
			if err != nil {
				_ = br.Close()
				return nil, fmt.Errorf("error taking queued analyses of repository %q: %w", repo, err)
			}
			short = short || len(got) < want[repo]
			qs = append(qs, got...)
		}
		if err := br.Close(); err != nil {
			return nil, fmt.Errorf("error taking queued analyses: %w", err)
		}
		locked, err := lockQueued(ctx, tx, qs)
		if err != nil {
			return nil, err
		}
		out = append(out, locked...)
		for _, q := range qs {
			left[fileKey{q.repo, q.fileID}] = true
		}
		if len(out) == n || len(locked) == len(qs) && !short {
			break
		}
		// Rows another transaction holds are read again but not taken:
		// leave them out, to read past them.
		for _, k := range asked {
			left[k] = true
		}
	}
	slices.SortFunc(out, func(a, b queued) int { return cmp.Compare(a.seq, b.seq) })
	return out, nil
}

const (
	// candidatesSQL reads the oldest queued rows' keys ($1 of them),
	// without locking them.
	candidatesSQL = `SELECT repository, file_id FROM publish_queue ORDER BY seq LIMIT $1`
	// takeRepositorySQL takes repository $1's oldest queued rows ($3 of
	// them), leaving out the files $2, FOR UPDATE SKIP LOCKED.
	takeRepositorySQL = `
	SELECT file_id, analysis::text, queued_at, seq FROM publish_queue
	WHERE repository = $1 AND file_id <> ALL($2::text[])
	ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED`
)

// takeFile takes file's queued analysis into the drain, when it has one
// (queued) that no other transaction holds (took): its row FOR UPDATE SKIP
// LOCKED and its publish lock.
func takeFile(ctx context.Context, tx pgx.Tx, file fileKey) (q queued, isQueued, took bool, err error) {
	rows, err := tx.Query(ctx, `
		SELECT repository, file_id, analysis::text, queued_at FROM publish_queue
		WHERE repository = $1 AND file_id = $2 FOR UPDATE SKIP LOCKED`, file.repo, file.id)
	if err != nil {
		return q, false, false, fmt.Errorf("error reading the queued analysis of file %q: %w", file.id, err)
	}
	qs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queued, error) {
		var q queued
		err := row.Scan(&q.repo, &q.fileID, &q.analysis, &q.queuedAt)
		return q, err
	})
	if err != nil {
		return q, false, false, fmt.Errorf("error reading the queued analysis of file %q: %w", file.id, err)
	}
	if len(qs) == 0 {
		// None, or another drain or SQL publish holds it.
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM publish_queue WHERE repository = $1 AND file_id = $2)`,
			file.repo, file.id).Scan(&isQueued); err != nil {
			return q, false, false, fmt.Errorf("error looking for the queued analysis of file %q: %w", file.id, err)
		}
		return q, isQueued, false, nil
	}
	locked, err := lockQueued(ctx, tx, qs)
	if err != nil {
		return q, false, false, err
	}
	if len(locked) == 0 {
		return q, true, false, nil
	}
	return locked[0], true, true, nil
}

// lockQueued takes the publish locks of the queued files it can take at
// once (relay_try_lock_files) and returns their rows: a file whose lock
// another transaction holds is being published, or queued again by a SQL
// publish waiting for the row this drain holds; it stays queued for a later
// drain rather than waiting for a transaction that may wait for this one.
func lockQueued(ctx context.Context, tx pgx.Tx, qs []queued) ([]queued, error) {
	repos, files := make([]string, len(qs)), make([]string, len(qs))
	for i, q := range qs {
		repos[i], files[i] = q.repo, q.fileID
	}
	rows, err := tx.Query(ctx, `SELECT relay_try_lock_files($1::text[], $2::text[])`, repos, files)
	if err != nil {
		return nil, fmt.Errorf("error taking the publish locks of %d queued files: %w", len(qs), err)
	}
	busy, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("error taking the publish locks of %d queued files: %w", len(qs), err)
	}
	out := qs[:0:0]
	for i, q := range qs {
		if !slices.Contains(busy, int32(i+1)) {
			out = append(out, q)
		}
	}
	return out, nil
}

// rejection is a queued analysis the publisher rejected.
type rejection struct {
	queued
	poiID, reason string
}

func rejectionOf(q queued, err error) rejection {
	r := rejection{queued: q, reason: err.Error()}
	var rej *RejectError
	if errors.As(err, &rej) {
		r.poiID = rej.POIID
	}
	return r
}

// recordRejections moves rejected queued analyses to rejected_analyses,
// with the version their file had then: two statements per repository,
// which name it ($1), so that on Citus each runs on the node holding it.
func recordRejections(ctx context.Context, tx pgx.Tx, rs []rejection) error {
	if len(rs) == 0 {
		return nil
	}
	type cols struct {
		files, analyses, reasons []string
		pois                     []*string
		queuedAt                 []time.Time
	}
	var repos []string
	byRepo := map[string]*cols{}
	for _, r := range rs {
		c := byRepo[r.repo]
		if c == nil {
			c = &cols{}
			byRepo[r.repo] = c
			repos = append(repos, r.repo)
		}
		var poi *string
		if r.poiID != "" {
			poi = &r.poiID
		}
		c.files, c.analyses, c.reasons = append(c.files, r.fileID), append(c.analyses, string(r.analysis)), append(c.reasons, r.reason)
		c.pois, c.queuedAt = append(c.pois, poi), append(c.queuedAt, r.queuedAt)
	}
	b := &pgx.Batch{}
	for _, repo := range repos {
		c := byRepo[repo]
		b.Queue(`
			INSERT INTO rejected_analyses (repository, file_id, analysis, reason, poi_id, file_version, queued_at)
			SELECT $1, u.file_id, u.analysis::jsonb, u.reason, u.poi_id,
			       coalesce((SELECT version FROM files f WHERE f.repository = $1 AND f.file_id = u.file_id), 0), u.queued_at
			FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])
				AS u(file_id, analysis, reason, poi_id, queued_at)`,
			repo, c.files, c.analyses, c.reasons, c.pois, c.queuedAt)
		b.Queue(`DELETE FROM publish_queue WHERE repository = $1 AND file_id = ANY($2::text[])`, repo, c.files)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("error recording rejected analyses: %w", err)
	}
	return nil
}
