package torture

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The test binary is also the `relay worker` process a history kills.
	MaybeRunAsRelay()
	os.Exit(m.Run())
}
