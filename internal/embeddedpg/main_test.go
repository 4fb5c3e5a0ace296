package embeddedpg_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine Start began (the one
// that waits for postgres) outlives Stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
