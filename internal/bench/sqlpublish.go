package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// SQLPublish is the sql phase: the main corpus published through the SQL
// publish API (relay_publish_many, one JSON array of FilesPerTx analyses per
// transaction, all from one connection) while a worker (River client and
// publish-queue drainer) runs, against the same corpus published by the Go
// publisher (PublishManyTx, the relay phase's concurrent run) in the same
// rounds. Each round does one run of each, the order alternating from round
// to round (go then sql, sql then go, ...), so that a machine getting
// slower or faster during the phase weighs on both alike.
type SQLPublish struct {
	Rounds []*SQLPublishRound `json:"rounds"`
	// Go and SQL are the runs of median e2e POIs/s of each.
	Go  *RunResult `json:"go"`
	SQL *RunResult `json:"sql"`
	// SQLVsGo is SQL's e2e POIs/s over Go's (the medians).
	SQLVsGo float64 `json:"sql_vs_go"`
}

// SQLPublishRound is one round of the sql phase.
type SQLPublishRound struct {
	// First is the run done first in the round: "go" or "sql".
	First string     `json:"first"`
	Go    *RunResult `json:"go"`
	SQL   *RunResult `json:"sql"`
	// SQLVsGo is this round's SQL e2e POIs/s over its Go e2e POIs/s.
	SQLVsGo float64 `json:"sql_vs_go"`
}

// sqlPublish is the sql phase (see SQLPublish).
func (b *bench) sqlPublish(ctx context.Context, res *Result) error {
	c := b.mainCorpus()
	src, err := pregenerated(corpusSource(c))
	if err != nil {
		return err
	}
	s := &SQLPublish{}
	var gos, sqls []*RunResult
	err = b.alternate([2]string{"go", "sql"}, [2]func() (*RunResult, error){
		func() (*RunResult, error) { return b.runCorpus(ctx, src, false, true) },
		func() (*RunResult, error) { return b.runSQLCorpus(ctx, src) },
	}, func(round int, first string, runs [2]*RunResult) {
		r := &SQLPublishRound{First: first, Go: runs[0], SQL: runs[1]}
		r.Go.Malformed, r.SQL.Malformed = c.malformedCount(), c.malformedCount()
		r.SQLVsGo = ratio(r.SQL.E2EPOIsPerSec, r.Go.E2EPOIsPerSec)
		b.progress("  round %d: go %.0f, sql %.0f e2e POIs/s: sql/go %.2f", round+1, r.Go.E2EPOIsPerSec, r.SQL.E2EPOIsPerSec, r.SQLVsGo)
		s.Rounds = append(s.Rounds, r)
		gos, sqls = append(gos, r.Go), append(sqls, r.SQL)
	})
	if err != nil {
		return err
	}
	s.Go, s.SQL = medianRound(gos), medianRound(sqls)
	s.SQLVsGo = ratio(s.SQL.E2EPOIsPerSec, s.Go.E2EPOIsPerSec)
	res.SQLPublish = s
	return nil
}

// runSQLCorpus publishes src through relay_publish_many, FilesPerTx
// analyses per transaction on one connection, while a worker built as
// runCorpus builds its concurrent one, with the drainer that every relay
// worker runs beside it, works the jobs; it is timed like runCorpus's
// concurrent run, from the worker's start until the publish queue and the
// resolve queue are empty (worker.WaitIdle).
func (b *bench) runSQLCorpus(ctx context.Context, src source) (*RunResult, error) {
	if err := b.resetSQL(ctx); err != nil {
		return nil, err
	}
	rss := sampleRSS()
	defer rss.Stop()
	caller, err := b.callerConn(ctx, b.url, false)
	if err != nil {
		return nil, err
	}
	defer caller.Close(context.WithoutCancel(ctx))
	wcfg := worker.ConfigFrom(b.workerConfig())
	res := &RunResult{Files: src.files, Concurrent: true}
	w, err := b.newWorker(wcfg, reresolved{res})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()
	if err := b.publishSQL(ctx, caller, src, res); err != nil {
		return nil, err
	}
	res.PublishSeconds = time.Since(start).Seconds()
	b.progress("  published %d POIs of %d files through relay_publish_many in %.1fs while working; draining", res.POIs, res.Files, res.PublishSeconds)
	if err := worker.WaitIdle(ctx, b.pool, b.workProgress()); err != nil {
		return nil, err
	}
	res.TotalSeconds = time.Since(start).Seconds()
	res.WorkSeconds = res.TotalSeconds
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	res.PeakRSSBytes = rss.Stop()
	var rejected int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM rejected_analyses`).Scan(&rejected); err != nil {
		return nil, fmt.Errorf("error counting rejected analyses: %w", err)
	}
	if rejected > 0 {
		return nil, fmt.Errorf("%d queued analyses were rejected (relay outbox rejected lists them; run with --keep)", rejected)
	}
	return res, b.count(ctx, res)
}

// publishSQL publishes every file of src through relay_publish_many on
// conn, FilesPerTx analyses per transaction, counting the POIs into res.
// Encoding each transaction's JSON array is timed, as the Go publisher's
// encoding of its job arguments is: both are the caller's work.
func (b *bench) publishSQL(ctx context.Context, conn *pgx.Conn, src source, res *RunResult) error {
	return b.publishBatches(src, res, func(batch []outbox.Analysis) error {
		data, err := appendAnalyses(nil, batch)
		if err != nil {
			return err
		}
		var took int
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT relay_publish_many($1::jsonb)`, string(data)).Scan(&took)
		})
		if err != nil {
			return fmt.Errorf("error publishing %d analyses from %q through relay_publish_many: %w", len(batch), batch[0].FileID, err)
		}
		if took != len(batch) {
			return fmt.Errorf("relay_publish_many took %d of %d analyses", took, len(batch))
		}
		return nil
	})
}

// appendAnalyses appends batch to dst as the JSON array relay_publish_many
// takes, each POI's JSON copied as it is: a caller that holds its POIs as
// JSON, as the Go phase's caller does, writes them into the array without
// decoding them again (json.Marshal would validate and compact every one).
func appendAnalyses(dst []byte, batch []outbox.Analysis) ([]byte, error) {
	dst = append(dst, '[')
	for i, a := range batch {
		id, err := json.Marshal(a.FileID)
		if err != nil {
			return nil, fmt.Errorf("error encoding file %q: %w", a.FileID, err)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(append(dst, `{"fileId":`...), id...), `,"pois":[`...)
		for j, p := range a.POIs {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, p...)
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']'), nil
}

// callerConn opens the connection of a service that publishes through the
// SQL API: to PostgreSQL, or through a transaction pooler (pooled), where
// it prepares no statement (pgx's exec mode), as relay's own pools do there.
func (b *bench) callerConn(ctx context.Context, url string, pooled bool) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error parsing the caller's URL: %w", err)
	}
	cfg.RuntimeParams["application_name"] = "relay-bench-caller"
	if pooled {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
		cfg.StatementCacheCapacity, cfg.DescriptionCacheCapacity = 0, 0
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting the caller: %w", err)
	}
	return conn, nil
}

// resetSQL is reset, and empties the SQL publish API's tables too.
func (b *bench) resetSQL(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, `TRUNCATE publish_queue, rejected_analyses RESTART IDENTITY`); err != nil {
		return fmt.Errorf("error emptying the publish queue: %w", err)
	}
	return b.reset(ctx)
}
