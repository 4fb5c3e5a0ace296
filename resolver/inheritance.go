package resolver

import "context"

// pythonMarkerBases are Python base classes that are typing or object-model
// markers, never a user POI; they yield no EXTENDS reference. Read-only lookup table.
var pythonMarkerBases = map[string]bool{"object": true, "Generic": true, "Protocol": true}

// maxEmbedLineTokens bounds the tokens of one Go struct or interface body line
// that can still be an embedded type (`*pkg.List[K, V] "tag"` is 10).
const maxEmbedLineTokens = 16

// extractInheritance adds the EXTENDS and IMPLEMENTS references of a class or
// interface POI, read from the first declaration header in its code.
func extractInheritance(ctx context.Context, p POI, refs *refSet) error {
	h := inheritanceParser{z: newTokenizer(ctx, p.RawCode), refs: refs, qualify: languageOf(p.FilePath) == langGo}
	h.run()
	return scanError(h.z, p, "inheritance")
}

// inheritanceParser reads one class or interface declaration header.
type inheritanceParser struct {
	z    *tokenizer
	refs *refSet
	// qualify: keep a Go embedded type's package qualifier (a .go file).
	qualify bool
}

// run finds the first declaration outside any braces, parentheses or brackets
// and reads its header (or, for a Go struct or interface, its body).
func (h *inheritanceParser) run() {
	depth := 0
	for {
		t := h.z.next()
		switch {
		case t.kind == tokEOF:
			return
		case t.isPunct("{") || t.isPunct("(") || t.isPunct("["):
			depth++
		case t.isPunct("}") || t.isPunct(")") || t.isPunct("]"):
			depth = max(depth-1, 0)
		case depth > 0 || t.kind != tokIdent:
		case (t.text == "struct" || t.text == "interface") && h.z.peek().isPunct("{"):
			h.z.next()
			h.goEmbeds()
			return
		case t.text == "class" || t.text == "interface" || t.text == "enum":
			h.classHeader()
			return
		}
	}
}

// classHeader reads `class Name<T> extends A implements B, C {` (JavaScript,
// TypeScript, Java) or `class Name(A, B):` (Python) after the keyword.
func (h *inheritanceParser) classHeader() {
	t := h.z.next()
	if t.kind == tokIdent && t.text != "extends" && t.text != "implements" {
		t = h.z.next() // the class name; anonymous classes have none
	}
	switch {
	case t.isPunct("<"):
		h.skipAngles()
		t = h.z.next()
	case t.isPunct("["): // Python 3.12 type parameters
		h.skipBalanced("[", "]")
		t = h.z.next()
	}
	if t.isPunct("(") {
		h.pythonBases()
		return
	}
	var mode RelType
	expectType := false
	for {
		switch {
		case t.kind == tokEOF || t.isPunct("{") || t.isPunct(";"):
			return
		case t.isIdent("extends"):
			mode, expectType = Extends, true
		case t.isIdent("implements"):
			mode, expectType = Implements, true
		case expectType && t.kind == tokIdent:
			var name string
			name, t = h.typeRef(t)
			h.refs.add(mode, name)
			if expectType = t.isPunct(","); expectType {
				t = h.z.next()
			}
			continue
		default:
			expectType = false // e.g. Java `permits A, B`
		}
		t = h.z.next()
	}
}

// typeRef reads a possibly qualified, possibly generic type name starting at
// identifier t and returns its last segment (`foo.Bar<T>` -> Bar) and the token
// after it. A call expression (a mixin: `extends mix(A, B)`) yields "".
func (h *inheritanceParser) typeRef(t token) (string, token) {
	name := t.text
	t = h.z.next()
	for t.isPunct(".") || t.isPunct("::") {
		id := h.z.next()
		if id.kind != tokIdent {
			return "", id
		}
		name, t = id.text, h.z.next()
	}
	if t.isPunct("<") {
		h.skipAngles()
		t = h.z.next()
	}
	if t.isPunct("(") {
		h.skipBalanced("(", ")")
		return "", h.z.next()
	}
	return name, t
}

