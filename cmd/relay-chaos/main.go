// Command relay-chaos runs relay's fault-injection scenarios (SIGKILL,
// scale-out, PostgreSQL restart, SIGTERM, an unwritable failed_pois) against
// throwaway databases and prints what held. See RELIABILITY.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/relay-dev/relay/internal/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := chaos.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
