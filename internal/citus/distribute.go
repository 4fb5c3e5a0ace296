// Package citus distributes relay's tables on a Citus coordinator
// (docs/citus.md): the tables that hold a repository's data are distributed,
// and co-located, by repository; River's tables and relay's coordination
// tables stay local to the coordinator. Plain PostgreSQL needs none of it.
//
// Beside the Go code are the scripts behind the Makefile's citus targets:
// build.sh builds and installs Citus, cluster.sh runs relay's own cluster
// of a coordinator and two worker nodes.
package citus

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Column is the distribution column of every distributed table.
const Column = "repository"

// Tables are the tables distributed by repository, in the order they are
// distributed: files first, the table the others are co-located with
// (pois has a foreign key to it).
var Tables = []string{"files", "pois", "poi_references", "link_queue", "publish_queue", "failed_pois", "rejected_analyses"}

// ErrNotCitus is returned by Distribute on a database without the citus
// extension.
var ErrNotCitus = errors.New("the database has no citus extension: relay migrate distribute runs on a Citus coordinator " +
	"(CREATE EXTENSION citus); on plain PostgreSQL relay needs nothing more than relay migrate up")

// Action is what Distribute did to a table.
type Action string

const (
	// Distributed: the table was distributed by repository now.
	Distributed Action = "distributed"
	// AlreadyDistributed: the table was distributed by repository, co-located
	// with files, and was left alone.
	AlreadyDistributed Action = "already distributed"
)

// Table is one table's outcome.
type Table struct {
	Name   string `json:"table"`
	Action Action `json:"action"`
	// ColocateWith is the table it shares shards with ("" for files).
	ColocateWith string `json:"colocate_with,omitempty"`
	// Shards is the table's number of shards.
	Shards int `json:"shards"`
	// DroppedTriggers are the triggers Distribute dropped from the table
	// (CountsTriggers, of failed_pois).
	DroppedTriggers []string `json:"dropped_triggers,omitempty"`
}

// CountsTriggers are failed_pois's statement triggers that keep
// failed_pois_counts, failed_pois_signature_counts and
// failed_pois_hourly_counts (migrations 9, 17 and 25). Distribute drops them:
// on a distributed table a trigger runs on the worker node that holds the
// shard, where those coordinator tables do not exist, so every write to
// failed_pois would fail. relay's readers count failed_pois's rows instead
// on a distributed database (TablesDistributed), a query Citus runs on every
// shard in parallel; the counts tables stay, emptied, so that no reader
// finds counts that are no longer kept, and a later migration that names
// them (or replaces the trigger functions, which stay too) runs on both
// kinds of database.
var CountsTriggers = []string{
	"failed_pois_count_insert", "failed_pois_count_update", "failed_pois_count_delete", "failed_pois_count_truncate",
	"failed_pois_summary_insert", "failed_pois_summary_update", "failed_pois_summary_delete", "failed_pois_summary_truncate",
}

// countsTable is the table CountsTriggers are on, countsTables the tables
// they keep.
var (
	countsTable  = "failed_pois"
	countsTables = []string{"failed_pois_counts", "failed_pois_signature_counts", "failed_pois_hourly_counts"}
)

// Report is what Distribute did.
type Report struct {
	// CitusVersion is the Citus release ("Citus 13.2.2").
	CitusVersion string `json:"citus_version"`
	// Workers is the number of worker nodes with shards, the coordinator
	// included when it holds shards.
	Workers int     `json:"nodes_with_shards"`
	Tables  []Table `json:"tables"`
}

