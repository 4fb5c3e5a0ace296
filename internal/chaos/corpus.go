package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Edge is one expected relationship.
type Edge struct {
	Source, Target, Type string
}

// Slot names one POI by its file and position, for POIs that have no usable
// id (the malformed ones are found in failed_pois this way).
type Slot struct {
	FileID string
	Index  int
}

// Corpus is a synthetic set of analyses and what relay must make of them.
type Corpus struct {
	// Lines are the NDJSON analyses, one per file.
	Lines [][]byte
	// POIs counts every POI published.
	POIs int
	// ValidIDs are the POIs that must end up in the symbol table and never
	// in failed_pois.
	ValidIDs []string
	// Malformed are the POIs the worker must dead-letter, each exactly once.
	Malformed []Slot
	// Edges are the relationships the resolver must find: each valid
	// function calls two functions of other files, each class extends a
	// class of another file.
	Edges []Edge
}

// malformedKinds are POI shapes that publish accepts and the worker
// dead-letters with error class validation.
var malformedKinds = []func(id, fileID string, line int) any{
	func(id, fileID string, _ int) any { // lineNumber of the wrong type
		return map[string]any{"id": id, "type": "function_definition", "name": "bad_" + id, "filePath": fileID, "lineNumber": "twelve"}
	},
	func(string, string, int) any { return nil }, // a null POI
	func(id, fileID string, line int) any { // no name
		return map[string]any{"id": id, "type": "function_definition", "filePath": fileID, "lineNumber": line}
	},
	func(_, fileID string, line int) any { // a number as id
		return map[string]any{"id": 1e6 + line, "type": "function_definition", "name": "n", "filePath": fileID, "lineNumber": line}
	},
	func(id, fileID string, _ int) any { // negative line
		return map[string]any{"id": id, "type": "function_definition", "name": "neg_" + id, "filePath": fileID, "lineNumber": -1}
	},
	func(id, fileID string, line int) any { // rawCode of the wrong type
		return map[string]any{"id": id, "type": "function_definition", "name": "raw_" + id, "filePath": fileID, "lineNumber": line, "rawCode": 42}
	},
}

// Generate builds a corpus of files × perFile POIs, a malformed fraction of
// them chosen at random (seeded), the rest functions (and one class in ten)
// that refer to POIs of other files.
func Generate(files, perFile int, malformed float64, seed uint64) (*Corpus, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	total := files * perFile
	c := &Corpus{POIs: total}

	nBad := int(float64(total)*malformed + 0.5)
	bad := make(map[int]bool, nBad)
	for _, i := range rng.Perm(total)[:nBad] {
		bad[i] = true
	}
	fileID := func(f int) string { return fmt.Sprintf("chaos/src/f%05d.js", f) }
	poiID := func(f, p int) string { return fmt.Sprintf("f%05d-p%04d", f, p) }
	isClass := func(g int) bool { return g%10 == 9 }

	// The targets: valid functions and valid classes, by global index.
	var funcs, classes []int
	for g := range total {
		switch {
		case bad[g]:
		case isClass(g):
			classes = append(classes, g)
		default:
			funcs = append(funcs, g)
		}
	}
	name := func(g int) string {
		if isClass(g) {
			return fmt.Sprintf("C%05d_%04d", g/perFile, g%perFile)
		}
		return fmt.Sprintf("fn_%05d_%04d", g/perFile, g%perFile)
	}
	// pick returns a target of another file than f, or -1.
	pick := func(from []int, f int, not int) int {
		for range 8 {
			if len(from) == 0 {
				return -1
			}
			t := from[rng.IntN(len(from))]
			if t/perFile != f && t != not {
				return t
			}
		}
		return -1
	}

	for f := range files {
		pois := make([]any, 0, perFile)
		for p := range perFile {
			g := f*perFile + p
			id := poiID(f, p)
			if bad[g] {
				pois = append(pois, malformedKinds[rng.IntN(len(malformedKinds))](id, fileID(f), p+1))
				c.Malformed = append(c.Malformed, Slot{FileID: fileID(f), Index: p})
				continue
			}
			c.ValidIDs = append(c.ValidIDs, id)
			var code strings.Builder
			poi := map[string]any{"id": id, "name": name(g), "filePath": fileID(f), "lineNumber": p + 1,
				"context": fmt.Sprintf("chaos corpus seed %d", seed)}
			if isClass(g) {
				poi["type"] = "class_declaration"
				fmt.Fprintf(&code, "class %s", name(g))
				if t := pick(classes, f, g); t >= 0 {
					fmt.Fprintf(&code, " extends %s", name(t))
					c.Edges = append(c.Edges, Edge{id, poiID(t/perFile, t%perFile), "EXTENDS"})
				}
				code.WriteString(" {}")
			} else {
				poi["type"] = "function_definition"
				fmt.Fprintf(&code, "function %s(x) {\n  // calls are checked: every one resolves\n  return 0", name(g))
				first := -1
				for range 2 {
					t := pick(funcs, f, g)
					if t < 0 || t == first {
						continue
					}
					first = t
					fmt.Fprintf(&code, " + %s(x)", name(t))
					c.Edges = append(c.Edges, Edge{id, poiID(t/perFile, t%perFile), "CALLS"})
				}
				code.WriteString(";\n}")
			}
			poi["rawCode"] = code.String()
			pois = append(pois, poi)
		}
		line, err := json.Marshal(map[string]any{"fileId": fileID(f), "pois": pois})
		if err != nil {
			return nil, fmt.Errorf("error encoding file %q: %w", fileID(f), err)
		}
		c.Lines = append(c.Lines, line)
	}
	return c, nil
}

// NDJSON returns the corpus as newline-delimited JSON.
func (c *Corpus) NDJSON() []byte {
	n := 0
	for _, l := range c.Lines {
		n += len(l) + 1
	}
	out := make([]byte, 0, n)
	for _, l := range c.Lines {
		out = append(out, l...)
		out = append(out, '\n')
	}
	return out
}
