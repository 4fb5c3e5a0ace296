package bench

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// corpus describes a synthetic workload: files x poisPerFile Go functions and
// methods, each calling 1-3 functions of other files by a name defined once,
// so every call of a well-formed POI to a well-formed POI resolves. It is
// generated file by file, never held whole, so a corpus of millions of POIs
// costs no memory in the benchmark itself.
type corpus struct {
	files       int
	poisPerFile int
	// malformed is the fraction of the files x poisPerFile POIs that are
	// malformed (a string lineNumber): they replace well-formed POIs.
	malformed float64
	// extraMalformed, when positive, adds malformed POIs on top of the
	// well-formed ones, this fraction of the total: the well-formed POIs stay
	// exactly those of the clean corpus, so a run's extra time is the cost of
	// the failures alone.
	extraMalformed float64
	// repositories, when above 1, splits the files into this many
	// repositories of consecutive files, each calling only within itself:
	// every POI calls as many functions, and every call resolves, as in one
	// repository.
	repositories int
}

func (c corpus) base() int { return c.files * c.poisPerFile }

// isMalformed reports whether POI g (global index) is malformed: exactly
// floor(base x malformed) POIs are, spread evenly.
func (c corpus) isMalformed(g int) bool {
	return int(float64(g+1)*c.malformed) > int(float64(g)*c.malformed)
}

// extraTotal is the number of malformed POIs added on top.
func (c corpus) extraTotal() int {
	if c.extraMalformed <= 0 {
		return 0
	}
	return int(float64(c.base())*c.extraMalformed/(1-c.extraMalformed) + 0.5)
}

// extraIn is how many of the extra malformed POIs file k carries.
func (c corpus) extraIn(k int) int {
	e := c.extraTotal()
	return (k+1)*e/c.files - k*e/c.files
}

// malformedCount is the number of POIs the worker must dead-letter.
func (c corpus) malformedCount() int { return int(float64(c.base())*c.malformed) + c.extraTotal() }

func fileID(k int) string     { return fmt.Sprintf("bench/f%05d.go", k) }
func poiID(k, i int) string   { return fmt.Sprintf("f%05d.p%03d", k, i) }
func poiName(k, i int) string { return fmt.Sprintf("fn_%05d_%03d", k, i) }

// repositoryOf returns the repository of file k ("" when the corpus is one
// repository) and the first file and number of files of that repository.
func (c corpus) repositoryOf(k int) (name string, first, files int) {
	r := max(c.repositories, 1)
	j := k * r / c.files
	start := func(j int) int { return (j*c.files + r - 1) / r }
	if r > 1 {
		name = fmt.Sprintf("bench/r%02d", j)
	}
	return name, start(j), start(j+1) - start(j)
}

// calls returns the (file, poi) pairs POI i of file k calls: 1 to 3 of
// them, in other files of its repository whenever it has more than one.
func (c corpus) calls(k, i int) [][2]int {
	_, first, files := c.repositoryOf(k)
	n := 1 + (k+i)%3
	out := make([][2]int, 0, n)
	for j := range n {
		tk := (k - first + 1 + j*7 + i) % files
		if files > 1 && tk == k-first {
			tk = (tk + 1) % files
		}
		out = append(out, [2]int{first + tk, (i*3 + j) % c.poisPerFile})
	}
	return out
}

// typeOf is POI i's type: every fifth is a method, the rest functions.
func typeOf(i int) string {
	if i%5 == 4 {
		return resolver.TypeMethod
	}
	return resolver.TypeFunction
}

// code is the Go source of POI i of file k: about 300 bytes, with its calls.
func (c corpus) code(k, i int) string {
	var b strings.Builder
	name := poiName(k, i)
	if typeOf(i) == resolver.TypeMethod {
		fmt.Fprintf(&b, "func (s *service%05d) %s(ctx context.Context, in []byte) (int, error) {\n", k, name)
	} else {
		fmt.Fprintf(&b, "func %s(ctx context.Context, in []byte) (int, error) {\n", name)
	}
	fmt.Fprintf(&b, "\t// %s handles step %d of file %d; it is generated.\n\tn := len(in)\n", name, i, k)
	for _, t := range c.calls(k, i) {
		callee := poiName(t[0], t[1])
		if typeOf(t[1]) == resolver.TypeMethod {
			callee = fmt.Sprintf("(&service%05d{}).%s", t[0], callee) // a method is called on a value of its type
		}
		fmt.Fprintf(&b, "\tv, err := %s(ctx, in[n/2:])\n\tif err != nil {\n\t\treturn n, err\n\t}\n\tn += v\n", callee)
	}
	b.WriteString("\treturn n, nil\n}")
	return b.String()
}

// poiJSON is a POI as a backend service sends it; LineNumber is a string
// for a malformed one.
type poiJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	FilePath   string `json:"filePath"`
	LineNumber any    `json:"lineNumber"`
	RawCode    string `json:"rawCode"`
	Context    string `json:"context"`
}

// analysis builds file k's analysis.
func (c corpus) analysis(k int) (outbox.Analysis, error) {
	repo, _, _ := c.repositoryOf(k)
	a := outbox.Analysis{Repository: repo, FileID: fileID(k), POIs: make([]json.RawMessage, 0, c.poisPerFile+c.extraIn(k))}
	for i := range c.poisPerFile {
		var line any = i*12 + 3
		if c.isMalformed(k*c.poisPerFile + i) {
			line = "twelve" // fails structural validation in the worker
		}
		raw, err := json.Marshal(poiJSON{ID: poiID(k, i), Type: typeOf(i), Name: poiName(k, i), FilePath: fileID(k),
			LineNumber: line, RawCode: c.code(k, i)})
		if err != nil {
			return a, fmt.Errorf("error encoding POI %d of file %d: %w", i, k, err)
		}
		a.POIs = append(a.POIs, raw)
	}
	for e := range c.extraIn(k) {
		raw, err := json.Marshal(poiJSON{ID: fmt.Sprintf("f%05d.bad%03d", k, e), Type: resolver.TypeFunction,
			Name: fmt.Sprintf("bad_%05d_%03d", k, e), FilePath: fileID(k), LineNumber: "twelve", RawCode: c.code(k, e%c.poisPerFile)})
		if err != nil {
			return a, fmt.Errorf("error encoding malformed POI %d of file %d: %w", e, k, err)
		}
		a.POIs = append(a.POIs, raw)
	}
	return a, nil
}

// edges calls fn for every relationship the workload resolves to (the rows
// relay must write), for the ceiling phase.
func (c corpus) edges(fn func(src, tgt, name, srcFile, tgtFile string) error) error {
	for k := range c.files {
		for i := range c.poisPerFile {
			if c.isMalformed(k*c.poisPerFile + i) {
				continue
			}
			seen := map[[2]int]bool{}
			for _, t := range c.calls(k, i) {
				if (t == [2]int{k, i}) || seen[t] || c.isMalformed(t[0]*c.poisPerFile+t[1]) {
					continue
				}
				seen[t] = true
				if err := fn(poiID(k, i), poiID(t[0], t[1]), poiName(t[0], t[1]), fileID(k), fileID(t[0])); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