// Distribute distributes each of Tables (found through the pool's
// search_path) by repository, co-located with files, and leaves alone a
// table already distributed that way: running it again changes nothing. A
// table distributed any other way (a reference table, another column, other
// co-location) is an error, and nothing after it is distributed. Tables
// already distributed keep their rows; a table distributed now has its rows
// copied to the shards by Citus.
//
// pois and failed_pois have triggers, which Citus distributes only with
// citus.enable_unsafe_triggers on: Distribute sets it in the transaction that
// distributes a table, and disables the table's triggers while its rows are
// copied into the shards. failed_pois's counts triggers (CountsTriggers) are
// dropped, and the counts tables emptied, in the transaction that
// distributes it, or in one of their own when it already is: the counts are
// not kept on a distributed database.
func Distribute(ctx context.Context, pool *pgxpool.Pool) (Report, error) {
	var rep Report
	var err error
	if rep.CitusVersion, err = Version(ctx, pool); err != nil {
		return rep, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_dist_node WHERE shouldhaveshards AND isactive AND noderole = 'primary'`).
		Scan(&rep.Workers); err != nil {
		return rep, fmt.Errorf("error counting Citus's nodes: %w", err)
	}
	anchor := pgx.Identifier{Tables[0]}.Sanitize()
	for _, name := range Tables {
		ident := pgx.Identifier{name}.Sanitize()
		t := Table{Name: name}
		if name != Tables[0] {
			t.ColocateWith = Tables[0]
		}
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ident).Scan(&exists); err != nil {
			return rep, fmt.Errorf("error looking up table %s: %w", name, err)
		}
		if !exists {
			return rep, fmt.Errorf("table %s does not exist in the search path: run relay migrate up first", name)
		}
		var method, column *string
		var colocated bool
		err := pool.QueryRow(ctx, `
			SELECT p.partmethod::text, column_to_column_name(p.logicalrelid, p.partkey),
			       p.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = $2::regclass)
			FROM pg_dist_partition p WHERE p.logicalrelid = $1::regclass`, ident, anchor).Scan(&method, &column, &colocated)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL citus.enable_unsafe_triggers = on`); err != nil {
					return err
				}
				// The rows copied into the shards were counted when
				// they were written: the counts triggers must not count
				// them again (nor run on a worker node, which has no
				// counts tables).
				if name == countsTable {
					dropped, err := dropCountsTriggers(ctx, tx)
					if err != nil {
						return err
					}
					t.DroppedTriggers = dropped
				}
				if _, err := tx.Exec(ctx, `ALTER TABLE `+ident+` DISABLE TRIGGER USER`); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `SELECT create_distributed_table($1::regclass, $2, colocate_with => $3)`, ident, Column, colocateWith(t)); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `ALTER TABLE `+ident+` ENABLE TRIGGER USER`)
				return err
			}); err != nil {
				return rep, fmt.Errorf("error distributing %s by %s: %w", name, Column, err)
			}
			t.Action = Distributed
		case err != nil:
			return rep, fmt.Errorf("error reading how %s is distributed: %w", name, err)
		case method == nil || *method != "h" || column == nil || *column != Column || !colocated:
			return rep, fmt.Errorf("table %s is already distributed, but not by %s co-located with %s (method %s, column %s): "+
				"undistribute it (undistribute_table) and run relay migrate distribute again", name, Column, Tables[0], deref(method), deref(column))
		default:
			t.Action = AlreadyDistributed
			if name == countsTable {
				if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					dropped, err := dropCountsTriggers(ctx, tx)
					t.DroppedTriggers = dropped
					return err
				}); err != nil {
					return rep, fmt.Errorf("error dropping the counts triggers of %s: %w", name, err)
				}
			}
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = $1::regclass`, ident).Scan(&t.Shards); err != nil {
			return rep, fmt.Errorf("error counting the shards of %s: %w", name, err)
		}
		rep.Tables = append(rep.Tables, t)
	}
	return rep, nil
}

// Version returns the Citus release of the database (citus_version()'s
// first words, "Citus 13.2.2"), or ErrNotCitus when it has no citus
// extension.
func Version(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var has bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&has); err != nil {
		return "", fmt.Errorf("error looking for the citus extension: %w", err)
	}
	if !has {
		return "", ErrNotCitus
	}
	var v string
	if err := pool.QueryRow(ctx, `SELECT split_part(citus_version(), ' on ', 1)`).Scan(&v); err != nil {
		return "", fmt.Errorf("error reading citus_version(): %w", err)
	}
	return v, nil
}

// dropCountsTriggers drops those of CountsTriggers that failed_pois has,
// empties the counts tables when it dropped any, and returns the names it
// dropped.
func dropCountsTriggers(ctx context.Context, tx pgx.Tx) ([]string, error) {
	var names []string
	if err := tx.QueryRow(ctx, `
		SELECT coalesce(array_agg(tgname::text ORDER BY array_position($2::text[], tgname::text)), '{}')
		FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = ANY($2)`,
		pgx.Identifier{countsTable}.Sanitize(), CountsTriggers).Scan(&names); err != nil {
		return nil, fmt.Errorf("error looking up the counts triggers of %s: %w", countsTable, err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, `DROP TRIGGER `+pgx.Identifier{n}.Sanitize()+` ON `+pgx.Identifier{countsTable}.Sanitize()); err != nil {
			return nil, fmt.Errorf("error dropping trigger %s: %w", n, err)
		}
	}
	for _, c := range countsTables {
		if _, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{c}.Sanitize()); err != nil {
			return nil, fmt.Errorf("error emptying %s: %w", c, err)
		}
	}
	return names, nil
}

// colocateWith is create_distributed_table's colocate_with for t: 'default'
// for the first table (Citus's default co-location group of its column
// type), the first table for the others.
func colocateWith(t Table) string {
	if t.ColocateWith == "" {
		return "default"
	}
	return pgx.Identifier{t.ColocateWith}.Sanitize()
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
