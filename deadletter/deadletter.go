package deadletter

import (
	"os/user"
	"strings"
)

// WorkerActor is the actor of events the worker writes.
const WorkerActor = "relay-worker"

// DefaultActor is the name of the operating-system user running relay, for
// audit events ("unknown" when it cannot be found).
func DefaultActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// Text makes error text storable in a text column: invalid UTF-8 and NUL
// characters (which PostgreSQL rejects) become U+FFFD. Only error messages
// pass through here; POI and item data are never altered.
func Text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// exportPage is how many rows an export reads per query.
const exportPage = 2000

// ExportPageSize is how many rows the next page of an export with limit (0:
// none) reads after n rows: 0 when the export is done.
func ExportPageSize(limit, n int64) int64 {
	if limit > 0 {
		return max(min(exportPage, limit-n), 0)
	}
	return exportPage
}
