package items

import (
	"encoding/json"
	"time"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/internal/agent"
)

// WorktreeArtifacts points at what a dead-lettered item's attempts left on
// disk: dead_lettered_items.worktree_artifacts.
type WorktreeArtifacts struct {
	// WorktreePath is the last failed attempt's working directory.
	WorktreePath string `json:"worktree_path"`
	// Kept says whether relay left it in place (failed attempts' directories
	// are kept; successful ones are removed).
	Kept bool `json:"kept"`
	// LogFiles are every attempt's log, oldest first.
	LogFiles []string `json:"log_files"`
}

// Status is a dead_lettered_items row's place in its life cycle.
type Status string

// The statuses of a dead_lettered_items row.
const (
	// StatusDeadLettered: failed beyond its retries; waiting for an operator.
	StatusDeadLettered Status = "dead_lettered"
	// StatusReprocessing: re-enqueued by `relay dlq retry` or `relay mapreduce
	// resume --include-dlq-items`; its new run has not ended.
	StatusReprocessing Status = "reprocessing"
	// StatusReprocessed: a later run succeeded. The item has left the DLQ
	// (list, stats totals, analyze and export skip it) and `relay dlq clear`
	// deletes the row.
	StatusReprocessed Status = "reprocessed"
	// StatusIgnored: set aside by an operator with SQL; kept for the record.
	StatusIgnored Status = "ignored"
)

// Item is one row of dead_lettered_items.
type Item struct {
	ID                   int64                 `json:"id"`
	JobID                string                `json:"job_id"`
	ItemID               string                `json:"item_id"`
	ItemData             json.RawMessage       `json:"item_data"`
	FirstAttempt         time.Time             `json:"first_attempt"`
	LastAttempt          time.Time             `json:"last_attempt"`
	FailureCount         int                   `json:"failure_count"`
	FailureHistory       []agent.FailureDetail `json:"failure_history"`
	ErrorSignature       string                `json:"error_signature"`
	ErrorType            agent.ErrorType       `json:"error_type"`
	ExitCode             *int                  `json:"exit_code"`
	WorktreeArtifacts    *WorktreeArtifacts    `json:"worktree_artifacts"`
	ReprocessEligible    bool                  `json:"reprocess_eligible"`
	ManualReviewRequired bool                  `json:"manual_review_required"`
	Status               Status                `json:"status"`
	DeadLetterCount      int                   `json:"dead_letter_count"`
	DeadLetteredAt       time.Time             `json:"dead_lettered_at"`
}

// LastFailure returns the most recent attempt, or nil when there is none.
func (it *Item) LastFailure() *agent.FailureDetail {
	if len(it.FailureHistory) == 0 {
		return nil
	}
	return &it.FailureHistory[len(it.FailureHistory)-1]
}

// NewItem builds the row for an item that failed with history,
// its attempts oldest first. It is pure: the signature, error type and exit
// code come from the last attempt, the time span from the first and last,
// the artifacts from the attempts' directories and logs, and eligibility
// from Eligibility. An empty history gives an Unknown item.
func NewItem(jobID, itemID string, data json.RawMessage, history []agent.FailureDetail) Item {
	it := Item{
		JobID: jobID, ItemID: itemID, ItemData: data,
		FailureCount: len(history), FailureHistory: history,
		ErrorType: agent.ErrorTypeUnknown, Status: StatusDeadLettered, DeadLetterCount: 1,
	}
	if len(data) == 0 {
		it.ItemData = json.RawMessage("null")
	}
	if it.FailureHistory == nil {
		it.FailureHistory = []agent.FailureDetail{}
	}
	if last := it.LastFailure(); last != nil {
		it.FirstAttempt = history[0].Timestamp
		it.LastAttempt = last.Timestamp.Add(time.Duration(last.DurationMS) * time.Millisecond)
		it.ErrorSignature = deadletter.Signature(deadletter.StorableText(last.ErrorMessage))
		if last.ErrorType != "" {
			it.ErrorType = last.ErrorType
		}
		it.ExitCode = last.ExitCode
		art := &WorktreeArtifacts{WorktreePath: last.WorktreePath, Kept: last.WorktreePath != "", LogFiles: []string{}}
		for _, h := range history {
			if h.LogLocation != "" {
				art.LogFiles = append(art.LogFiles, h.LogLocation)
			}
		}
		if art.WorktreePath != "" || len(art.LogFiles) > 0 {
			it.WorktreeArtifacts = art
		}
	}
	it.ReprocessEligible, it.ManualReviewRequired = Eligibility(it.ErrorType, it.DeadLetterCount)
	return it
}

// Eligibility decides whether an item dead-lettered with error type t for
// the deadLetterCount-th time may be retried automatically (`relay dlq
// retry` without --force) and whether a person should look at it:
//
//   - ValidationFailed: not eligible (the same data fails the same way) and
//     needs review.
//   - Unknown: eligible, but needs review (relay could not say what
//     happened).
//   - anything else: eligible; needs review once the item has been
//     dead-lettered twice (a retry from the DLQ failed again).
func Eligibility(t agent.ErrorType, deadLetterCount int) (eligible, manualReview bool) {
	switch t {
	case agent.ErrorTypeValidationFailed:
		return false, true
	case agent.ErrorTypeUnknown:
		return true, true
	default:
		return true, deadLetterCount >= 2
	}
}
