// Command serverlock runs a command while holding the test server of
// TEST_DATABASE_URL (testdb.HoldServer): a second test run on the same
// server waits for the first instead of running it out of connections.
// .ci/run wraps its database phases in it:
//
//	go run ./internal/testdb/cmd/serverlock -- make test
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/relay-dev/relay/internal/testdb"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: serverlock -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	if url := os.Getenv(testdb.EnvURL); url != "" {
		release, err := testdb.HoldServer(context.Background(), url, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "serverlock:", err)
			os.Exit(1)
		}
		defer release()
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "serverlock:", err)
		os.Exit(1)
	}
}
