package database_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker/link"
)

// A worker's pool holds a connection per batch it runs at once plus
// River's own; pgx's default (max(4, NumCPU)) would starve the batches.
func TestOptionsFromConfig_PoolFitsTheWorkersAndRiver(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	for _, n := range []int{1, 8, 50} {
		cfg.WorkerConcurrency = n
		opts := database.OptionsFromConfig(cfg, "worker")
		// River 4, a link job per lane, the heartbeat 1, --until-idle's
		// queue reads 1, the drain loops.
		require.EqualValues(t, n+4+link.Lanes+1+1+outbox.DrainLoopsDefault, opts.MaxConns, "worker_concurrency %d", n)
		require.Equal(t, "worker", opts.Role)
	}
}
