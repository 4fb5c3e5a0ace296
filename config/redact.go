package config

import (
	"regexp"
)

var (
	// userinfo password in a URL: scheme://user:secret@host
	urlPasswordRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s]*):[^@/?#\s]*@`)
	// keyword/value connection strings: password=secret or password='se cret'
	kvPasswordRE = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]+)`)
)

// Redact returns s with every password it holds replaced by "xxxxx": the
// userinfo password of any URL in s and password=... pairs of keyword/value
// connection strings. Use it on anything that might carry a database URL
// before it reaches a log line, an error or --help.
func Redact(s string) string {
	s = urlPasswordRE.ReplaceAllString(s, "${1}:xxxxx@")
	return kvPasswordRE.ReplaceAllString(s, "${1}xxxxx")
}
