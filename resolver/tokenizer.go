package resolver

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// checkInterval is the most input, in bytes, the tokenizer scans between two
// checks of its context.
const checkInterval = 4 << 10

// lookahead is how many tokens a tokenizer can peek at.
const lookahead = 10

// tokKind is the kind of a token.
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokPunct
)

// token is one lexical token of source code. Comments and whitespace are not
// tokens; nlBefore records whether a line break preceded the token.
type token struct {
	kind     tokKind
	text     string // a slice of the source; string tokens include their quotes
	nlBefore bool
	start    int // the byte offset of text in the source
}

// isPunct reports whether t is the punctuation s.
func (t token) isPunct(s string) bool { return t.kind == tokPunct && t.text == s }

// isIdent reports whether t is the identifier s.
func (t token) isIdent(s string) bool { return t.kind == tokIdent && t.text == s }

// tokenizer splits source code of any of the supported languages into tokens in
// one linear pass. It drops comments (// and # to end of line, /* */) and
// recognizes string literals (single, double and backtick quoted, and Python
// triple-quoted ones, with backslash escapes) so that their content is never
// mistaken for code.
//
// It checks its context every checkInterval bytes; once the context is done it
// records the error in err and reports end of input.
type tokenizer struct {
	ctx       context.Context
	src       string
	pos       int
	nextCheck int
	err       error
	// privateNames: `#name` is one identifier token (a JavaScript private
	// name), not a comment.
	privateNames bool
	// regexLiterals: a "/" where an expression can start begins a
	// JavaScript regular expression literal, one string token (so a "(",
	// "[" or quote inside it is never code).
	regexLiterals bool
	// last and beforeLast are the last two tokens scanned (regexLiterals
	// decides by them), tokEOF before the input's start.
	last, beforeLast token
	// noRegexBefore: a "/" before this offset starts no regex literal; a
	// scan from an earlier "/" on its line found none closed before the
	// line's end (so a long line is scanned once, not once per "/").
	noRegexBefore int
	// regexScanned counts the bytes scanRegex read (tests check it stays
	// linear in the input's size).
	regexScanned int

	buf  [lookahead]token // ring buffer of peeked tokens
	head int
	n    int
}

// newTokenizer returns a tokenizer over src that honours ctx.
func newTokenizer(ctx context.Context, src string) *tokenizer {
	z := &tokenizer{ctx: ctx, src: src}
	z.check()
	return z
}

// next consumes and returns the next token.
func (z *tokenizer) next() token {
	if z.n > 0 {
		t := z.buf[z.head]
		z.head = (z.head + 1) % lookahead
		z.n--
		return t
	}
	return z.scan()
}

// peek returns the next token without consuming it.
func (z *tokenizer) peek() token { return z.peekAt(0) }

// peekAt returns the token i places ahead (0 is the next one) without
// consuming anything; i must be less than lookahead.
func (z *tokenizer) peekAt(i int) token {
	for z.n <= i {
		z.buf[(z.head+z.n)%lookahead] = z.scan()
		z.n++
	}
	return z.buf[(z.head+i)%lookahead]
}

// check checks the context when checkInterval bytes were scanned since the last check.
func (z *tokenizer) check() {
	if z.pos >= z.nextCheck {
		z.checkContext()
	}
}

// checkContext stops the scan at end of input once the context is done.
func (z *tokenizer) checkContext() {
	z.nextCheck = z.pos + checkInterval
	if z.err != nil {
		return
	}
	if err := z.ctx.Err(); err != nil {
		z.err = err
		z.pos = len(z.src)
	}
}

// at returns the byte i places after the current position, or 0 past the end.
func (z *tokenizer) at(i int) byte {
	if z.pos+i < len(z.src) {
		return z.src[z.pos+i]
	}
	return 0
}

// advance moves the position forward by n bytes, clamped to the end of input.
func (z *tokenizer) advance(n int) {
	z.pos = min(z.pos+n, len(z.src))
	z.check()
}

// scan reads the next token from the source and records it as the last one.
func (z *tokenizer) scan() token {
	t := z.scanToken()
	t.start = z.pos - len(t.text)
	z.beforeLast, z.last = z.last, t
	return t
}

