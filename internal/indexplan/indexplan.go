// Package indexplan keeps PostgreSQL on index plans for a stretch of
// pipelined statements, whatever the tables' sizes were when a connection
// first planned them.
//
// relay's own statements look rows up by key sets (names, file ids, POI
// ids) in tables that grow: pois, poi_references, relationships, files.
// pgx prepares each statement once per connection, and after five
// executions PostgreSQL keeps a generic plan costed for the tables as they
// were then. A worker or publisher that starts on an empty database (a new
// deployment, or workers running while the first files are published)
// would keep sequential scans, or hash joins over them, while the tables
// grow, until the connection is recycled or autovacuum analyzes the table:
// relay-bench measured 12 ms instead of 0.4 ms per batch for the symbol
// lookup at only 15,000 POIs, growing with the corpus. Custom plans
// (plan_cache_mode) do not help on their own: on a table autovacuum has
// not analyzed yet, the default selectivities make a 100-name lookup look
// like half the table.
//
// Between Begin and End, sequential scans, hash joins and merge joins are
// disabled (enable_* = off: the planner uses them only when nothing else
// can run the statement), so every plan relay caches is index probes
// driven by the key set, which is right for any table size. JIT is off
// too: on a table autovacuum has not analyzed, a lookup's estimated cost
// can pass jit_above_cost, and compiling took 40-90 ms of a statement that
// then ran in 0.03 ms. And plans are generic (plan_cache_mode =
// force_generic_plan): planned once per connection and reused, since an
// index plan does not depend on the parameters' values. Left to choose,
// PostgreSQL planned River's completion of a job afresh on every execution
// (0.38 ms of planning per job, more than running it).
//
// The worker runs its whole batch transaction this way, River's completion
// of the job included: River's JobSetStateIfRunningMany joins river_job to
// the job ids, and a connection that cached its plan while river_job was
// small kept a sequential scan of river_job for every completion (1.2 ms per
// job in relay-bench's concurrent run, growing with the table; River's
// cleaner keeps completed jobs a day). relay does not wrap River's other
// statements (its fetch, its inserts) this way.
package indexplan

import "github.com/jackc/pgx/v5"

// Begin queues the switch to index plans for the statements queued after
// it, remembering the transaction's settings for End.
func Begin(b *pgx.Batch) {
	b.Queue(BeginSQL)
}

// BeginSQL is the statement Begin queues. It takes no parameters.
const BeginSQL = `SELECT
		set_config('relay.saved_enable_seqscan', current_setting('enable_seqscan'), true),
		set_config('relay.saved_enable_hashjoin', current_setting('enable_hashjoin'), true),
		set_config('relay.saved_enable_mergejoin', current_setting('enable_mergejoin'), true),
		set_config('relay.saved_jit', current_setting('jit'), true),
		set_config('relay.saved_plan_cache_mode', current_setting('plan_cache_mode'), true),
		set_config('plan_cache_mode', 'force_generic_plan', true),
		set_config('enable_seqscan', 'off', true),
		set_config('enable_hashjoin', 'off', true),
		set_config('enable_mergejoin', 'off', true),
		set_config('jit', 'off', true)`

// TxSQL switches the rest of a transaction to index plans, for a
// transaction that ends with them (no End): SET LOCAL statements, cheaper
// than Begin's (nothing to save), and without parameters, so they can ride
// with BEGIN in one simple-protocol query.
const TxSQL = `SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off; ` +
	`SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL jit = off`

// TxSetSQL makes the settings of TxSQL in one statement, for a pipelined
// batch (whose queries are prepared statements: one command each).
const TxSetSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), ` +
	`set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true), ` +
	`set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)`

// End queues the return to the settings Begin found.
func End(b *pgx.Batch) {
	b.Queue(`SELECT
		set_config('enable_seqscan', current_setting('relay.saved_enable_seqscan'), true),
		set_config('enable_hashjoin', current_setting('relay.saved_enable_hashjoin'), true),
		set_config('enable_mergejoin', current_setting('relay.saved_enable_mergejoin'), true),
		set_config('jit', current_setting('relay.saved_jit'), true),
		set_config('plan_cache_mode', current_setting('relay.saved_plan_cache_mode'), true)`)
}
