// Command relay-eval scores relay's relationships on Go source trees
// against the Go type checker: precision and recall of CALLS and EXTENDS.
// See docs/accuracy.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/relay-dev/relay/internal/accuracy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := accuracy.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
