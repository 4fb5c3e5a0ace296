package worker

// NameKey exposes a name's advisory lock key to the tests of package worker_test.
var NameKey = nameKey

// GlobalLinkLock exposes the global link lock's key.
const GlobalLinkLock = globalLinkLock
