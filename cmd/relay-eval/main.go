// Command relay-eval scores relay's relationships on Go source trees
// against the Go type checker: precision and recall of CALLS and EXTENDS.
// See docs/accuracy.md. With --pycg DIR it scores relay's Python CALLS on
// PyCG's micro-benchmark (DIR is micro-benchmark/snippets of
// github.com/vitsalis/PyCG), published through the outbox and worker into
// throwaway databases on --database-url's server: a database per case, one
// database with ids prefixed by case, and one with a repository per case.
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
