package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func FuzzDecodeAnalysis(f *testing.F) {
	for _, seed := range []string{
		`{"fileId":"src/math.js","pois":[{"id":"m1","type":"function_definition","name":"add","filePath":"src/math.js","lineNumber":1,"rawCode":"function add(a, b) { return a + b; }","context":""}]}`,
		`{"fileId":"a","pois":[]}`,
		`{"fileId":"a","pois":[null,42,"x",[],{}]}`,
		`{"fileId":"a","pois":null}`,
		`{"fileId":12,"pois":[]}`,
		`{"fileId":"a","pois":{}}`,
		`{"pois":[]}`,
		`[]`,
		`null`,
		`{"fileId":"a","pois":[`,
		`{"fileId":"h/\ud800.js","pois":[]}`,
		`{"fileId":"h/\ud83d\ude80.js","pois":[]}`,
		"{\"fileId\":\"h/\xff.js\",\"pois\":[]}",
		`{"fileId":"a\u0000","pois":[]}`,
		`{"fileId":"a","fileId":"b","pois":[] }  `,
		"\ufeff{\"fileId\":\"a\",\"pois\":[]}",
		`{"fileId":"'; DROP TABLE pois; --","pois":[{"id":"$(id)"}]}`,
		`{"fileId":"a","pois":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAnalysis(data)
		slow, slowErr := decodeAnalysisSteps(data)
		require.Equal(t, slowErr, err, "the one-pass decoding and the step-by-step one disagree")
		require.Equal(t, slow, a, "the one-pass decoding and the step-by-step one disagree")
		if err != nil {
			require.True(t, errors.Is(err, ErrRejected), "error does not wrap ErrRejected: %v", err)
			var re *RejectError
			require.True(t, errors.As(err, &re))
			require.NotEmpty(t, re.Reason)
			require.Equal(t, Analysis{}, a)
			return
		}
		require.True(t, utf8.ValidString(a.FileID), "fileId %q is not valid UTF-8", a.FileID)
		require.NotNil(t, a.POIs, "pois decodes to a non-nil slice")

		// A decoded analysis re-encodes, and decodes to the same analysis.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // compare the JSON as sent, not HTML-escaped
		require.NoError(t, enc.Encode(a))
		again := buf.Bytes()
		b, err := DecodeAnalysis(again)
		require.NoError(t, err, "re-encoded %s", again)
		require.Equal(t, a.FileID, b.FileID)
		require.Len(t, b.POIs, len(a.POIs))
		for i := range a.POIs {
			require.Equal(t, compact(t, a.POIs[i]), compact(t, b.POIs[i]), "poi #%d", i)
		}

		// The POIs travel in their job's args byte for byte.
		stored, err := json.Marshal(ResolveFileArgs{FileID: a.FileID, POIs: a.POIs})
		require.NoError(t, err)
		var args ResolveFileArgs
		require.NoError(t, json.Unmarshal(stored, &args))
		require.Len(t, args.POIs, len(a.POIs))
		for i := range a.POIs {
			require.Equal(t, string(a.POIs[i]), string(args.POIs[i]), "poi #%d in the job's args", i)
		}
	})
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, raw))
	return buf.String()
}

func TestContainsLoneSurrogate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{`"plain"`, false},
		{`"\ud800"`, true},
		{`"\uDC00x"`, true},
		{`"\ud83d\ude80"`, false},
		{`"\uD83D\uDE80\ud83d"`, true},
		{`"\ud83d\u0041"`, true},
		{`"\\ud800"`, false},
		{`"\\\ud800"`, true},
		{`"\u00e9\u20ac"`, false},
		{`"\ud80"`, false},
		{`"\`, false},
	} {
		require.Equal(t, tt.want, containsLoneSurrogate([]byte(tt.in)), tt.in)
	}
}

func TestDecodeAnalysis_RejectsFileIDsThatWouldBeAltered(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"{\"fileId\":\"h/\xff.js\",\"pois\":[]}", `{"fileId":"h/\udfff.js","pois":[]}`} {
		_, err := DecodeAnalysis([]byte(in))
		require.ErrorIs(t, err, ErrRejected)
		require.ErrorContains(t, err, "fileId is not valid UTF-8")
	}
	a, err := DecodeAnalysis([]byte(`{"fileId":"h/\ud83d\ude80.js","pois":[]}`))
	require.NoError(t, err)
	require.Equal(t, "h/🚀.js", a.FileID)
}
