package mapreduce_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/mapreduce"
)

// riverQueueName is River's rule for queue names (river's validateQueueName).
var riverQueueName = regexp.MustCompile(`^(?:[a-z0-9])+(?:[_|\-]?[a-z0-9]+)*$`)

func TestWaitQueue_IsAValidDistinctRiverQueue(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, id := range []string{"mr-20260121-142530-3fa2", "MR-20260121-142530-3FA2", "a", "9..__--x", "A.B", "a_b",
		strings.Repeat("Z", 128), strings.Repeat("z", 127) + "y"} {
		q := mapreduce.WaitQueue(id)
		require.LessOrEqual(t, len(q), 64, q)
		require.Regexp(t, riverQueueName, q)
		require.True(t, strings.HasPrefix(q, "mapreduce_wait_"), q)
		require.NotEqual(t, mapreduce.Queue, q)
		if other, dup := seen[q]; dup {
			t.Fatalf("jobs %q and %q share queue %q", other, id, q)
		}
		seen[q] = id
	}
	require.True(t, strings.HasPrefix(mapreduce.WaitQueue("mr-20260121-142530-3fa2"), "mapreduce_wait_mr_20260121_142530_3fa2_"), "readable")
}
