package mapreduce

import (
	"fmt"
	"slices"

	"github.com/relay-dev/relay/internal/agent"
)

// Decision is what a Policy says to do with a failed attempt.
type Decision int

// The decisions of a Policy.
const (
	// DecisionRetry: try again after the backoff.
	DecisionRetry Decision = iota
	// DecisionDeadLetter: stop and write the item to dead_lettered_items.
	DecisionDeadLetter
	// DecisionRetryForever: try again after the backoff without using up
	// an attempt; the item is never dead-lettered for this error.
	DecisionRetryForever
)

func (d Decision) String() string {
	switch d {
	case DecisionRetry:
		return "retry"
	case DecisionDeadLetter:
		return "dead_letter"
	case DecisionRetryForever:
		return "retry_forever"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Policy decides when a failing MapReduce item is dead-lettered, like the
// weakincentives DLQPolicy: after maxAttempts failed attempts, except that
// IncludeErrors dead-letter at the first failure and ExcludeErrors never do.
// Exclusion wins over inclusion.
type Policy struct {
	IncludeErrors []agent.ErrorType `json:"include_errors"`
	ExcludeErrors []agent.ErrorType `json:"exclude_errors"`
}

// DefaultPolicy dead-letters ValidationFailed at once (the item's data is
// wrong; retrying cannot help) and never dead-letters StorageError (relay's
// own database failing is not the item's fault).
func DefaultPolicy() Policy {
	return Policy{
		IncludeErrors: []agent.ErrorType{agent.ErrorTypeValidationFailed},
		ExcludeErrors: []agent.ErrorType{agent.ErrorTypeStorage},
	}
}

// Validate rejects a type listed in both lists.
func (p Policy) Validate() error {
	for _, t := range p.IncludeErrors {
		if slices.Contains(p.ExcludeErrors, t) {
			return fmt.Errorf("error type %s is both included (dead-letter at once) and excluded (never dead-letter)", t)
		}
	}
	return nil
}

// Decide returns what to do after attempt (counted from 1) of maxAttempts
// failed with error type t.
func (p Policy) Decide(t agent.ErrorType, attempt, maxAttempts int) Decision {
	switch {
	case slices.Contains(p.ExcludeErrors, t):
		return DecisionRetryForever
	case slices.Contains(p.IncludeErrors, t):
		return DecisionDeadLetter
	case attempt >= maxAttempts:
		return DecisionDeadLetter
	default:
		return DecisionRetry
	}
}
