package outbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/outbox"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	poi := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	for _, tc := range []struct {
		name  string
		sizes []int
		max   int
		want  []int
	}{
		{"empty file: one empty part", nil, 100, []int{0}},
		{"all fit", []int{10, 10, 10}, 100, []int{3}},
		{"exactly at the limit with separators", []int{49, 49}, 100, []int{2}},
		{"one byte over", []int{50, 50}, 100, []int{1, 2}},
		{"an oversized POI is a part of its own", []int{10, 500, 10}, 100, []int{1, 2, 3}},
		{"oversized first", []int{500, 10}, 100, []int{1, 2}},
	} {
		pois := make([]json.RawMessage, len(tc.sizes))
		for i, n := range tc.sizes {
			pois[i] = poi(n)
		}
		require.Equal(t, tc.want, outbox.Split(pois, tc.max), tc.name)
	}
}
