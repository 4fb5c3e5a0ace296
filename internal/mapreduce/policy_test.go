package mapreduce_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/mapreduce"
)

func TestPolicy_Decide(t *testing.T) {
	t.Parallel()
	p := mapreduce.DefaultPolicy()
	for _, tc := range []struct {
		t            agent.ErrorType
		attempt, max int
		want         mapreduce.Decision
	}{
		{agent.ErrorTypeCommandFailed, 1, 4, mapreduce.DecisionRetry},
		{agent.ErrorTypeCommandFailed, 4, 4, mapreduce.DecisionDeadLetter},
		{agent.ErrorTypeTimeout, 3, 4, mapreduce.DecisionRetry},
		{agent.ErrorTypeValidationFailed, 1, 4, mapreduce.DecisionDeadLetter},
		{agent.ErrorTypeStorage, 9, 4, mapreduce.DecisionRetryForever},
	} {
		require.Equal(t, tc.want, p.Decide(tc.t, tc.attempt, tc.max), "%s attempt %d/%d", tc.t, tc.attempt, tc.max)
	}
	both := mapreduce.Policy{IncludeErrors: []agent.ErrorType{agent.ErrorTypeTimeout},
		ExcludeErrors: []agent.ErrorType{agent.ErrorTypeTimeout}}
	require.ErrorContains(t, both.Validate(), "both included")
	require.Equal(t, mapreduce.DecisionRetryForever, both.Decide(agent.ErrorTypeTimeout, 1, 1), "exclusion wins")

	list, err := agent.ParseErrorTypeList("timeout, CommandFailed")
	require.NoError(t, err)
	require.Equal(t, []agent.ErrorType{agent.ErrorTypeTimeout, agent.ErrorTypeCommandFailed}, list)
	_, err = agent.ParseErrorTypeList("Timeout,Nope")
	require.ErrorContains(t, err, `unknown error type "Nope"`)
}
