// Package items stores dead_lettered_items, the MapReduce work items that
// exhausted their retries (and River jobs River discarded), each with its
// full per-attempt failure history, a normalized error signature, capacity
// limits per job and an audit trail (docs/dead_lettered_items.md).
package items
