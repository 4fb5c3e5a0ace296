package outbox_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/relay-dev/relay/internal/testdb"
)

// TestMain fails the package's tests if any goroutine they started (River
// clients, pools, HTTP servers, per-POI resolvers) outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testdb.Main(m))
}
