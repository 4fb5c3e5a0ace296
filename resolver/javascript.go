package resolver

import (
	"context"
	"strings"
)

// jsMemberState is where a JavaScript class body's member scan is.
type jsMemberState uint8

const (
	jsStart       jsMemberState = iota // at the start of a member
	jsHead                             // names that can head a method: `static async *name<T>`
	jsDecorator                        // `@name.name(…)`
	jsParams                           // inside a method's parameter list
	jsAfterParams                      // after it: a return type, then the body's "{"
	jsBody                             // inside a method's body
	jsOther                            // a field, its initializer or a static block, up to its end
)

// jsOwnCode returns a JavaScript or TypeScript class POI's code with the
// bodies of its methods (constructor, getters, setters and static methods
// included) blanked, line breaks kept: their calls are theirs, not the
// class's. The class keeps its own body: decorators, the extends
// expression, field initializers (arrow functions assigned to fields
// included) and static blocks.
//
// A method is a member of the class body whose head is only names,
// modifiers, a computed [name], "*", "?", "!" and type parameters <…>,
// followed by its parameters, an optional return type and "{". A member
// ends at ";", at the "}" closing a block of it, or at a line break after
// a token that can end an expression. Regular expression literals are one
// token each (tokenizer.regexLiterals), so brackets inside them do not
// count. Code it cannot read (no class body) is returned as it is, or
// blanked only up to where the scan lost track.
func jsOwnCode(ctx context.Context, code string) string {
	if !strings.Contains(code, "class") {
		return code
	}
	z := newTokenizer(ctx, code)
	z.privateNames = true
	z.regexLiterals = true
	// The body's "{": the first one outside brackets after `class`.
	depth, class := 0, false
	for !class || depth > 0 || !z.peek().isPunct("{") {
		t := z.next()
		switch {
		case t.kind == tokEOF:
			return code
		case t.isPunct("{") || t.isPunct("(") || t.isPunct("["):
			depth++
		case t.isPunct("}") || t.isPunct(")") || t.isPunct("]"):
			depth = max(depth-1, 0)
		case depth == 0 && t.isIdent("class"):
			class = true
		}
	}
	z.next()

	var blanks [][2]int // [start, end) of each method body's inside
	st, bodyStart, angle := jsStart, 0, 0
	prev := token{kind: tokPunct, text: "{"}
	depth = 1
	for {
		t := z.next() // never peeked from here: z.pos is t's end
		if t.kind == tokEOF {
			break
		}
		end := z.pos
		start := end - len(t.text)
		if t.isPunct("}") || t.isPunct(")") || t.isPunct("]") {
			depth--
			if depth == 0 {
				break // the class body's "}"
			}
			if depth == 1 {
				switch {
				case st == jsBody:
					blanks = append(blanks, [2]int{bodyStart, start})
					st = jsStart
				case st == jsParams:
					st = jsAfterParams
				case st == jsDecorator && t.text == ")", st == jsOther && t.text == "}":
					st = jsStart
				}
			}
			prev = t
			continue
		}
		if depth == 1 {
			st, bodyStart, angle = jsMember(st, t, prev, end, bodyStart, angle)
		}
		if t.isPunct("{") || t.isPunct("(") || t.isPunct("[") {
			depth++
		}
		prev = t
	}
	if len(blanks) == 0 {
		return code
	}
	var b strings.Builder
	b.Grow(len(code))
	prevEnd := 0
	for _, r := range blanks {
		b.WriteString(code[prevEnd:r[0]])
		for i := r[0]; i < r[1]; i++ {
			if code[i] == '\n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		prevEnd = r[1]
	}
	b.WriteString(code[prevEnd:])
	return b.String()
}

// jsMember advances the member scan by token t of the class body's own
// level (prev is the token before it, end its end offset), and returns the
// new state, the start of a method body opened by t and the depth of
// angle brackets of a method head's type parameters.
func jsMember(st jsMemberState, t, prev token, end, bodyStart, angle int) (jsMemberState, int, int) {
	if t.nlBefore && (st == jsOther || st == jsAfterParams && angle == 0) && jsEndsExpr(prev) && !jsContinues(t) {
		st = jsStart // automatic semicolon insertion: a new member
	}
	if st == jsDecorator && !t.isPunct("(") && !t.isPunct(".") && (t.kind != tokIdent || !prev.isPunct("@") && !prev.isPunct(".")) {
		st = jsStart // `@dec` without arguments: the member follows
	}
	switch st {
	case jsStart:
		switch {
		case t.isPunct("@"):
			return jsDecorator, bodyStart, 0
		case t.isPunct(";"):
			return jsStart, bodyStart, 0
		case t.kind == tokIdent || t.kind == tokString || t.kind == tokNumber || t.isPunct("*") || t.isPunct("["):
			return jsHead, bodyStart, 0
		}
		return jsOther, bodyStart, 0
	case jsHead:
		switch {
		case angle > 0 && t.isPunct(">"):
			return jsHead, bodyStart, angle - 1
		case t.isPunct("<"):
			return jsHead, bodyStart, angle + 1
		case t.isPunct(";"):
			return jsStart, bodyStart, 0
		case angle > 0:
			return jsHead, bodyStart, angle
		case t.isPunct("("):
			return jsParams, bodyStart, 0
		case t.kind == tokIdent || t.kind == tokString || t.kind == tokNumber || t.isPunct("*") || t.isPunct("?") ||
			t.isPunct("!") || t.isPunct("["):
			return jsHead, bodyStart, 0
		}
		return jsOther, bodyStart, 0 // `x = …`, `x: T`, `static {`
	case jsAfterParams:
		switch {
		case t.isPunct("<"):
			return jsAfterParams, bodyStart, angle + 1
		case t.isPunct(">") && angle > 0:
			return jsAfterParams, bodyStart, angle - 1
		case t.isPunct("{") && angle == 0:
			return jsBody, end, 0
		case t.isPunct(";"):
			return jsStart, bodyStart, 0
		}
		return jsAfterParams, bodyStart, angle
	case jsOther:
		if t.isPunct(";") {
			return jsStart, bodyStart, 0
		}
	}
	return st, bodyStart, angle
}

// jsEndsExpr reports whether t can end an expression or a type, so that a
// line break after it can end a class member.
func jsEndsExpr(t token) bool {
	if t.kind != tokPunct {
		return true
	}
	switch t.text {
	case ")", "]", "}", ">":
		return true
	}
	return false
}

// jsContinues reports whether t, first on its line, continues the member
// before it rather than starting one: punctuation other than what can
// start a member (`*gen()`, `[key]()`, `@dec`).
func jsContinues(t token) bool {
	return t.kind == tokPunct && t.text != "*" && t.text != "[" && t.text != "@"
}
