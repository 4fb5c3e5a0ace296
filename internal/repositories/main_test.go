package repositories_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine they started (River
// clients, pools) outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
