package resolver

import (
	"context"
	"fmt"
)

// Extent is where a definition is in its file's source: byte offsets of
// the end of its header (where its body starts: a Python def's or class's
// ":", a JavaScript body's "{"; End when it has no body) and of its end.
type Extent struct {
	BodyStart, End int
}

// DefinitionExtent returns the extent of the definition whose name starts
// at byte offset nameAt of src, the source of the file at filePath, read
// by the language's rules (an analyzer whose index has no extent for a
// definition, relay analyze --scip, asks it):
//
//   - Python: the header runs to the ":" outside brackets after the name;
//     the body is the rest of that line when it holds code, else the lines
//     after it indented more than the name's line (comments and blank
//     lines inside included, trailing ones not).
//   - JavaScript and TypeScript: from the name, the first "{" outside
//     brackets opens the body, which ends at its "}"; an arrow function
//     whose body is an expression (`f = (x) => g(x)`) ends where the
//     expression does: at ";", "," or a closing bracket outside brackets,
//     or at a line break after a token that can end an expression before
//     one that cannot continue it. A signature without a body (an
//     overload, an abstract method) ends the same way.
//
// Strings, comments and (JavaScript) regular expression literals are
// skipped. Other languages are read as JavaScript. It runs in time linear
// in the definition's length and returns an error wrapping ctx.Err() when
// ctx is done, or naming nameAt when it is outside src.
func DefinitionExtent(ctx context.Context, filePath, src string, nameAt int) (Extent, error) {
	if nameAt < 0 || nameAt > len(src) {
		return Extent{}, fmt.Errorf("error reading the extent of the definition at byte %d of %q: outside its %d bytes", nameAt, filePath, len(src))
	}
	z := newTokenizer(ctx, src)
	z.pos = nameAt
	var e Extent
	if languageOf(filePath) == langPython {
		e = pythonExtent(z, src, nameAt)
	} else {
		z.privateNames, z.regexLiterals = true, true
		e = jsExtent(z)
	}
	if z.err != nil {
		return Extent{}, fmt.Errorf("error reading the extent of the definition at byte %d of %q: %w", nameAt, filePath, z.err)
	}
	return e, nil
}

// pythonExtent reads a Python def's or class's extent from its name.
func pythonExtent(z *tokenizer, src string, nameAt int) Extent {
	lineStart := nameAt
	for lineStart > 0 && src[lineStart-1] != '\n' {
		lineStart--
	}
	indent := 0
	for lineStart+indent < len(src) && (src[lineStart+indent] == ' ' || src[lineStart+indent] == '\t') {
		indent++
	}
	depth, last := 0, z.next() // the name
	e := Extent{BodyStart: -1, End: last.start + len(last.text)}
	for {
		t := z.next()
		if t.kind == tokEOF {
			if e.BodyStart < 0 {
				e.BodyStart = e.End
			}
			return e
		}
		if e.BodyStart < 0 {
			switch {
			case t.isPunct("(") || t.isPunct("[") || t.isPunct("{"):
				depth++
			case t.isPunct(")") || t.isPunct("]") || t.isPunct("}"):
				depth = max(depth-1, 0)
			case depth == 0 && t.isPunct(":"):
				e.BodyStart = t.start + 1
				e.End = e.BodyStart
				depth = 0
				if nx := z.peek(); nx.kind != tokEOF && !nx.nlBefore {
					// `def f(): return g()`: the body is the rest of the line
					// (a line continuation with "\" aside).
					for nx = z.peek(); nx.kind != tokEOF && !nx.nlBefore; nx = z.peek() {
						t = z.next()
						e.End = t.start + len(t.text)
					}
					return e
				}
				continue
			}
			e.End = t.start + len(t.text)
			continue
		}
		if t.nlBefore && depth == 0 && column(src, t.start) <= indent {
			return e
		}
		switch {
		case t.isPunct("(") || t.isPunct("[") || t.isPunct("{"):
			depth++
		case t.isPunct(")") || t.isPunct("]") || t.isPunct("}"):
			depth = max(depth-1, 0)
		}
		e.End = t.start + len(t.text)
	}
}

// column returns the byte column of offset off on its line.
func column(src string, off int) int {
	c := 0
	for off-c > 0 && src[off-c-1] != '\n' {
		c++
	}
	return c
}

// jsExtent reads a JavaScript or TypeScript definition's extent from its
// name.
func jsExtent(z *tokenizer) Extent {
	name := z.next()
	e := Extent{BodyStart: -1, End: name.start + len(name.text)}
	// angle counts the type parameters' and arguments' <…> of a header
	// (`interface I<A, B extends X<Y> = Z> extends J {`), whose commas do
	// not end it; after an "=" outside them a "<" may be a comparison, so
	// only before it.
	depth, angle, arrow, assigned := 0, 0, false, false
	prev := name
	for {
		t := z.next()
		if t.kind == tokEOF {
			break
		}
		if depth == 0 && !arrow && !assigned {
			switch {
			case t.isPunct("=") && angle == 0:
				assigned = true
			case t.isPunct("<"):
				angle++
			case t.isPunct(">") && angle > 0:
				angle--
			}
		}
		if depth == 0 && angle == 0 {
			switch {
			case t.isPunct("{"):
				if arrow || !prev.isPunct(":") && !prev.isPunct("=") && !prev.isPunct("<") && !prev.isPunct("|") && !prev.isPunct("&") {
					// The body (an object type after ":", "=", "<" or a
					// union is a type, not a body).
					e.BodyStart = t.start + 1
					e.End = matchingBrace(z, t)
					return e
				}
			case t.isPunct(";"), t.isPunct(","), t.isPunct(")"), t.isPunct("]"), t.isPunct("}"):
				if e.BodyStart < 0 {
					e.BodyStart = e.End
				}
				return e
			case t.isPunct("=>"):
				arrow = true
				e.End = t.start + len(t.text)
				prev = t
				continue
			case t.nlBefore && jsEndsExpr(prev) && !jsContinues(t) && !prev.isPunct(">") && !prev.isPunct("=>"):
				if e.BodyStart < 0 {
					e.BodyStart = e.End
				}
				return e
			}
		}
		switch {
		case t.isPunct("(") || t.isPunct("[") || t.isPunct("{"):
			depth++
		case t.isPunct(")") || t.isPunct("]") || t.isPunct("}"):
			depth--
		}
		e.End = t.start + len(t.text)
		prev = t
	}
	if e.BodyStart < 0 {
		e.BodyStart = e.End
	}
	return e
}

// matchingBrace returns the offset after the "}" that closes the "{" open
// (just read), or the end of input when none does.
func matchingBrace(z *tokenizer, open token) int {
	depth, end := 1, open.start+1
	for {
		t := z.next()
		if t.kind == tokEOF {
			return end
		}
		end = t.start + len(t.text)
		switch {
		case t.isPunct("(") || t.isPunct("[") || t.isPunct("{"):
			depth++
		case t.isPunct(")") || t.isPunct("]") || t.isPunct("}"):
			depth--
			if depth == 0 {
				return end
			}
		}
	}
}
