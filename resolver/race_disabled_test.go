//go:build !race

package resolver

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
