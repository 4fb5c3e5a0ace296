// Command relay is relay's operator CLI: migrate, publish, worker, demo.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/relay-dev/relay/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
