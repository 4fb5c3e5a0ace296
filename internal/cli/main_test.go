package cli_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine a command started
// (River clients, pools, HTTP servers) outlives the command.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
