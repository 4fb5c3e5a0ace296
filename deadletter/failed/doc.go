// Package failed stores failed_pois, the POIs a resolve_file batch could not
// resolve (one row per POI, with its original data and a structured error),
// and reprocesses them: Reprocessor re-enqueues rows by status as
// resolve_file jobs, and the worker records each row's outcome back.
//
// failed_pois is a documented SQL contract (docs/failed_pois.md): its
// columns, views and statuses do not change without a migration and a note
// there.
package failed
