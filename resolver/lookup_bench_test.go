package resolver

import (
	"fmt"
	"testing"
)

// BenchmarkLookup_CommonName looks up a name with as many definitions as
// String has in the Go standard library (about 2,000 methods).
func BenchmarkLookup_CommonName(b *testing.B) {
	cands := make([]Candidate, 2000)
	for i := range cands {
		cands[i] = Candidate{POIID: fmt.Sprintf("p%d", i), FileID: fmt.Sprintf("f%d.go", i/3), Name: "String", Type: TypeMethod}
	}
	ref := Reference{Name: "String", Type: Calls}
	for b.Loop() {
		Lookup("src", "f5000.go", ref, cands)
	}
}
