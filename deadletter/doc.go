// Package deadletter holds what relay's dead-letter tables share: the
// error signature that groups failures by cause (Signature), the audit
// actors and events (Event, CollectEvents), the storable form of error text
// (StorableText), failures per hour (HourCount), export paging
// (ExportPageSize) and the folding of their count tables (CompactCounts).
// The tables themselves have a package each:
//
//   - deadletter/failed: failed_pois, one row per POI the worker could not
//     resolve, and the reprocessor that re-enqueues them;
//   - deadletter/items: dead_lettered_items, one row per MapReduce work
//     item that exhausted its retries, with its attempt history;
//   - deadletter/rejected: rejected_analyses, one row per analysis queued
//     through the SQL publish API that the publisher rejected.
package deadletter
