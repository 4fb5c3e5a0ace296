package accuracy

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// TestResolve_PythonSuite scores relay on a small Python tree whose POIs
// were extracted with Python's ast (testdata/python/extract.py writes
// pois.ndjson) against the hand-written truth.json.
func TestResolve_PythonSuite(t *testing.T) {
	t.Parallel()

	f, err := os.Open("testdata/python/pois.ndjson")
	require.NoError(t, err)
	defer f.Close()
	var pois []resolver.POI
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var a outbox.Analysis
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
		for _, raw := range a.POIs {
			p, err := resolver.DecodePOI(raw)
			require.NoError(t, err)
			pois = append(pois, p)
		}
	}
	require.NoError(t, sc.Err())

	raw, err := os.ReadFile("testdata/python/truth.json")
	require.NoError(t, err)
	var truth struct{ Calls, Extends [][2]string }
	require.NoError(t, json.Unmarshal(raw, &truth))
	want := map[Edge]bool{}
	for _, e := range truth.Calls {
		want[Edge{Source: e[0], Target: e[1], Type: resolver.Calls}] = true
	}
	for _, e := range truth.Extends {
		want[Edge{Source: e[0], Target: e[1], Type: resolver.Extends}] = true
	}

	g, err := Resolve(context.Background(), pois)
	require.NoError(t, err)
	var tp int
	var fps []Edge
	for _, e := range g.Edges {
		if e.Type != resolver.Calls && e.Type != resolver.Extends {
			continue
		}
		if want[e] {
			tp++
		} else {
			fps = append(fps, e)
		}
	}
	require.Empty(t, fps, "false positives (a class must not get its methods' calls)")
	// Missed, all beyond a lexical resolver: decorators without arguments
	// (@register, @traced), a constructor call (User(name) -> __init__)
	// and u.save() with two save methods.
	require.Equal(t, len(want)-4, tp)

	// Names that are keywords in Go or Rust are Python calls.
	has := func(src, tgt string) bool {
		for _, e := range g.Edges {
			if e.Source == src && e.Target == tgt {
				return true
			}
		}
		return false
	}
	require.True(t, has("app/service.py:17:purge", "app/util.py:5:func"), "return func(key)")
	require.True(t, has("app/service.py:17:purge", "app/util.py:29:delete"))
	require.True(t, has("app/service.py:11:report", "app/util.py:13:range"))
	require.True(t, has("app/models.py:20:User", "app/util.py:33:lock"), "a class-level statement's call")
}
