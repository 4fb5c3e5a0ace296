package deadletter_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter"
)

func TestPolicy_Decide(t *testing.T) {
	t.Parallel()
	p := deadletter.DefaultPolicy()
	for _, tc := range []struct {
		t            deadletter.ErrorType
		attempt, max int
		want         deadletter.Decision
	}{
		{deadletter.ErrorTypeCommandFailed, 1, 4, deadletter.DecisionRetry},
		{deadletter.ErrorTypeCommandFailed, 4, 4, deadletter.DecisionDeadLetter},
		{deadletter.ErrorTypeTimeout, 3, 4, deadletter.DecisionRetry},
		{deadletter.ErrorTypeValidationFailed, 1, 4, deadletter.DecisionDeadLetter},
		{deadletter.ErrorTypeStorage, 9, 4, deadletter.DecisionRetryForever},
	} {
		require.Equal(t, tc.want, p.Decide(tc.t, tc.attempt, tc.max), "%s attempt %d/%d", tc.t, tc.attempt, tc.max)
	}
	both := deadletter.Policy{IncludeErrors: []deadletter.ErrorType{deadletter.ErrorTypeTimeout},
		ExcludeErrors: []deadletter.ErrorType{deadletter.ErrorTypeTimeout}}
	require.ErrorContains(t, both.Validate(), "both included")
	require.Equal(t, deadletter.DecisionRetryForever, both.Decide(deadletter.ErrorTypeTimeout, 1, 1), "exclusion wins")

	list, err := deadletter.ParseErrorTypeList("timeout, CommandFailed")
	require.NoError(t, err)
	require.Equal(t, []deadletter.ErrorType{deadletter.ErrorTypeTimeout, deadletter.ErrorTypeCommandFailed}, list)
	_, err = deadletter.ParseErrorTypeList("Timeout,Nope")
	require.ErrorContains(t, err, `unknown error type "Nope"`)
}

func TestNewDeadLetteredItem_SummarisesHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	three := 3
	hist := []deadletter.FailureDetail{
		{AttemptNumber: 1, Timestamp: t0, ErrorType: deadletter.ErrorTypeTimeout, ErrorMessage: "agent timed out after 2s",
			LogLocation: "/w/attempt-1.log", WorktreePath: "/w/attempt-1"},
		{AttemptNumber: 2, Timestamp: t0.Add(time.Minute), ErrorType: deadletter.ErrorTypeCommandFailed, ExitCode: &three,
			ErrorMessage: "agent exited with code 3: item 42 failed", DurationMS: 500,
			LogLocation: "/w/attempt-2.log", WorktreePath: "/w/attempt-2"},
	}
	it := deadletter.NewDeadLetteredItem("job", "42", json.RawMessage(`{"id":42}`), hist)
	require.Equal(t, 2, it.FailureCount)
	require.Equal(t, t0, it.FirstAttempt)
	require.Equal(t, t0.Add(time.Minute+500*time.Millisecond), it.LastAttempt)
	require.Equal(t, deadletter.ErrorTypeCommandFailed, it.ErrorType)
	require.Equal(t, 3, *it.ExitCode)
	require.Equal(t, deadletter.Signature("agent exited with code 3: item 42 failed"), it.ErrorSignature)
	require.Equal(t, &deadletter.WorktreeArtifacts{WorktreePath: "/w/attempt-2", Kept: true,
		LogFiles: []string{"/w/attempt-1.log", "/w/attempt-2.log"}}, it.WorktreeArtifacts)
	require.True(t, it.ReprocessEligible)
	require.False(t, it.ManualReviewRequired)

	hist[1].ErrorType = deadletter.ErrorTypeValidationFailed
	it = deadletter.NewDeadLetteredItem("job", "42", nil, hist)
	require.False(t, it.ReprocessEligible, "the same data fails validation the same way")
	require.True(t, it.ManualReviewRequired)
	require.JSONEq(t, "null", string(it.ItemData))

	it = deadletter.NewDeadLetteredItem("job", "x", nil, nil)
	require.Equal(t, deadletter.ErrorTypeUnknown, it.ErrorType)
	require.Empty(t, it.FailureHistory)
}