// scanToken reads the next token from the source.
func (z *tokenizer) scanToken() token {
	nl := false
	for {
		z.check()
		if z.pos >= len(z.src) {
			return token{kind: tokEOF, nlBefore: nl}
		}
		c := z.src[z.pos]
		switch {
		case c == '\n':
			nl = true
			z.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			z.pos++
		case c == '\\' && z.at(1) == '\n':
			z.pos += 2 // line continuation
		case c == '\\' && z.at(1) == '\r' && z.at(2) == '\n':
			z.pos += 3
		case c == '#' && z.privateNames && (isIdentByte(z.at(1)) && !isDigit(z.at(1)) || z.at(1) >= utf8.RuneSelf):
			start := z.pos
			z.pos++
			t := z.scanIdent(nl)
			t.text = z.src[start:z.pos]
			return t
		case c == '#', c == '/' && z.at(1) == '/':
			z.skipLine()
		case c == '/' && z.at(1) == '*':
			if z.skipBlockComment() {
				nl = true
			}
		case c == '/' && z.regexLiterals && z.pos >= z.noRegexBefore && z.regexAllowed():
			if t, ok := z.scanRegex(nl); ok {
				return t
			}
			return z.scanPunct(nl)
		case c == '"' || c == '\'':
			return z.scanQuoted(c, nl)
		case c == '`':
			return z.scanBacktick(nl)
		case isIdentByte(c) && !isDigit(c):
			return z.scanIdent(nl)
		case isDigit(c):
			return z.scanNumber(nl)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(z.src[z.pos:])
			switch {
			case unicode.IsLetter(r):
				return z.scanIdent(nl)
			case r == '\u2028' || r == '\u2029' || r == '\u0085':
				nl = true
				z.pos += size
			case unicode.IsSpace(r):
				z.pos += size
			default:
				start := z.pos
				z.pos += size
				return token{kind: tokPunct, text: z.src[start:z.pos], nlBefore: nl}
			}
		default:
			return z.scanPunct(nl)
		}
	}
}

// skipLine skips a line comment up to, not including, the line break.
func (z *tokenizer) skipLine() {
	for z.pos < len(z.src) {
		end := min(z.pos+checkInterval, len(z.src))
		if i := strings.IndexByte(z.src[z.pos:end], '\n'); i >= 0 {
			z.pos += i
			return
		}
		z.pos = end
		z.check()
	}
}

// skipBlockComment skips a /* */ comment (to end of input when unterminated)
// and reports whether it spanned a line break.
func (z *tokenizer) skipBlockComment() bool {
	start := z.pos
	z.pos += 2
	for z.pos < len(z.src) {
		end := min(z.pos+checkInterval, len(z.src))
		i := strings.IndexByte(z.src[z.pos:end], '*')
		if i < 0 {
			z.pos = end
			z.check()
			continue
		}
		z.pos += i + 1
		if z.pos < len(z.src) && z.src[z.pos] == '/' {
			z.pos++
			break
		}
		z.check()
	}
	return strings.IndexByte(z.src[start:z.pos], '\n') >= 0
}

// scanQuoted scans a '…' or "…" string, or a Python triple-quoted one. A
// single-quoted string that is not closed on its line ends at the line break,
// so a stray quote (a Rust lifetime, a regex) cannot hide the rest of the code.
func (z *tokenizer) scanQuoted(q byte, nl bool) token {
	start := z.pos
	if z.at(1) == q && z.at(2) == q {
		z.pos += 3
		for z.pos < len(z.src) {
			switch c := z.src[z.pos]; {
			case c == '\\':
				z.advance(2)
			case c == q && z.at(1) == q && z.at(2) == q:
				z.pos += 3
				return token{kind: tokString, text: z.src[start:z.pos], nlBefore: nl}
			default:
				z.advance(1)
			}
		}
		return token{kind: tokString, text: z.src[start:z.pos], nlBefore: nl}
	}
	z.pos++
	for z.pos < len(z.src) {
		c := z.src[z.pos]
		if c == '\\' {
			z.advance(2)
			continue
		}
		if c == '\n' {
			break
		}
		z.advance(1)
		if c == q {
			break
		}
	}
	return token{kind: tokString, text: z.src[start:z.pos], nlBefore: nl}
}

// regexKeywords are the JavaScript keywords after which a "/" starts a
// regular expression (an operand is expected), not a division.
var regexKeywords = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true, "delete": true,
	"void": true, "throw": true, "case": true, "do": true, "else": true, "yield": true, "await": true,
}

// regexAllowed reports whether a "/" at the current position starts a
// regular expression literal, judged as a JavaScript tokenizer without a
// parser does (the rule of sweet.js's and esprima's tokenizers): after an
// operand (a name that is not an operator keyword, a number, a string, ")"
// or "]") it is a division; after an operator, "(", "[", ",", ";", "{",
// "}" or the start of input it starts a regex. "++"/"--" right before it
// are taken as postfix (`i++ / 2`). A "}" that ends an object literal used
// as a dividend (`({}) / 2` aside, which ")" covers) is read as a block end.
// A "/" right after "<" (JSX's closing tag `</li>`) never starts one;
// `a < /re/`, with a space between, does.
func (z *tokenizer) regexAllowed() bool {
	if z.last.isPunct("<") && z.last.start+1 == z.pos {
		return false
	}
	switch t := z.last; t.kind {
	case tokEOF:
		return true
	case tokIdent:
		return regexKeywords[t.text]
	case tokNumber, tokString:
		return false
	}
	switch z.last.text {
	case ")", "]":
		return false
	case "+", "-":
		return !z.beforeLast.isPunct(z.last.text)
	}
	return true
}

