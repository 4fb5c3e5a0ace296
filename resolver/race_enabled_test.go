//go:build race

package resolver

// raceEnabled reports whether the race detector is on; it slows scanning
// tenfold or more, so timing bounds are not checked under it.
const raceEnabled = true
