package mapreduce_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/mapreduce"
)

func TestParseInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		ids      []string
		bad      []string
		err      string
	}{
		{name: "ndjson", in: "{\"id\":\"a\"}\n\n{\"id\":7}\n{\"x\":1}\n", ids: []string{"a", "7", "3"}},
		{name: "array", in: " [\n {\"id\":\"a\"},\n \"plain\",\n {\"id\":1.5}\n]\n", ids: []string{"a", "2", "1.5"}},
		{name: "bad lines", in: "{\"id\":\"a\"}\n{oops\n{\"id\":null}\n{\"id\":\"\"}\n{\"id\":\"a\"}\n",
			bad: []string{"line 2 (item 2): invalid JSON", "line 3 (item 3): id must be a string or a number, not null",
				"line 4 (item 4): id is empty", `line 5 (item 5): duplicate item id "a" (first on line 1)`}},
		{name: "broken array", in: "[\n{\"id\":1},\n{\"id\":\n", bad: []string{"line 3 (item 2): invalid JSON"}},
		{name: "trailing data", in: "[1]\n[2]\n", bad: []string{"unexpected data after the JSON array"}},
		{name: "empty", in: " \n\n", err: "no items"},
		{name: "empty array", in: "[]", err: "no items"},
	} {
		items, bad, err := mapreduce.ParseInput(strings.NewReader(tc.in))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		var msgs []string
		for _, b := range bad {
			msgs = append(msgs, b.Error())
		}
		for i, want := range tc.bad {
			require.Greater(t, len(msgs), i, tc.name)
			require.Contains(t, msgs[i], want, tc.name)
		}
		if len(tc.bad) > 0 {
			require.Nil(t, items, tc.name)
			continue
		}
		var ids []string
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		require.Equal(t, tc.ids, ids, tc.name)
	}
}

func FuzzParseInput(f *testing.F) {
	for _, s := range []string{"{\"id\":1}\n{}", "[{\"id\":\"a\"},2]", "[", "{\"id\":[]}", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		items, bad, err := mapreduce.ParseInput(strings.NewReader(s))
		if err == nil && len(bad) == 0 && len(items) == 0 {
			t.Fatal("no items, no errors")
		}
		seen := map[string]bool{}
		for _, it := range items {
			if it.ID == "" || seen[it.ID] {
				t.Fatalf("bad or duplicate id %q", it.ID)
			}
			seen[it.ID] = true
		}
	})
}
