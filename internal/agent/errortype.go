package agent

import (
	"fmt"
	"strings"
	"time"
)

// ErrorType classifies why one attempt at a MapReduce work item failed. It is
// stored in dead_lettered_items.error_type and in every failure_history
// entry, and decided from what happened (a deadline, an exit status, a
// signal, an errno), not guessed from error text.
type ErrorType string

// The error types of a failed attempt.
const (
	// ErrorTypeTimeout: the attempt's deadline expired and relay killed the
	// agent's process group.
	ErrorTypeTimeout ErrorType = "Timeout"
	// ErrorTypeCommandFailed: the agent exited non-zero (exit_code holds the
	// status; 128+N when a signal other than those below ended it, 127 when
	// the command was not found, 126 when it could not be executed).
	ErrorTypeCommandFailed ErrorType = "CommandFailed"
	// ErrorTypeResourceExhausted: the agent was killed by SIGKILL that relay
	// did not send (the kernel's out-of-memory killer), by SIGXCPU or
	// SIGXFSZ, or the disk was full (ENOSPC, EDQUOT) for its directory or log.
	ErrorTypeResourceExhausted ErrorType = "ResourceExhausted"
	// ErrorTypeValidationFailed: the item is not valid JSON, or the agent
	// rejected it by exiting with ExitCodeValidationFailed.
	ErrorTypeValidationFailed ErrorType = "ValidationFailed"
	// ErrorTypeWorktreeError: the attempt could not be prepared: its working
	// directory or log file (step prepare_worktree), or what relay's
	// configuration must give the agent (step prepare_agent: relay runs as
	// root without agent_user, or this process does not give a variable the
	// job's agents need). The agent did not run.
	ErrorTypeWorktreeError ErrorType = "WorktreeError"
	// ErrorTypeUnknown: anything else (e.g. an error from the operating
	// system that is none of the above, or a River-discarded job relay has
	// no attempt record for).
	ErrorTypeUnknown ErrorType = "Unknown"
	// ErrorTypeStorage: relay's own database failed while recording an
	// attempt. It is the item's fault in no way, so the default policy never
	// dead-letters it; it never appears in dead_lettered_items.
	ErrorTypeStorage ErrorType = "StorageError"
)

// ExitCodeValidationFailed is the exit status with which an agent says "this
// item's data is invalid; retrying will not help" (EX_DATAERR from
// sysexits.h). relay records it as ValidationFailed and, by default,
// dead-letters the item at once.
const ExitCodeValidationFailed = 65

// ErrorTypes lists the error types an item can be dead-lettered with.
func ErrorTypes() []ErrorType {
	return []ErrorType{ErrorTypeTimeout, ErrorTypeCommandFailed, ErrorTypeResourceExhausted,
		ErrorTypeValidationFailed, ErrorTypeWorktreeError, ErrorTypeUnknown}
}

// ParseErrorType returns the error type named s (case-insensitive), or an
// error listing the valid names. StorageError is accepted too, for policies.
func ParseErrorType(s string) (ErrorType, error) {
	want := strings.TrimSpace(s)
	all := append(ErrorTypes(), ErrorTypeStorage)
	names := make([]string, len(all))
	for i, t := range all {
		if strings.EqualFold(string(t), want) {
			return t, nil
		}
		names[i] = string(t)
	}
	return "", fmt.Errorf("unknown error type %q (valid types: %s)", s, strings.Join(names, ", "))
}

// ParseErrorTypeList parses a comma-separated list of error types; "" and
// "none" are the empty list.
func ParseErrorTypeList(s string) ([]ErrorType, error) {
	if strings.TrimSpace(s) == "" || strings.EqualFold(strings.TrimSpace(s), "none") {
		return []ErrorType{}, nil
	}
	var out []ErrorType
	for _, part := range strings.Split(s, ",") {
		t, err := ParseErrorType(part)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// FailureDetail is one failed attempt: one element of
// dead_lettered_items.failure_history (and mapreduce_items.failure_history).
type FailureDetail struct {
	// AttemptNumber counts the item's attempts from 1, across `relay dlq
	// retry` and `relay mapreduce resume` runs.
	AttemptNumber int       `json:"attempt_number"`
	Timestamp     time.Time `json:"timestamp"` // when the attempt started
	ErrorType     ErrorType `json:"error_type"`
	ErrorMessage  string    `json:"error_message"`
	// ExitCode is the agent's exit status; null when it did not run or was
	// killed by relay's deadline.
	ExitCode *int `json:"exit_code"`
	// Signal names the signal that ended the agent, if one did.
	Signal string `json:"signal,omitempty"`
	// StackTrace holds the last 4 KiB of the agent's stderr (or a Go
	// trace for River-discarded jobs).
	StackTrace string `json:"stack_trace,omitempty"`
	// AgentID names the execution: worker host and River job.
	AgentID string `json:"agent_id,omitempty"`
	// StepFailed is validate_item, prepare_agent, prepare_worktree or
	// run_agent (or the River job kind for captured River jobs).
	StepFailed  string `json:"step_failed,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	LogLocation string `json:"log_location,omitempty"` // the attempt's stdout+stderr
	// WorktreePath is the attempt's working directory (kept after a failure).
	WorktreePath string `json:"worktree_path,omitempty"`
	RiverJobID   int64  `json:"river_job_id,omitempty"`
	// RiverAttempt is River's attempt number, recorded for attempts lost
	// with a killed worker (whose outcome is known only from River's
	// rescuer), so each is recorded once.
	RiverAttempt int `json:"river_attempt,omitempty"`
}
