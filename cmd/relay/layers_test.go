package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// layers is docs/design.md's picture: a package may import only packages of
// a lower layer. A package missing here fails the test, so the picture
// cannot fall behind the code.
var layers = map[string]int{
	"resolver": 0, "deadletter": 0, "internal/agent": 0, "migrations": 0, "internal/termout": 0, "internal/csvsafe": 0,
	"internal/hostile": 0, "internal/embeddedpg": 0, "internal/indexplans": 0, "internal/docexamples": 0, "internal/slotwait": 0, "internal/nearname": 0, "internal/citus": 0,
	"outbox": 1, "deadletter/items": 1, "internal/liveness": 1, "internal/graph": 1,
	"deadletter/failed": 2, "deadletter/rejected": 2, "internal/mapreduce": 2, "internal/goanalyze": 2, "internal/scipindex": 2, "worker/link": 2,
	"config": 3, "worker/resolvefile": 3, "internal/repositories": 3,
	"worker": 4, "internal/database": 4,
	"internal/ops": 5, "internal/chaos": 5, "internal/accuracy": 6, "internal/testdb": 5, "internal/pgbouncer": 4,
	"internal/console": 6, "internal/testdb/cmd/createdb": 6, "internal/testdb/cmd/serverlock": 6,
	"internal/cli": 7, "internal/bench": 7, "internal/torture": 8,
	"cmd/relay": 9, "cmd/relay-bench": 9, "cmd/relay-chaos": 9, "cmd/relay-eval": 9, "cmd/relay-torture": 9,
}

func TestLayers(t *testing.T) {
	t.Parallel()
	const module = "github.com/relay-dev/relay/"
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		require.NoError(t, dec.Decode(&p))
		name := strings.TrimPrefix(p.ImportPath, module)
		layer, ok := layers[name]
		require.True(t, ok, "package %s is not in docs/design.md's layout (and this test's layers)", name)
		for _, imp := range p.Imports {
			dep, internal := strings.CutPrefix(imp, module)
			if !internal {
				continue
			}
			require.Less(t, layers[dep], layer, "%s (layer %d) imports %s (layer %d): a package imports only lower layers",
				name, layer, dep, layers[dep])
		}
	}
}
