package workerconfig_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/workerconfig"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// Every setting the worker runs with comes from relay's configuration: a
// field added to worker.Config and not mapped here fails the test.
func TestFrom_MapsEverySetting(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DatabaseSchema = "relay_s"
	cfg.DatabasePooler = config.PoolerTransaction
	cfg.MapReduceWorkdir = "/var/lib/relay/mapreduce"
	cfg.AgentUser = "relay-agent"

	got := workerconfig.From(cfg)
	v := reflect.ValueOf(*got)
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsZero(), "worker.Config.%s is not mapped from config.Config", v.Type().Field(i).Name)
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
		MapReduceParallel:     config.MapReduceParallelDefault,
		MapReduceWorkdir:      "/var/lib/relay/mapreduce",
		AgentUser:             "relay-agent",
		GCPercent:             config.GCPercentDefault,
	}, got)

	got.Concurrency, got.JobTimeout = 1, time.Second
	require.Equal(t, config.WorkerConcurrencyDefault, cfg.WorkerConcurrency, "the result is the caller's own")
	require.Equal(t, config.JobTimeoutDefault, cfg.JobTimeout)
}
