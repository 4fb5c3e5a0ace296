package worker

// GlobalLinkLock exposes the global link lock's key.
const GlobalLinkLock = globalLinkLock

// BatchLockSpace and BatchMarker expose a batch's own lock's first key and
// the application_name prefix that shows its stamp.
const (
	BatchLockSpace = batchLockSpace
	BatchMarker    = batchMarker
)
