package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
)

const (
	docPath   = "../docs/configuration.md"
	beginMark = "<!-- BEGIN GENERATED: go test ./config -run TestConfigurationDoc with UPDATE_DOCS=1 -->\n"
	endMark   = "<!-- END GENERATED -->"
)

// The configuration reference cannot drift from the config struct: this test
// fails when they differ, and rewrites the table when UPDATE_DOCS=1.
func TestConfigurationDoc_MatchesSettings(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, beginMark)
	end := strings.Index(doc, endMark)
	require.True(t, start >= 0 && end > start, "%s lacks the generated-table markers", docPath)
	want := config.ReferenceMarkdown()
	got := doc[start+len(beginMark) : end]
	if got != want && os.Getenv("UPDATE_DOCS") == "1" {
		doc = doc[:start+len(beginMark)] + want + doc[end:]
		require.NoError(t, os.WriteFile(docPath, []byte(doc), 0o644))
		return
	}
	require.Equal(t, want, got, "docs/configuration.md is stale: run UPDATE_DOCS=1 go test ./config -run TestConfigurationDoc")
}
