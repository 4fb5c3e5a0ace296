// Package mapreduce holds relay's MapReduce jobs: a list of JSON work items,
// each run through an agent command by the mapreduce_item River worker, with
// retries, and dead-lettered into dead_lettered_items when they keep
// failing. It owns the mapreduce_jobs and mapreduce_items tables; the worker
// lives in package worker, the agent runner in internal/agent and the DLQ in
// package deadletter.
package mapreduce

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/riverqueue/river"
)

// Kind is the River job kind of one work item.
const Kind = "mapreduce_item"

// Queue is the River queue MapReduce items are worked from; its MaxWorkers
// (mapreduce_parallel, or --parallel with --wait) bounds concurrent agents.
const Queue = "mapreduce"

// WaitQueue is the River queue of a job worked by `relay mapreduce run
// --wait` (or `resume --wait`): only that process works it, so it works its
// own job's items and no other job's (whose agent paths and working
// directories belong to whoever submitted them). The name is the job id made
// a valid River queue name (lower case, at most 64 characters) with a hash
// of the whole id, so that two jobs never share one.
func WaitQueue(jobID string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(jobID) {
		if b.Len() >= 32 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		} else {
			sep = true
		}
	}
	if b.Len() > 0 {
		b.WriteByte('_')
	}
	sum := sha256.Sum256([]byte(jobID))
	return waitQueuePrefix + b.String() + hex.EncodeToString(sum[:4])
}

// waitQueuePrefix starts every WaitQueue name.
const waitQueuePrefix = "mapreduce_wait_"

// ItemArgs is one work item's River job. The item's data and the job's agent
// are read from mapreduce_items and mapreduce_jobs when the job is worked, so
// the args stay small; the timeout and backoff travel here because River asks
// for them before Work runs.
type ItemArgs struct {
	JobID          string `json:"job_id"`
	ItemID         string `json:"item_id"`
	TimeoutMS      int64  `json:"timeout_ms"`
	RetryBackoffMS int64  `json:"retry_backoff_ms"`
}

// Kind is the River job kind.
func (ItemArgs) Kind() string { return Kind }

// InsertOpts puts items on the MapReduce queue.
func (ItemArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: Queue} }

// MaxBackoff caps the delay between attempts.
const MaxBackoff = 10 * time.Minute

// Backoff is the delay before retrying after failed attempt n (from 1):
// base doubled for each earlier failure, capped at MaxBackoff. base 0 means
// retry at once.
func Backoff(base time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}
