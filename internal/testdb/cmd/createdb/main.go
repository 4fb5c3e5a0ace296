// Command createdb creates the database named in TEST_DATABASE_URL if it does
// not exist yet (make test runs it first), so a fresh machine needs no psql.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/relay-dev/relay/internal/testdb"
)

func main() {
	url := os.Getenv(testdb.EnvURL)
	if url == "" {
		fmt.Fprintf(os.Stderr, "createdb: %s is not set; tests will try testcontainers-go instead\n", testdb.EnvURL)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testdb.EnsureDatabase(ctx, url); err != nil {
		fmt.Fprintln(os.Stderr, "createdb:", err)
		os.Exit(1)
	}
}
