package pgbouncer

import (
	"context"
	"testing"
)

// ForTest starts PgBouncer in front of serverURL for t and stops it when t
// ends. It fails t, saying how to install PgBouncer, when the binary is
// missing: a pooler test is never skipped.
func ForTest(t testing.TB, serverURL string) *Bouncer {
	t.Helper()
	b, err := Start(context.Background(), serverURL)
	if err != nil {
		t.Fatalf("error starting PgBouncer: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PgBouncer's log:\n%s", b.Output())
		}
		b.Close()
	})
	return b
}
