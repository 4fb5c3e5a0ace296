package migrations

import (
	"cmp"
	"slices"
	"strings"
)

// DownEffect is what rolling back one migration destroys. DownEffects holds
// one for every migration; TestDownEffects_MatchDownSQL checks them against
// the SQL files' Down sections and TestDownEffects_MatchDatabase against
// what each rollback really drops, so they cannot drift.
type DownEffect struct {
	// DropsTables are the tables the rollback drops, rows and all.
	DropsTables []string `json:"drops_tables,omitempty"`
	// DropsDerivedTables are dropped tables whose rows are derived or
	// transient (counters the migration's up recomputes, heartbeats live
	// processes rewrite): dropping them loses nothing.
	DropsDerivedTables []string `json:"drops_derived_tables,omitempty"`
	// DropsColumns are the columns it drops, as "table.column".
	DropsColumns []string `json:"drops_columns,omitempty"`
	// DropsDerivedColumns are dropped columns computed from other columns
	// (generated columns): dropping them loses nothing.
	DropsDerivedColumns []string `json:"drops_derived_columns,omitempty"`
	// RebuildsColumns are derived columns the rollback drops and adds again
	// in their earlier form: listed in DropsDerivedColumns too (the SQL
	// drops them), they are there after the rollback.
	RebuildsColumns []string `json:"rebuilds_columns,omitempty"`
	// DeletesFrom are the tables it deletes rows from.
	DeletesFrom []string `json:"deletes_from,omitempty"`
	// MergesRowsOf are tables whose rows it merges: it deletes rows after
	// copying what they hold into the rows it keeps, so nothing is lost.
	MergesRowsOf []string `json:"merges_rows_of,omitempty"`
	// Note says in one line what the rollback does, for the prompt and docs.
	Note string `json:"note"`
	// Unknown marks a version this build has no entry for (applied by a
	// newer relay): it is assumed to lose data.
	Unknown bool `json:"unknown,omitempty"`
}

// LosesData reports whether the rollback destroys data that exists nowhere
// else: it drops a table (other than a derived one) or a column, or deletes
// rows. `relay migrate down` asks before running such a rollback.
func (e DownEffect) LosesData() bool {
	return e.Unknown || len(e.DropsTables)+len(e.DropsColumns)+len(e.DeletesFrom) > 0
}

// Tables returns the existing tables whose rows the rollback destroys or
// changes (dropped, or losing columns or rows), sorted, each once.
func (e DownEffect) Tables() []string {
	var out []string
	out = append(out, e.DropsTables...)
	out = append(out, e.DropsDerivedTables...)
	for _, c := range slices.Concat(e.DropsColumns, e.DropsDerivedColumns) {
		table, _, _ := strings.Cut(c, ".")
		out = append(out, table)
	}
	out = append(out, e.DeletesFrom...)
	out = append(out, e.MergesRowsOf...)
	slices.Sort(out)
	return slices.Compact(out)
}

// riverTables are the tables River's migrations 1 to RiverVersion create.
var riverTables = []string{
	"river_job", "river_leader", "river_migration", "river_notification", "river_queue",
}

