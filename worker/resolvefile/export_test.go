package resolvefile

// GlobalLinkLock exposes the global link lock's key.
const GlobalLinkLock = globalLinkLock

// StampLockBase exposes the start of the stamp locks' key space: a
// referrer batch whose stamp is s holds StampLockBase + s, shared.
const StampLockBase = stampLockBase
