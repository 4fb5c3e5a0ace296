package database_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/database"
	"github.com/relay-dev/relay/internal/testdb"
)

// lines is an io.Writer that hands every write to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

// A server with no free connection slot (SQLSTATE 53300: max_connections,
// or here a role's connection limit, reached by other clients) is waited
// for: Open says so and returns the pool once a slot comes free, instead
// of failing, as the relay processes beside other work on the same server
// need (relay-chaos beside a second CI run). With a negative SlotWait it
// fails at once with the server's error.
func TestOpen_WaitsForAFreeConnectionSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	role := "relay_slot_" + db.Name[len(db.Name)-12:]
	_, err := db.Pool.Exec(ctx, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN CONNECTION LIMIT 1`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := db.Pool.Exec(context.Background(), `DROP ROLE `+pgx.Identifier{role}.Sanitize())
		require.NoError(t, err)
	})
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.User(role)
	roleURL := u.String()

	held, err := pgx.Connect(ctx, roleURL) // the role's one slot, taken
	require.NoError(t, err)
	defer held.Close(ctx)

	_, err = database.Open(ctx, roleURL, database.Options{Role: "test", SlotWait: -1})
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, "53300", pgErr.Code)

	logged := make(lines, 16)
	type opened struct {
		close func()
		err   error
	}
	done := make(chan opened, 1)
	go func() {
		pool, err := database.Open(ctx, roleURL, database.Options{Role: "test", SlotWait: time.Minute,
			Logger: slog.New(slog.NewTextHandler(logged, nil))})
		if err != nil {
			done <- opened{err: err}
			return
		}
		done <- opened{close: pool.Close}
	}()
	select {
	case line := <-logged:
		require.Contains(t, line, "the server has no free connection slot")
		require.Contains(t, line, "too many connections for role")
	case o := <-done:
		t.Fatalf("Open returned before a slot came free: %v", o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("Open neither waited for a slot nor returned")
	}
	require.NoError(t, held.Close(ctx)) // the slot comes free
	select {
	case o := <-done:
		require.NoError(t, o.err)
		o.close()
	case <-time.After(30 * time.Second):
		t.Fatal("Open did not return once a slot was free")
	}
}
