package indexplans_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/relay-dev/relay/internal/testdb"
)

// TestMain fails the package's tests if any goroutine they started
// outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testdb.Main(m))
}