// pythonBases reads the bases of `class A(B, mod.C, Generic[T], metaclass=M):`
// after the "(": keyword arguments, *args, calls and marker bases are skipped.
func (h *inheritanceParser) pythonBases() {
	for {
		t := h.z.next()
		if t.kind == tokEOF || t.isPunct(")") {
			return
		}
		if t.isPunct(",") {
			continue
		}
		name := ""
		if t.kind == tokIdent {
			name, t = t.text, h.z.next()
			for t.isPunct(".") {
				id := h.z.next()
				if id.kind != tokIdent {
					name, t = "", id
					break
				}
				name, t = id.text, h.z.next()
			}
			if t.isPunct("=") || t.isPunct("(") || pythonMarkerBases[name] {
				name = ""
			}
		}
		h.refs.add(Extends, name)
		if h.skipArgument(t) {
			return
		}
	}
}

// skipArgument consumes tokens from t through the "," or ")" that ends a
// parenthesized argument and reports whether the list ended.
func (h *inheritanceParser) skipArgument(t token) bool {
	depth := 0
	for {
		switch {
		case t.kind == tokEOF:
			return true
		case t.isPunct("(") || t.isPunct("[") || t.isPunct("{"):
			depth++
		case t.isPunct(")") || t.isPunct("]") || t.isPunct("}"):
			if depth == 0 {
				return true
			}
			depth--
		case t.isPunct(",") && depth == 0:
			return false
		}
		t = h.z.next()
	}
}

// skipAngles consumes generic arguments after a "<" through the matching ">".
func (h *inheritanceParser) skipAngles() { h.skipBalanced("<", ">") }

// skipBalanced consumes tokens after an open through its matching close.
func (h *inheritanceParser) skipBalanced(open, close string) {
	for depth := 1; depth > 0; {
		t := h.z.next()
		switch {
		case t.kind == tokEOF:
			return
		case t.isPunct(open):
			depth++
		case t.isPunct(close):
			depth--
		}
	}
}

// goEmbeds reads a Go struct or interface body after its "{": each line (or
// ";"-separated element) that is just a type name is an embedded type.
func (h *inheritanceParser) goEmbeds() {
	var line embedLine
	depth := 1
	for {
		t := h.z.next()
		if t.nlBefore && depth == 1 {
			line.flush(h.refs, h.qualify)
		}
		switch {
		case t.kind == tokEOF:
			line.flush(h.refs, h.qualify)
			return
		case t.isPunct("{"):
			depth++
			line.bad = true
		case t.isPunct("}"):
			depth--
			if depth == 0 {
				line.flush(h.refs, h.qualify)
				return
			}
		case depth > 1:
		case t.isPunct(";"):
			line.flush(h.refs, h.qualify)
		default:
			line.push(t)
		}
	}
}

// embedLine collects the tokens of one Go struct or interface body line.
type embedLine struct {
	toks [maxEmbedLineTokens]token
	n    int
	bad  bool
}

// push adds a token to the line.
func (l *embedLine) push(t token) {
	if l.n == len(l.toks) {
		l.bad = true
		return
	}
	l.toks[l.n] = t
	l.n++
}

// flush adds the line's embedded type, if it is one, and resets the line.
func (l *embedLine) flush(refs *refSet, qualify bool) {
	if !l.bad {
		refs.add(Extends, embeddedType(l.toks[:l.n], qualify))
	}
	*l = embedLine{}
}

// embeddedType returns the type name of an embedded field line,
// `[*][pkg.]Name[[T, …]] ["tag"]`, or "" when the line is anything else
// (a named field, a method, a type union). With qualify, a qualified name
// keeps its package (io.Reader, where the default is Reader).
func embeddedType(toks []token, qualify bool) string {
	i := 0
	if i < len(toks) && toks[i].isPunct("*") {
		i++
	}
	if i >= len(toks) || toks[i].kind != tokIdent {
		return ""
	}
	name := toks[i].text
	i++
	if i+1 < len(toks) && toks[i].isPunct(".") && toks[i+1].kind == tokIdent {
		if qualify {
			name += "." + toks[i+1].text
		} else {
			name = toks[i+1].text
		}
		i += 2
	}
	if i < len(toks) && toks[i].isPunct("[") {
		for depth := 0; i < len(toks); i++ {
			if toks[i].isPunct("[") {
				depth++
			} else if toks[i].isPunct("]") {
				if depth--; depth == 0 {
					i++
					break
				}
			}
		}
	}
	if i < len(toks) && toks[i].kind == tokString {
		i++
	}
	if i != len(toks) {
		return ""
	}
	return name
}
