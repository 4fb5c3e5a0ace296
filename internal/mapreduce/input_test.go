package mapreduce_test

import (
	"strings"
	"testing"
	"unicode/utf8"

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
			if it.ID == "" || seen[it.ID] || len(it.ID) > mapreduce.MaxIDBytes || strings.ContainsRune(it.ID, 0) {
				t.Fatalf("bad or duplicate id %q", it.ID)
			}
			seen[it.ID] = true
			if !utf8.Valid(it.Data) {
				t.Fatalf("item %q is not UTF-8", it.ID)
			}
		}
	})
}

// What PostgreSQL cannot store is refused when the input is read, with the
// line and the reason, instead of failing the insert with a raw database
// error.
func TestParseInput_RejectsWhatPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 9000)
	for _, tc := range []struct {
		name, in, bad string
	}{
		{name: "NUL in id", in: `{"id":"a\u0000b"}`, bad: `line 1 (item 1): item holds the escape \u0000 (NUL)`},
		{name: "NUL in data", in: "{\"id\":\"a\"}\n{\"x\":[\"\\u0000\"]}", bad: `line 2 (item 2): item holds the escape \u0000`},
		{name: "lone high surrogate", in: `{"id":"\ud800"}`, bad: "line 1 (item 1): item holds a lone UTF-16 surrogate"},
		{name: "high then text", in: `{"k":"\ud800x"}`, bad: "lone UTF-16 surrogate"},
		{name: "lone low surrogate", in: `{"\udc00":1}`, bad: "lone UTF-16 surrogate"},
		{name: "two highs", in: `{"k":"\ud800\ud800"}`, bad: "lone UTF-16 surrogate"},
		{name: "invalid UTF-8", in: "{\"k\":\"\xff\"}", bad: "not valid UTF-8"},
		{name: "long id", in: `{"id":"` + long + `"}`, bad: "line 1 (item 1): id is 9000 bytes long; the maximum is 1024"},
		{name: "control character in id", in: `{"id":"a\tb"}`, bad: "id holds the control character U+0009"},
		{name: "array", in: "[\n{\"id\":\"ok\"},\n{\"id\":\"\\ud800\"}\n]", bad: "line 3 (item 2): item holds a lone UTF-16 surrogate"},
	} {
		items, bad, err := mapreduce.ParseInput(strings.NewReader(tc.in))
		require.NoError(t, err, tc.name)
		require.Nil(t, items, tc.name)
		require.Len(t, bad, 1, tc.name)
		require.Contains(t, bad[0].Error(), tc.bad, tc.name)
	}

	items, bad, err := mapreduce.ParseInput(strings.NewReader(`{"id":"` + strings.Repeat("é", 512) + `","s":"\ud83d\ude00 \\u0000 \" \\"}`))
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, items, 1, "a 1024-byte id, a surrogate pair and an escaped backslash before u0000 are fine")
}
