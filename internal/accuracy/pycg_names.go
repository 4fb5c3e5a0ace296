package accuracy

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/relay-dev/relay/resolver"
)

// The names PyCG's and SWARM-CG's call graphs give the functions that a
// SCIP symbol does not name as they do. Both name a function by its
// lexical scope: the module, then each enclosing class or function
// ("main.MyClass.func.nested" for nested() defined in method func), and
// SWARM-CG an arrow function by its position among the arrow functions
// of its scope ("main.<arrow1>" for `const x = (y) => y + 1`, the first
// arrow of the module; "main.func.<arrow1>" for the first inside func),
// whatever name it is bound to. scip-typescript gives a nested function a
// document-local symbol, which names nothing, and scip-python gives one
// nested in a method the class's name only (`main`/MyClass#nested().).

// arrowValue matches the text after the name of a POI whose value is an
// arrow function: `= (…) =>`, `= x =>`, `= async (…) =>`.
var arrowValue = regexp.MustCompile(`^\s*(?::[^=\n]*)?=\s*(?:async\s+)?(?:\([^()]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=\n]*)?=>`)

// scopedPOI is a POI of one file with its byte extents.
type scopedPOI struct {
	p         resolver.POI
	name      int // the offset of its name
	start     int // its rawCode's extent
	end       int
	arrow     int // the offset of its "=>" when its value is an arrow function, else -1
	enclosing *scopedPOI
}

// nameByScope sets c.Names for the POIs of c's files (their sources under
// root) that lie in a function or method POI, and (JavaScript) for those
// whose value is an arrow function, as the call graphs name them (see
// above). Every other POI keeps its name.
func nameByScope(c *PyCGCase, root string) error {
	byFile := map[string][]*scopedPOI{}
	for _, p := range c.POIs {
		if p.Type == resolver.TypeImport || p.ID == p.FilePath+":1:" {
			continue // imports, and the module's own POI
		}
		byFile[p.FilePath] = append(byFile[p.FilePath], &scopedPOI{p: p})
	}
	for file, pois := range byFile {
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return fmt.Errorf("error reading %s of case %s: %w", file, c.Name, err)
		}
		text := string(raw)
		js := !resolver.IsPython(file)
		for _, s := range pois {
			s.locate(text, js)
		}
		// Outer first: by start, then the larger first.
		slices.SortFunc(pois, func(a, b *scopedPOI) int {
			return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end), cmp.Compare(a.p.ID, b.p.ID))
		})
		for i, s := range pois {
			for j := i - 1; j >= 0; j-- {
				if o := pois[j]; o.start <= s.name && s.name < o.end && o.end >= s.end {
					s.enclosing = o
					break
				}
			}
		}
		var arrows []int
		if js {
			arrows = arrowOffsets(text)
		}
		// scopeOf is the innermost function or method holding offset off,
		// other than self: an arrow's scope.
		scopeOf := func(off int, self *scopedPOI) *scopedPOI {
			var in *scopedPOI
			for _, o := range pois {
				if o != self && isFunctionLike(o.p) && o.start <= off && off < o.end && (in == nil || o.start >= in.start && o.end <= in.end) {
					in = o
				}
			}
			return in
		}
		module := pythonModule(file)
		for _, s := range pois { // outer first: an enclosing POI is named before
			base := ""
			switch {
			case s.arrow >= 0:
				scope := scopeOf(s.arrow, s)
				n := 0
				for _, a := range arrows {
					if a <= s.arrow && scopeOf(a, s) == scope {
						n++
					}
				}
				base = module
				if scope != nil {
					base = c.pycgName(scope.p)
				}
				c.Names[s.p.ID] = joinName(base, fmt.Sprintf("<arrow%d>", n))
			case s.enclosing != nil && isFunctionLike(s.enclosing.p):
				c.Names[s.p.ID] = joinName(c.pycgName(s.enclosing.p), s.p.Name)
			}
		}
	}
	return nil
}

func joinName(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

func isFunctionLike(p resolver.POI) bool {
	return p.Type == resolver.TypeFunction || p.Type == resolver.TypeMethod
}

// locate finds s's name and rawCode in text: the name on its line, and
// the occurrence of rawCode that holds it.
func (s *scopedPOI) locate(text string, js bool) {
	lineStart := 0
	for line := 1; line < s.p.LineNumber; line++ {
		k := strings.IndexByte(text[lineStart:], '\n')
		if k < 0 {
			break
		}
		lineStart += k + 1
	}
	lineEnd := len(text)
	if k := strings.IndexByte(text[lineStart:], '\n'); k >= 0 {
		lineEnd = lineStart + k
	}
	s.name = lineStart
	if k := wordIndex(text[lineStart:lineEnd], s.p.Name); k >= 0 {
		s.name = lineStart + k
	}
	s.start, s.end = s.name, s.name+len(s.p.RawCode)
	for from := 0; s.p.RawCode != ""; {
		k := strings.Index(text[from:], s.p.RawCode)
		if k < 0 || from+k > s.name {
			break
		}
		if from+k+len(s.p.RawCode) > s.name {
			s.start, s.end = from+k, from+k+len(s.p.RawCode)
			break
		}
		from += k + 1
	}
	s.arrow = -1
	if js && s.p.Type == resolver.TypeFunction {
		after := s.name + len(s.p.Name)
		if loc := arrowValue.FindStringIndex(text[after:]); loc != nil {
			s.arrow = after + loc[1] - 2
		}
	}
}

// arrowOffsets returns the offsets of the "=>" of the JavaScript text's
// arrow functions, outside strings, template literals and comments.
func arrowOffsets(text string) []int {
	var out []int
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"' || c == '\'' || c == '`':
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case strings.HasPrefix(text[i:], "//"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case strings.HasPrefix(text[i:], "/*"):
			k := strings.Index(text[i+2:], "*/")
			if k < 0 {
				return out
			}
			i += 2 + k + 1
		case strings.HasPrefix(text[i:], "=>"):
			out = append(out, i)
			i++
		}
	}
	return out
}

// wordIndex returns the offset of the first occurrence of the identifier
// w in line as a whole word, or -1.
func wordIndex(line, w string) int {
	for from := 0; w != ""; {
		k := strings.Index(line[from:], w)
		if k < 0 {
			return -1
		}
		at := from + k
		if (at == 0 || !resolver.IsIdentByte(line[at-1])) && (at+len(w) == len(line) || !resolver.IsIdentByte(line[at+len(w)])) {
			return at
		}
		from = at + 1
	}
	return -1
}
