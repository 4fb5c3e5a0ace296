package worker_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// processFields are the worker.Config fields that belong to the process
// building the Worker, not to relay's configuration.
var processFields = map[string]bool{"Queues": true, "Extensions": true, "Extract": true, "Observer": true,
	"RiverPool": true, "ID": true, "DrainLoops": true}

// Every setting the worker runs with comes from relay's configuration: a
// field added to worker.Config and neither mapped here nor named in
// processFields fails the test.
func TestConfigFrom_MapsEverySetting(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DatabaseSchema = "relay_s"
	cfg.DatabasePooler = config.PoolerTransaction

	got := worker.ConfigFrom(cfg)
	v := reflect.ValueOf(*got)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		require.Equal(t, processFields[name], v.Field(i).IsZero(), "worker.Config.%s: mapped from config.Config unless the process's", name)
	}
	require.Equal(t, &worker.Config{
		Schema:                "relay_s",
		TransactionPooler:     true,
		Concurrency:           config.WorkerConcurrencyDefault,
		POITimeout:            config.POITimeoutDefault,
		JobTimeout:            config.JobTimeoutDefault,
		ReprocessMaxAttempts:  cfg.ReprocessMaxAttempts,
		MaxAttempts:           cfg.MaxAttempts,
		RescueStuckJobsAfter:  config.RescueStuckJobsAfterDefault,
		DiscardedJobRetention: config.DiscardedJobRetentionDefault,
		SweepInterval:         config.SweepIntervalDefault,
		ShutdownTimeout:       config.ShutdownTimeoutDefault,
		FetchCooldown:         config.FetchCooldownDefault,
		FetchPollInterval:     config.FetchPollIntervalDefault,
		PublishQueueInterval:  config.PublishQueueIntervalDefault,
		LinkDelay:             config.LinkDelayDefault,
		Publish:               outbox.Config{MaxJobBytes: cfg.MaxJobBytes, MaxPOIBytes: cfg.MaxPOIBytes, MaxAttempts: cfg.MaxAttempts},
		GCPercent:             config.GCPercentDefault,
	}, got)

	got.Concurrency, got.JobTimeout = 1, time.Second
	require.Equal(t, config.WorkerConcurrencyDefault, cfg.WorkerConcurrency, "the result is the caller's own")
	require.Equal(t, config.JobTimeoutDefault, cfg.JobTimeout)
}
