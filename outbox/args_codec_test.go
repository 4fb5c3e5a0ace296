package outbox_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/outbox"
)

// fileArgs is a resolve_file job of n POIs of about 300 bytes of code each,
// like relay-bench's corpus.
func fileArgs(n int) outbox.ResolveFileArgs {
	a := outbox.ResolveFileArgs{FileID: "src/big.go", FileVersion: 3, PublishXID: 981, ChangedNames: []string{"f1"}}
	for i := range n {
		code := fmt.Sprintf("func f%d(ctx context.Context, in []byte) (int, error) {\n\tn := len(in)\n", i) +
			strings.Repeat(fmt.Sprintf("\tv, err := g%d(ctx, in[n/2:])\n\tif err != nil {\n\t\treturn n, err\n\t}\n", i%7), 2) + "}"
		raw, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("big.%d", i), "type": "function_definition",
			"name": fmt.Sprintf("f%d", i), "filePath": "src/big.go", "lineNumber": i * 10, "rawCode": code})
		a.POIs = append(a.POIs, raw)
	}
	// POIs travel as received: whitespace, key order and bad data included.
	a.POIs = append(a.POIs, json.RawMessage(`{ "name":"x",  "id": "big.ws" , "lineNumber":"twelve" }`), json.RawMessage(`42`))
	return a
}

func TestResolveFileArgs_StoresPOIsCompressedAndDecodesThemByteForByte(t *testing.T) {
	t.Parallel()
	a := fileArgs(50)
	stored, err := json.Marshal(a) // what River does on insert
	require.NoError(t, err)

	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(stored, &fields))
	require.NotContains(t, fields, "pois", "the POIs are not stored twice")
	require.Contains(t, fields, "poisZstd")
	require.JSONEq(t, "52", string(fields["poiCount"]))
	require.JSONEq(t, `"src/big.go"`, string(fields["fileId"]), "fileId stays plain JSON for SQL and River's UI")

	raw := 0
	for _, p := range a.POIs {
		raw += len(p)
	}
	require.Less(t, len(stored), raw/4, "50 POIs' args are a fraction of their JSON (%d bytes vs %d)", len(stored), raw)

	var got outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal(stored, &got)) // what River does on fetch
	require.Equal(t, a, got)
	for i := range a.POIs {
		require.Equal(t, string(a.POIs[i]), string(got.POIs[i]), "POI #%d byte for byte", i)
	}
}

func TestResolveFileArgs_ReadsTheReadableForm(t *testing.T) {
	t.Parallel()
	// Jobs enqueued before the POIs were compressed, and ExpandArgs' output.
	var got outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal([]byte(`{"fileId":"a.js","fileVersion":2,"pois":[{"id":"1"},{"id":"2"}],"part":1,"parts":2}`), &got))
	require.Equal(t, outbox.ResolveFileArgs{FileID: "a.js", FileVersion: 2, Part: 1, Parts: 2,
		POIs: []json.RawMessage{json.RawMessage(`{"id":"1"}`), json.RawMessage(`{"id":"2"}`)}}, got)

	a := fileArgs(3)
	stored, err := json.Marshal(a)
	require.NoError(t, err)
	readable, err := outbox.ExpandArgs(stored)
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(readable, &fields))
	require.NotContains(t, fields, "poisZstd")
	var pois []json.RawMessage
	require.NoError(t, json.Unmarshal(fields["pois"], &pois))
	require.Len(t, pois, 5)
	require.JSONEq(t, string(a.POIs[1]), string(pois[1]))
	require.NoError(t, json.Unmarshal(readable, &got))
	require.Len(t, got.POIs, len(a.POIs))
	for i := range a.POIs {
		require.JSONEq(t, string(a.POIs[i]), string(got.POIs[i]), "POI #%d", i)
	}
}

func TestResolveFileArgs_EmptyBatch(t *testing.T) {
	t.Parallel()
	stored, err := json.Marshal(outbox.ResolveFileArgs{FileID: "gone.js", FileVersion: 4})
	require.NoError(t, err)
	require.JSONEq(t, `{"fileId":"gone.js","fileVersion":4,"poiCount":0}`, string(stored))
	var got outbox.ResolveFileArgs
	require.NoError(t, json.Unmarshal(stored, &got))
	require.NotNil(t, got.POIs, "an empty batch decodes to an empty slice")
	require.Empty(t, got.POIs)
}

func TestResolveFileArgs_CorruptArgsNameTheFile(t *testing.T) {
	t.Parallel()
	good, err := json.Marshal(fileArgs(2))
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(good, &fields))

	for name, tc := range map[string]struct {
		field, value, want string
	}{
		"not zstd":        {"poisZstd", `"aGVsbG8gd29ybGQ="`, "decompressing"},
		"not base64":      {"poisZstd", `"%%%"`, "illegal base64"},
		"count too high":  {"poiCount", `5`, "holds 4 POIs, poiCount says 5"},
		"count too low":   {"poiCount", `1`, "holds 4 POIs, poiCount says 1"},
		"both forms":      {"pois", `[{"id":"1"}]`, "both pois and poisZstd"},
		"absurd count":    {"poiCount", `100000000`, "does not fit"},
		"negative count":  {"poiCount", `-1`, "does not fit"},
		"wrong JSON type": {"poisZstd", `12`, "cannot unmarshal number"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := map[string]json.RawMessage{}
			for k, v := range fields {
				m[k] = v
			}
			m[tc.field] = json.RawMessage(tc.value)
			bad, err := json.Marshal(m)
			require.NoError(t, err)
			var got outbox.ResolveFileArgs
			err = json.Unmarshal(bad, &got)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, `"src/big.go"`, "the error names the file")
			_, err = outbox.ExpandArgs(bad)
			require.Error(t, err)
		})
	}
}

// BenchmarkResolveFileArgs_RoundTrip is what a 50-POI job's args cost relay
// and River in Go: encoded on insert, decoded on fetch.
func BenchmarkResolveFileArgs_RoundTrip(b *testing.B) {
	a := fileArgs(50)
	var size int
	for b.Loop() {
		stored, err := json.Marshal(a)
		if err != nil {
			b.Fatal(err)
		}
		size = len(stored)
		var got outbox.ResolveFileArgs
		if err := json.Unmarshal(stored, &got); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "args-bytes")
}
