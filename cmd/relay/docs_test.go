package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackageDocs requires a package doc comment ("// Package x ...", or
// "// Command x ..." for a main package) on every package of the module, so
// that `go doc` tells a newcomer what each one holds.
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-json=ImportPath,Name,Doc", "github.com/relay-dev/relay/...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct{ ImportPath, Name, Doc string }
		require.NoError(t, dec.Decode(&p))
		n++
		require.NotEmpty(t, p.Doc, "package %s has no package doc comment: add one (a doc.go holding only it will do)", p.ImportPath)
	}
	require.Greater(t, n, 20, "go list found too few packages")
}
