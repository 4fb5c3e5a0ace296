package docexamples_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine a relay command started
// (River clients, pools) outlives the command.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
