package accuracy

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/relay-dev/relay/resolver"
)

// Counts are the true positives, false positives and false negatives of one
// kind of edge, with precision and recall.
type Counts struct {
	TP        int     `json:"tp"`
	FP        int     `json:"fp"`
	FN        int     `json:"fn"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

func (c *Counts) finish() {
	c.Precision = ratio(c.TP, c.TP+c.FP)
	c.Recall = ratio(c.TP, c.TP+c.FN)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Example is one false positive or false negative with its source line.
type Example struct {
	Kind   string `json:"kind"` // "FP" or "FN"
	Type   string `json:"type"` // "func", "method" or "extends"
	Source string `json:"source"`
	Target string `json:"target"`
	// Where is file:line of the call or embedding (for a false positive,
	// the source POI's first line naming the target); Text is that line.
	Where string `json:"where"`
	Text  string `json:"text"`
}

// Report is one tree's score.
type Report struct {
	Tree  string `json:"tree"`
	Files int    `json:"files"`
	POIs  int    `json:"pois"`
	// Calls are all CALLS edges; Func and Method split them by the
	// target's type (function_definition, method_definition).
	Calls   Counts `json:"calls"`
	Func    Counts `json:"calls_func"`
	Method  Counts `json:"calls_method"`
	Extends Counts `json:"extends"`
	// Dynamic counts relay's CALLS edges that are not in the truth but
	// whose source calls the target's name through an interface or a
	// function value: neither true nor false positives.
	Dynamic int `json:"dynamic"`
	// Excluded from the truth: calls of interface methods, of function
	// values, and recursive calls.
	InterfaceCalls int `json:"interface_calls"`
	FuncValueCalls int `json:"func_value_calls"`
	Recursion      int `json:"recursion"`
	// Unknown and Ambiguous are relay's unresolved references.
	Unknown   int `json:"unknown"`
	Ambiguous int `json:"ambiguous"`
	// PackageErrors are packages that did not type-check (their files are
	// not scored).
	PackageErrors []string  `json:"package_errors,omitempty"`
	Examples      []Example `json:"examples"`
}

// Score compares relay's graph with the truth, for the source POIs of the
// files that type-checked, keeping up to samples false positives and as
// many false negatives of each kind.
func Score(tree, root string, g *Graph, t *Truth, samples int) *Report {
	r := &Report{Tree: tree, Files: len(t.Files), InterfaceCalls: t.InterfaceCalls, FuncValueCalls: t.FuncValueCalls,
		Recursion: t.Recursion, Unknown: g.Unknown, Ambiguous: g.Ambiguous, PackageErrors: t.Errors}
	for _, p := range g.POIs {
		if t.Files[p.FilePath] {
			r.POIs++
		}
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	lines := lineCache{root: root}
	relay := map[Edge]bool{}
	var fps, fns []Example
	for _, e := range g.Edges {
		src := g.POIs[e.Source]
		if !t.Files[src.FilePath] || (e.Type != resolver.Calls && e.Type != resolver.Extends) {
			continue
		}
		relay[e] = true
		c := r.counts(e, g)
		if _, ok := t.Edges[e]; ok {
			c.TP++
			continue
		}
		tgt := g.POIs[e.Target]
		if e.Type == resolver.Calls && t.Dynamic[e.Source][tgt.Name] {
			r.Dynamic++
			continue
		}
		c.FP++
		where, text := lines.find(src, tgt.Name)
		fps = append(fps, Example{Kind: "FP", Type: kindOf(e, g), Source: e.Source, Target: e.Target, Where: where, Text: text})
	}
	for e, site := range t.Edges {
		if relay[e] {
			continue
		}
		r.counts(e, g).FN++
		rel, _ := filepath.Rel(root, site.File)
		fns = append(fns, Example{Kind: "FN", Type: kindOf(e, g), Source: e.Source, Target: e.Target,
			Where: filepath.ToSlash(rel) + ":" + strconv.Itoa(site.Line), Text: lines.line(site.File, site.Line)})
	}
	for _, c := range []*Counts{&r.Func, &r.Method} {
		r.Calls.TP += c.TP
		r.Calls.FP += c.FP
		r.Calls.FN += c.FN
	}
	for _, c := range []*Counts{&r.Calls, &r.Func, &r.Method, &r.Extends} {
		c.finish()
	}
	r.Examples = append(sample(fps, samples), sample(fns, samples)...)
	return r
}

func (r *Report) counts(e Edge, g *Graph) *Counts {
	switch kindOf(e, g) {
	case "extends":
		return &r.Extends
	case "method":
		return &r.Method
	}
	return &r.Func
}

func kindOf(e Edge, g *Graph) string {
	if e.Type == resolver.Extends {
		return "extends"
	}
	if g.POIs[e.Target].Type == resolver.TypeMethod {
		return "method"
	}
	return "func"
}

// sample returns up to n examples of each type, in a stable order spread
// over the list.
func sample(ex []Example, n int) []Example {
	slices.SortFunc(ex, func(a, b Example) int {
		return cmpString(a.Type+a.Where+a.Source+a.Target, b.Type+b.Where+b.Source+b.Target)
	})
	byType := map[string][]Example{}
	for _, e := range ex {
		byType[e.Type] = append(byType[e.Type], e)
	}
	var out []Example
	for _, typ := range []string{"func", "method", "extends"} {
		list := byType[typ]
		if len(list) <= n {
			out = append(out, list...)
			continue
		}
		for i := range n {
			out = append(out, list[i*len(list)/n])
		}
	}
	return out
}

// lineCache reads source lines for the examples.
type lineCache struct {
	root  string
	files map[string][]string
}

func (c *lineCache) line(path string, n int) string {
	if c.files == nil {
		c.files = map[string][]string{}
	}
	ls, ok := c.files[path]
	if !ok {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				ls = append(ls, sc.Text())
			}
			_ = f.Close()
		}
		c.files[path] = ls
	}
	if n < 1 || n > len(ls) {
		return ""
	}
	return strings.TrimSpace(ls[n-1])
}

// find returns the first line of POI p's code that calls or names name.
func (c *lineCache) find(p resolver.POI, name string) (where, text string) {
	code := strings.Split(p.RawCode, "\n")
	first := -1
	for i, l := range code {
		if i == 0 {
			continue // the header
		}
		if strings.Contains(l, name+"(") || strings.Contains(l, name+"[") {
			first = i
			break
		}
		if first < 0 && strings.Contains(l, name) {
			first = i
		}
	}
	if first < 0 {
		first = 0
	}
	return p.FilePath + ":" + strconv.Itoa(p.LineNumber+first), strings.TrimSpace(code[first])
}
