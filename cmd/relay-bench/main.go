// Command relay-bench measures relay against PostgreSQL's write ceiling and
// the one-job-per-POI design. See BENCHMARKS.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/relay-dev/relay/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
