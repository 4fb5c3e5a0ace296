package agent

// FailureDetail converts a failed attempt's outcome into its failure_history
// entry; ok is false for a successful attempt, which has none. It is pure:
// everything comes from its arguments.
func FailureOf(o *Outcome, attempt int, agentID string, riverJobID int64) (d FailureDetail, ok bool) {
	if o == nil || o.Succeeded {
		return FailureDetail{}, false
	}
	t := o.ErrorType
	if t == "" {
		t = ErrorTypeUnknown
	}
	d = FailureDetail{
		AttemptNumber: attempt,
		Timestamp:     o.StartedAt,
		ErrorType:     t,
		ErrorMessage:  o.Message,
		Signal:        o.Signal,
		StackTrace:    o.StderrTail,
		AgentID:       agentID,
		StepFailed:    o.Step,
		DurationMS:    o.Duration.Milliseconds(),
		LogLocation:   o.LogPath,
		RiverJobID:    riverJobID,
	}
	if o.ExitCode != nil {
		code := *o.ExitCode
		d.ExitCode = &code
	}
	if o.WorkdirKept {
		d.WorktreePath = o.Workdir
	}
	return d, true
}
