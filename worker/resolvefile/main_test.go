package resolvefile_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine they started (River
// clients, pools, HTTP servers, per-POI resolvers) outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
