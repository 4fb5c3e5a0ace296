package config

import (
	"fmt"
	"strings"
)

// ReferenceMarkdown renders the configuration reference table that
// docs/configuration.md holds; a test keeps the two identical.
func ReferenceMarkdown() string {
	var b strings.Builder
	b.WriteString("| key (config file) | environment | flag | default | meaning |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, s := range Settings() {
		def := s.Default
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | `%s` | %s |\n", s.Key, s.Env, s.Flag, def, s.Usage)
	}
	return b.String()
}
