package indexplans

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Unnamed pipelines statements in one round trip, each as the extended
// protocol's unnamed statement: PostgreSQL plans every execution with the
// tables' sizes at that moment, and keeps no plan for the next. A plan
// cached on a connection while a table was empty or small is kept as the
// table grows, and on such a table every index that begins with the
// repository costs the same to the planner: a lookup by (repository,
// poi_id) can be cached on (repository, name), the id in a Filter, reading
// the whole repository for each key. Statements that look keys up on such
// tables from a long-lived connection (the publisher's, in the caller's
// transaction; the linker's candidate reads) go through Unnamed. pgx's own
// QueryExecModeExec does the same, but a pgx.Batch takes its mode from the
// connection's config only, and the publisher's connection is the caller's.
type Unnamed struct {
	tm    *pgtype.Map
	batch pgconn.Batch
	steps []*Step
	err   error
}

// NewUnnamed returns an empty Unnamed that encodes arguments with tm (the
// connection's pgx.Conn.TypeMap).
func NewUnnamed(tm *pgtype.Map) *Unnamed { return &Unnamed{tm: tm} }

// Step is what a queued statement's results go to: each row's values (text
// format; valid only during the call) and its command tag.
type Step struct {
	row  func(values [][]byte) error
	exec func(tag pgconn.CommandTag)
}

// Rows sets the function each result row goes to.
func (s *Step) Rows(f func(values [][]byte) error) { s.row = f }

// Exec sets the function the statement's command tag goes to.
func (s *Step) Exec(f func(tag pgconn.CommandTag)) { s.exec = f }

// Queue adds a statement; its arguments are string (text), []string
// (text[]) or []int32 (int4[]), sent in binary.
func (b *Unnamed) Queue(sql string, args ...any) *Step {
	s := &Step{}
	b.steps = append(b.steps, s)
	params := make([][]byte, len(args))
	oids := make([]uint32, len(args))
	formats := make([]int16, len(args))
	for i, a := range args {
		switch a.(type) {
		case string:
			oids[i] = pgtype.TextOID
		case []string:
			oids[i] = pgtype.TextArrayOID
		case []int32:
			oids[i] = pgtype.Int4ArrayOID
		default:
			b.err = cmp.Or(b.err, fmt.Errorf("argument %d of an unnamed statement: unsupported type %T", i+1, a))
			continue
		}
		buf, err := b.tm.Encode(oids[i], pgtype.BinaryFormatCode, a, nil)
		if err != nil {
			b.err = cmp.Or(b.err, fmt.Errorf("encoding argument %d: %w", i+1, err))
			continue
		}
		if buf == nil {
			// An empty string encodes to nothing, and a nil parameter
			// is sent as NULL.
			buf = []byte{}
		}
		params[i], formats[i] = buf, pgtype.BinaryFormatCode
	}
	b.batch.ExecParams(sql, params, oids, formats, nil)
	return s
}

// Run sends the statements and hands each statement's results to its step. The
// first error (of the server, or of a step's function) is returned once
// every result has been read.
func (b *Unnamed) Run(ctx context.Context, conn *pgconn.PgConn) error {
	if b.err != nil {
		return b.err
	}
	mrr := conn.ExecBatch(ctx, &b.batch)
	var first error
	for i := 0; mrr.NextResult(); i++ {
		rr := mrr.ResultReader()
		s := b.steps[i]
		for rr.NextRow() {
			if s.row != nil && first == nil {
				first = s.row(rr.Values())
			}
		}
		tag, err := rr.Close()
		first = cmp.Or(first, err)
		if err == nil && s.exec != nil {
			s.exec(tag)
		}
	}
	return cmp.Or(first, mrr.Close())
}

// Int parses an integer column of a text-format result.
func Int(v []byte) (int64, error) {
	if v == nil {
		return 0, errors.New("unexpected NULL integer")
	}
	return strconv.ParseInt(string(v), 10, 64)
}