// DownEffects says, per migration version, what rolling it back destroys.
// A migration added without an entry is treated as destroying data (see
// DownEffectOf), and the tests fail until it has one.
var DownEffects = map[int64]DownEffect{
	1: {
		DropsTables: riverTables,
		Note:        "removes River's tables: every queued, running, completed and discarded job",
	},
	2: {
		DropsTables: []string{"dead_letter_events", "dead_lettered_items", "failed_pois", "files",
			"poi_references", "pois", "relationships"},
		Note: "removes relay's tables: every file, POI, reference, relationship, failed POI and dead-lettered item",
	},
	3: {
		DropsColumns: []string{"failed_pois.ignored_reason", "failed_pois.manual_review_required",
			"failed_pois.reprocessed_at", "failed_pois.reprocess_requested_at", "failed_pois.reprocess_job_id"},
		Note: "drops failed_pois' triage columns and views (ignore reasons, manual-review flags, reprocess state)",
	},
	4: {
		DropsTables:        []string{"mapreduce_items", "mapreduce_jobs"},
		DropsDerivedTables: []string{"dead_lettered_item_counts"},
		DropsColumns: []string{"dead_lettered_items.updated_at", "dead_lettered_items.dead_letter_count",
			"dead_lettered_items.exit_code"},
		Note: "removes MapReduce jobs and items, and three dead_lettered_items columns",
	},
	5: {
		DropsColumns: []string{"poi_references.resolved_xmin"},
		Note:         "drops the resolution horizon stamped on each reference",
	},
	6: {
		DeletesFrom: []string{"poi_references", "relationships"},
		Note: "restores the source-side foreign keys, deleting references and relationships whose " +
			"source POI is gone (the trigger it removes keeps there being none)",
	},
	7: {
		Note: "recreates river_job's GIN index on args; no data lost",
	},
	8: {
		DropsColumns: []string{"poi_references.target_poi_id", "poi_references.target_file_id",
			"poi_references.job_id", "poi_references.resolved_at"},
		Note: "copies resolved references into a relationships table, then drops their targets from " +
			"poi_references; loses resolved_at and all but one name per (source, target, type)",
	},
	9: {
		DropsDerivedTables: []string{"failed_pois_counts"},
		Note:               "drops the failed_pois counters (migration 9's up recounts them); no data lost",
	},
	10: {
		Note: "swaps poi_references' name index back; no data lost",
	},
	11: {
		Note: "shows relationships one row per reference again (duplicate edges under different names); no data lost",
	},
	12: {
		DropsColumns: []string{"pois.symbol"},
		Note: "drops the POIs' analyzer-supplied symbols; references by symbol no longer resolve " +
			"until their targets are published again",
	},
	13: {
		DropsDerivedTables: []string{"dead_lettered_items_counts"},
		Note:               "counts dead_lettered_items per job with the row trigger again (recounted); no data lost",
	},
	14: {
		DropsDerivedTables: []string{"relay_workers"},
		Note:               "drops the live workers' heartbeats (rewritten every second; killed workers' jobs wait for River's rescuer again); no data lost",
	},
	15: {
		DropsColumns: []string{"pois.receiver"},
		Note: "drops the Go methods' receiver types; member calls on values of a known type no longer resolve " +
			"until their targets are published again",
	},
	16: {
		DropsColumns: []string{"poi_references.depends", "pois.fields", "pois.result"},
		Note: "drops the Go POIs' result and field types and the derived references' dependencies; method calls " +
			"on the values of calls and fields no longer resolve until their sources are published again",
	},
	17: {
		DropsDerivedTables: []string{"failed_pois_hourly_counts", "failed_pois_signature_counts"},
		Note:               "drops the failed_pois counts per signature and per hour (migration 17's up recounts them); no data lost",
	},
	18: {
		Note: "compares the keys of files, pois and poi_references under the database's collation again; no data lost",
	},
	19: {
		DropsDerivedColumns: []string{"poi_references.key"},
		Note: "drops the references' index keys (generated from their names): the worker reads a publish's " +
			"stale references by name again; no data lost",
	},
	20: {
		DropsColumns: []string{"mapreduce_jobs.agent_env"},
		Note: "drops the names of the variables MapReduce jobs give their agents (agent_env); " +
			"resume and retry no longer require them",
	},
	21: {
		DropsDerivedColumns: []string{"poi_references.key"},
		RebuildsColumns:     []string{"poi_references.key"},
		Note:                "computes the references' keys in SQL again (a generated column); no data lost",
	},
	22: {
		DropsTables: []string{"publish_queue", "rejected_analyses"},
		Note: "removes the SQL publish API (relay_publish, relay_publish_many): analyses it queued and not yet " +
			"published, and rejected analyses, are lost",
	},
	23: {
		DropsTables:        []string{"link_queue"},
		DropsDerivedTables: []string{"link_rounds"},
		DropsColumns:       []string{"poi_references.resolved_round"},
		Note: "removes the bulk linker's queue: references not yet linked are lost until their files are " +
			"published again; every stored reference is stamped 0, so the next publish of a name it looks up " +
			"resolves it again",
	},
	24: {
		DropsColumns: []string{"failed_pois.repository", "files.repository", "link_queue.repository",
			"poi_references.repository", "poi_references.target_repository", "pois.repository",
			"publish_queue.repository", "rejected_analyses.repository"},
		DeletesFrom: []string{"files", "link_queue", "publish_queue"},
		Note: "returns to one repository: every repository but the default one ('') loses its files and, " +
			"with them, its POIs and references, and its queued work; failed_pois and rejected_analyses keep " +
			"their rows without the repository",
	},
	25: {
		DropsDerivedColumns: []string{"failed_pois_counts.repository"},
		Note:                "failed_pois_counts counts by status and class only; no data lost",
	},
	26: {
		Note: "creates failed_pois_id_idx again; no data lost",
	},
	27: {
		Note: "publishes no longer take the per-file publish lock and the delete trigger joins by ctid again; no data lost",
	},
	28: {
		Note: "drops the graph's SQL functions (relay_callers, relay_callees, relay_dependents); no data lost",
	},
	29: {
		DropsColumns: []string{"failed_pois.file_version", "failed_pois.superseded_at", "failed_pois.superseded_reason"},
		Note: "forgets which file version each failed_pois row is of: superseded rows become ignored rows " +
			"(ignored_reason says why they were superseded), and a reprocess may again apply a row of an older version",
	},
	30: {
		DropsColumns: []string{"files.publish_xid"},
		Note:         "forgets which transaction published each file's version: a job of a deleted file may again be applied to a file created again with its version",
	},
	31: {
		Note: "relay_callers and relay_callees plan every call again; no data lost",
	},
	32: {
		DropsDerivedColumns: []string{"link_queue.lane", "link_rounds.lanes", "link_rounds.began_at", "link_rounds.locked_at"},
		MergesRowsOf:        []string{"link_queue"},
		Note:                "merges each job's link_queue rows (one per linker lane) back into one; no data lost",
	},
	33: {
		Note: "the pois delete trigger removes a deleted POI's references and clears the targets into it again; no data lost",
	},
}

// DownEffectOf returns what rolling back version destroys. A version
// without an entry (from a newer relay) is reported as losing data.
func DownEffectOf(version int64) DownEffect {
	if e, ok := DownEffects[version]; ok {
		return e
	}
	return DownEffect{Unknown: true, Note: "unknown to this relay build (applied by a newer relay?): assume it destroys data"}
}

// Rollback is one applied migration that a down would roll back.
type Rollback struct {
	Version int64      `json:"version"`
	Source  string     `json:"source"`
	Effect  DownEffect `json:"effect"`
}

// LosesData reports whether any of rs loses data.
func LosesData(rs []Rollback) bool {
	return slices.ContainsFunc(rs, func(r Rollback) bool { return r.Effect.LosesData() })
}

func sortRollbacks(rs []Rollback) {
	slices.SortFunc(rs, func(a, b Rollback) int { return cmp.Compare(b.Version, a.Version) })
}
