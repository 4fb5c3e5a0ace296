package database

import (
	"context"
	"log/slog"
	"time"

	"github.com/relay-dev/relay/internal/slotwait"
)

// SlotWaitDefault is how long Open and EnsureExists wait, when
// Options.SlotWait is zero, for a server that refuses a connection because
// every slot it allows is taken (slotwait.Default).
const SlotWaitDefault = slotwait.Default

// WaitForSlot runs connect until it succeeds or fails for another reason
// than a server with no free connection slot (slotwait.Wait).
func WaitForSlot(ctx context.Context, wait time.Duration, logger *slog.Logger, what string, connect func() error) error {
	return slotwait.Wait(ctx, wait, logger, what, connect)
}
