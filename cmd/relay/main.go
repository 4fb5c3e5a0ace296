// Command relay is relay's operator CLI: migrate, publish, worker, demo.
package main

import (
	"os"

	"github.com/relay-dev/relay/internal/cli"
)

func main() {
	harden()
	lookupEnv := takeEnv()
	warnDatabaseURLFlag(os.Stderr, os.Args[1:])
	ctx, stopNow, stop := notifyInterrupts()
	code := cli.Main(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		LookupEnv: lookupEnv, StopNow: stopNow})
	stop()
	os.Exit(code)
}
