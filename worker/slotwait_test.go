package worker_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// logLines is a slog handler's writer that hands every line to a channel.
type logLines chan string

func (l logLines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

// River's client is started once the server has a free connection slot,
// not failed (SQLSTATE 53300, here a role's connection limit reached by
// other clients): RunUntilIdle says it waits, and runs to idle once the
// slots come free. This is what a relay worker started beside other work
// on a full server needs (worker.startClient).
func TestRunUntilIdle_WaitsForAFreeSlotToStartRiver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	role := "relay_slot_" + db.Name[len(db.Name)-12:]
	ident := pgx.Identifier{role}.Sanitize()
	const limit = 12
	for _, stmt := range []string{
		`CREATE ROLE ` + ident + ` LOGIN CONNECTION LIMIT 12`,
		`GRANT ALL ON SCHEMA ` + pgx.Identifier{db.Schema}.Sanitize() + ` TO ` + ident,
		`GRANT ALL ON ALL TABLES IN SCHEMA ` + pgx.Identifier{db.Schema}.Sanitize() + ` TO ` + ident,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA ` + pgx.Identifier{db.Schema}.Sanitize() + ` TO ` + ident,
	} {
		_, err := db.Pool.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t.Cleanup(func() {
		_, err := db.Pool.Exec(context.Background(), `DROP OWNED BY `+ident+`; DROP ROLE `+ident)
		require.NoError(t, err)
	})
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.User(role)

	cfg, err := pgxpool.ParseConfig(u.String())
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema
	cfg.MaxConns = limit
	pool, err := pgxpool.NewWithConfig(ctx, cfg) // connects lazily
	require.NoError(t, err)
	defer pool.Close()

	// Every slot of the role taken by other clients.
	var held []*pgx.Conn
	for range limit {
		c, err := pgx.Connect(ctx, u.String())
		require.NoError(t, err)
		held = append(held, c)
	}
	release := func() {
		for _, c := range held {
			_ = c.Close(ctx)
		}
		held = nil
	}
	defer release()

	logged := make(logLines, 64)
	wcfg := worker.ConfigFrom(db.Config())
	wcfg.Queues = []string{outbox.QueueResolve}
	w, err := worker.New(pool, wcfg, slog.New(slog.NewTextHandler(logged, nil)))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- w.RunUntilIdle(ctx, nil)
	}()
	deadline := time.After(time.Minute)
	for waiting := false; !waiting; {
		select {
		case line := <-logged:
			waiting = strings.Contains(line, "no free connection slot") && strings.Contains(line, "River's client")
		case err := <-done:
			t.Fatalf("RunUntilIdle returned while every slot was taken: %v", err)
		case <-deadline:
			t.Fatal("RunUntilIdle neither waited for a slot nor returned")
		}
	}
	release() // the slots come free
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("RunUntilIdle did not run to idle once the slots were free")
	}
}
