package indexplans_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/indexplans"
	"github.com/relay-dev/relay/internal/testdb"
)

// Unnamed sends each argument type it takes, hands every statement its own
// rows and command tag, and prepares nothing on the connection.
func TestUnnamed_RunsEachStatementWithItsArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	_, err := tx.Exec(ctx, `CREATE TEMP TABLE kv (k text, v int)`)
	require.NoError(t, err)

	b := indexplans.NewUnnamed(tx.Conn().TypeMap())
	var inserted int64
	b.Queue(`INSERT INTO kv SELECT * FROM unnest($1::text[], $2::int[])`, []string{"a", "b", "c"}, []int32{1, 2, 3}).
		Exec(func(tag pgconn.CommandTag) { inserted = tag.RowsAffected() })
	var got []string
	b.Queue(`SELECT $1 || k, v FROM kv WHERE v >= 2 ORDER BY k`, "key ").Rows(func(v [][]byte) error {
		n, err := indexplans.Int(v[1])
		got = append(got, fmt.Sprintf("%s=%d", v[0], n))
		return err
	})
	require.NoError(t, b.Run(ctx, tx.Conn().PgConn()))
	require.EqualValues(t, 3, inserted)
	require.Equal(t, []string{"key b=2", "key c=3"}, got)
	require.Zero(t, testdb.Count(t, tx, `SELECT count(*) FROM pg_prepared_statements WHERE statement ~ '\mkv\M' AND statement !~ 'pg_prepared'`))
}

// An argument of a type Unnamed does not send, a server error and an error
// of a step's function each come back from Run, and the connection stays
// usable for the next statement.
func TestUnnamed_ReportsTheFirstError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)

	b := indexplans.NewUnnamed(tx.Conn().TypeMap())
	b.Queue(`SELECT $1::bigint`, int64(1))
	require.ErrorContains(t, b.Run(ctx, tx.Conn().PgConn()), "argument 1 of an unnamed statement: unsupported type int64")

	b = indexplans.NewUnnamed(tx.Conn().TypeMap())
	b.Queue(`SELECT 'x'`).Rows(func(v [][]byte) error {
		_, err := indexplans.Int(v[0])
		return err
	})
	require.ErrorContains(t, b.Run(ctx, tx.Conn().PgConn()), `parsing "x"`)

	sp, err := tx.Begin(ctx)
	require.NoError(t, err)
	b = indexplans.NewUnnamed(sp.Conn().TypeMap())
	b.Queue(`SELECT 1 / 0`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, b.Run(ctx, sp.Conn().PgConn()), &pgErr)
	require.Equal(t, "22012", pgErr.Code)
	require.NoError(t, sp.Rollback(ctx))
	require.Equal(t, 1, testdb.Count(t, tx, `SELECT 1`))
}
