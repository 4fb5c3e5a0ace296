package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/outbox"
)

func TestDecodeAnalysis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      string
		wantErr string
		pois    int
	}{
		{"valid", `{"fileId":"a.js","pois":[{"id":"1"},{"id":"2"}]}`, "", 2},
		{"empty pois", `{"fileId":"a.js","pois":[]}`, "", 0},
		{"extra fields ignored", `{"fileId":"a.js","pois":[],"lang":"js"}`, "", 0},
		{"null POI kept for the worker", `{"fileId":"a.js","pois":[null]}`, "", 1},
		{"invalid JSON", `{"fileId":`, "invalid JSON", 0},
		{"not an object", `[1,2]`, "must be a JSON object", 0},
		{"text that is not JSON", `not json`, `not JSON (the text begins "not json"): an analysis is one JSON object`, 0},
		{"broken JSON array", `[1,`, "invalid JSON", 0},
		{"missing fileId", `{"pois":[]}`, "fileId is required", 0},
		{"null fileId", `{"fileId":null,"pois":[]}`, "fileId is required", 0},
		{"numeric fileId", `{"fileId":12,"pois":[]}`, "fileId must be a string, got 12", 0},
		{"missing pois", `{"fileId":"a.js"}`, "pois is required", 0},
		{"null pois", `{"fileId":"a.js","pois":null}`, "pois is required", 0},
		{"pois not an array", `{"fileId":"a.js","pois":{"id":"1"}}`, "pois must be an array", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := outbox.DecodeAnalysis([]byte(tc.in))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, outbox.ErrRejected)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, a.POIs, tc.pois)
		})
	}
}