// scanRegex scans a regular expression literal at the current "/": its
// body, where "/" inside a class [...] and an escaped character do not end
// it, and its flags. A literal not closed on its line is not one: ok false,
// nothing consumed, and no later "/" on that line starts one (each byte of
// a line is read once at most, however many "/" it holds; a "/" after one
// that opened no regex, `(/[ … /x/`, is taken as a division).
func (z *tokenizer) scanRegex(nl bool) (token, bool) {
	start := z.pos
	inClass := false
	for i := start + 1; i < len(z.src); i++ {
		z.regexScanned++
		switch c := z.src[i]; {
		case c == '\n' || c == '\r':
			z.noRegexBefore = i
			return token{}, false
		case c == '\\':
			i++
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			i++
			for i < len(z.src) && isIdentByte(z.src[i]) {
				i++
			}
			z.advance(i - start)
			return token{kind: tokString, text: z.src[start:z.pos], nlBefore: nl}, true
		}
	}
	z.noRegexBefore = len(z.src)
	return token{}, false
}

// scanBacktick scans a `…` template literal or Go raw string, honouring
// backslash escapes as JavaScript does.
func (z *tokenizer) scanBacktick(nl bool) token {
	start := z.pos
	z.pos++
	for z.pos < len(z.src) {
		c := z.src[z.pos]
		if c == '\\' {
			z.advance(2)
			continue
		}
		z.advance(1)
		if c == '`' {
			break
		}
	}
	return token{kind: tokString, text: z.src[start:z.pos], nlBefore: nl}
}

// scanIdent scans an identifier: letters (Unicode included), digits, '_' and '$'.
func (z *tokenizer) scanIdent(nl bool) token {
	start := z.pos
	for z.pos < len(z.src) {
		c := z.src[z.pos]
		if c < utf8.RuneSelf {
			if !isIdentByte(c) {
				break
			}
			z.advance(1)
			continue
		}
		r, size := utf8.DecodeRuneInString(z.src[z.pos:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) && !unicode.Is(unicode.Mc, r) {
			break
		}
		z.advance(size)
	}
	return token{kind: tokIdent, text: z.src[start:z.pos], nlBefore: nl}
}

// scanNumber scans a number literal (loosely: digits, letters and '_').
func (z *tokenizer) scanNumber(nl bool) token {
	start := z.pos
	for z.pos < len(z.src) && isIdentByte(z.src[z.pos]) {
		z.advance(1)
	}
	return token{kind: tokNumber, text: z.src[start:z.pos], nlBefore: nl}
}

// scanPunct scans one punctuation character, or one of the pairs "=>", "->", "::".
func (z *tokenizer) scanPunct(nl bool) token {
	start := z.pos
	switch c, d := z.src[z.pos], z.at(1); {
	case c == '=' && d == '>', c == '-' && d == '>', c == ':' && d == ':':
		z.pos += 2
	default:
		z.pos++
	}
	return token{kind: tokPunct, text: z.src[start:z.pos], nlBefore: nl}
}

// IsIdentByte reports whether the ASCII byte c can be part of an identifier
// of the languages the tokenizer reads.
func IsIdentByte(c byte) bool { return isIdentByte(c) }

// IsIdentifier reports whether s is a single identifier as the tokenizer
// reads one.
func IsIdentifier(s string) bool { return isIdentifier(s) }

// isIdentByte reports whether the ASCII byte c can be part of an identifier.
func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

// isIdentifier reports whether s is a single identifier as the tokenizer reads one.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r < utf8.RuneSelf && isIdentByte(byte(r)) && !(i == 0 && isDigit(byte(r))):
		case r >= utf8.RuneSelf && unicode.IsLetter(r):
		case i > 0 && r >= utf8.RuneSelf && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)):
		default:
			return false
		}
	}
	return true
}

// stringContent returns the content of a string token without its quotes.
func stringContent(t token) string {
	s := t.text
	for _, q := range []string{`"""`, `'''`, `"`, `'`, "`"} {
		if strings.HasPrefix(s, q) {
			s = strings.TrimPrefix(s, q)
			return strings.TrimSuffix(s, q)
		}
	}
	return s
}
