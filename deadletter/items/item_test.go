package items_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
)

func TestNewItem_SummarisesHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	three := 3
	hist := []agent.FailureDetail{
		{AttemptNumber: 1, Timestamp: t0, ErrorType: agent.ErrorTypeTimeout, ErrorMessage: "agent timed out after 2s",
			LogLocation: "/w/attempt-1.log", WorktreePath: "/w/attempt-1"},
		{AttemptNumber: 2, Timestamp: t0.Add(time.Minute), ErrorType: agent.ErrorTypeCommandFailed, ExitCode: &three,
			ErrorMessage: "agent exited with code 3: item 42 failed", DurationMS: 500,
			LogLocation: "/w/attempt-2.log", WorktreePath: "/w/attempt-2"},
	}
	it := items.NewItem("job", "42", json.RawMessage(`{"id":42}`), hist)
	require.Equal(t, 2, it.FailureCount)
	require.Equal(t, t0, it.FirstAttempt)
	require.Equal(t, t0.Add(time.Minute+500*time.Millisecond), it.LastAttempt)
	require.Equal(t, agent.ErrorTypeCommandFailed, it.ErrorType)
	require.Equal(t, 3, *it.ExitCode)
	require.Equal(t, deadletter.Signature("agent exited with code 3: item 42 failed"), it.ErrorSignature)
	require.Equal(t, &items.WorktreeArtifacts{WorktreePath: "/w/attempt-2", Kept: true,
		LogFiles: []string{"/w/attempt-1.log", "/w/attempt-2.log"}}, it.WorktreeArtifacts)
	require.True(t, it.ReprocessEligible)
	require.False(t, it.ManualReviewRequired)

	hist[1].ErrorType = agent.ErrorTypeValidationFailed
	it = items.NewItem("job", "42", nil, hist)
	require.False(t, it.ReprocessEligible, "the same data fails validation the same way")
	require.True(t, it.ManualReviewRequired)
	require.JSONEq(t, "null", string(it.ItemData))

	it = items.NewItem("job", "x", nil, nil)
	require.Equal(t, agent.ErrorTypeUnknown, it.ErrorType)
	require.Empty(t, it.FailureHistory)
}
