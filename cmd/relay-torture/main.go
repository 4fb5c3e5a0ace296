// Command relay-torture runs relay's differential torture test: random
// histories over every publish path, with held transactions, repository
// deletes, reprocess and worker kills, each compared with a fresh database
// given only each file's last committed version. See RELIABILITY.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/relay-dev/relay/internal/torture"
)

func main() {
	// Its `relay worker` processes are this binary run as relay.
	torture.MaybeRunAsRelay()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := torture.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
