package scipindex

import (
	"strings"
	"unicode/utf8"

	"github.com/relay-dev/relay/resolver"
)

// The few source forms the index does not say, read from the text around
// an occurrence.

// skipSpaces returns the offset of the first byte at or after i that is
// not a space or a tab.
func skipSpaces(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}

// wordBefore returns the word (identifier characters, or "*") that ends
// right before offset i, spaces skipped, and where it starts.
func wordBefore(text string, i int) (string, int) {
	for i > 0 && (text[i-1] == ' ' || text[i-1] == '\t') {
		i--
	}
	end := i
	for i > 0 && (resolver.IsIdentByte(text[i-1]) || text[i-1] == '*') {
		i--
	}
	return text[i:end], i
}

// afterFunctionKeyword reports whether the name at offset i follows
// `function` or `function*`.
func afterFunctionKeyword(text string, i int) bool {
	w, _ := wordBefore(text, i)
	return w == "function" || w == "function*" || w == "*" && strings.HasSuffix(strings.TrimRight(text[:i], " \t*"), "function")
}

// isFunctionValue reports whether the name ending at offset i is given a
// function as its value: `= function`, `= async …`, `= (…) =>`, `= x =>`,
// `= <T>(…) =>`, a type annotation before "=" allowed.
func isFunctionValue(text string, i int) bool {
	i = skipSpaces(text, i)
	if i < len(text) && (text[i] == '?' || text[i] == '!') {
		i++
	}
	if i < len(text) && text[i] == ':' { // a type annotation, up to "=" on the line
		depth := 0
		for i++; i < len(text) && text[i] != '\n'; i++ {
			c := text[i]
			switch {
			case c == '(' || c == '[' || c == '{' || c == '<':
				depth++
			case c == ')' || c == ']' || c == '}' || c == '>' && text[i-1] != '=':
				depth--
			case c == '=' && depth == 0 && (i+1 >= len(text) || text[i+1] != '>'):
				goto value
			}
		}
		return false
	}
value:
	if i >= len(text) || text[i] != '=' || i+1 < len(text) && (text[i+1] == '=' || text[i+1] == '>') {
		return false
	}
	i = skipSpaces(text, i+1)
	rest := text[i:]
	if hasWord(rest, "function") || hasWord(rest, "async") {
		return true
	}
	if strings.HasPrefix(rest, "<") || strings.HasPrefix(rest, "(") {
		// The parameter list's ")" and then "=>" (a return type between).
		depth := 0
		for j := 0; j < len(rest); j++ {
			switch rest[j] {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth--
				if depth == 0 && rest[j] == ')' {
					k := skipSpaces(rest, j+1)
					if strings.HasPrefix(rest[k:], "=>") {
						return true
					}
					if k < len(rest) && rest[k] == ':' {
						end := strings.IndexAny(rest[k:], "{;\n")
						return end > 0 && strings.Contains(rest[k:k+end], "=>") || end < 0 && strings.Contains(rest[k:], "=>")
					}
					return false
				}
			case ';':
				if depth == 0 {
					return false
				}
			}
		}
		return false
	}
	j := 0
	for j < len(rest) && resolver.IsIdentByte(rest[j]) {
		j++
	}
	return j > 0 && strings.HasPrefix(rest[skipSpaces(rest, j):], "=>")
}

// hasWord reports whether s starts with the word w.
func hasWord(s, w string) bool {
	return strings.HasPrefix(s, w) && (len(s) == len(w) || !resolver.IsIdentByte(s[len(w)]))
}

// isCallSite reports whether the name at a is called: followed by "(" on
// its line (JavaScript: type arguments <…> and "?." between allowed), or
// (JavaScript) constructed with `new`, `new a.b.X` included.
func isCallSite(text string, a span, js bool) bool {
	i := skipSpaces(text, a.end)
	if js {
		if strings.HasPrefix(text[i:], "?.(") {
			return true
		}
		if i < len(text) && text[i] == '<' {
			depth := 0
			for ; i < len(text) && text[i] != '\n' && text[i] != ';' && text[i] != '{'; i++ {
				if text[i] == '<' {
					depth++
				} else if text[i] == '>' {
					if depth--; depth == 0 {
						i = skipSpaces(text, i+1)
						break
					}
				}
			}
		}
		// `new X`, `new a.b.X`
		j := a.start
		for j > 0 && text[j-1] == '.' {
			_, j = wordBefore(text, j-1)
		}
		if w, _ := wordBefore(text, j); w == "new" {
			return true
		}
	}
	return i < len(text) && text[i] == '('
}

// importStatements returns the extents of the file's import statements:
// Python's `import …` and `from … import …` (brackets and "\" continue
// them), JavaScript's and TypeScript's `import …` and `export … from`
// (to the ";" or the line break after the module string). Only a line
// that starts a statement counts (statementStarts): never one inside a
// string, docstring, template literal or comment, nor inside brackets.
func importStatements(text string, js bool) []span {
	var out []span
	next := 0 // the end of the last statement found
	for _, start := range statementStarts(text, js) {
		if start < next {
			continue
		}
		lineEnd := strings.IndexByte(text[start:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text)
		} else {
			lineEnd += start
		}
		line := text[start:lineEnd]
		isImport := false
		if js {
			isImport = hasWord(line, "import") && !strings.HasPrefix(line, "import(") && !strings.HasPrefix(line, "import.") ||
				hasWord(line, "export") && (strings.Contains(line, " from ") || strings.HasSuffix(strings.TrimSpace(line), "{"))
		} else {
			isImport = hasWord(line, "import") || hasWord(line, "from") && strings.Contains(line, " import ")
		}
		if !isImport {
			continue
		}
		end := statementEnd(text, start, js)
		if js && hasWord(line, "export") && !strings.Contains(text[start:end], " from ") {
			continue // `export { a, b }` of local names
		}
		out = append(out, span{start, end})
		next = end
	}
	return out
}

// statementStarts returns the offsets, past indentation, of the lines
// that start a statement: the first line, and each line after a line
// break that is in code (not in a string, a Python triple-quoted string,
// a JavaScript template literal or block comment), outside brackets, and
// (Python) not continued by "\". A quote ' or " ends at its line's end at
// the latest, so one stray apostrophe cannot hide the rest of the file.
// JavaScript regular expressions are not recognised: a quote in one
// opens a string to the end of its line, no further.
func statementStarts(text string, js bool) []int {
	out := []int{skipSpaces(text, 0)}
	depth := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\\':
			i++ // an escaped character, or (Python) a continued line
		case !js && (c == '"' || c == '\'') && strings.HasPrefix(text[i:], strings.Repeat(string(c), 3)):
			k := strings.Index(text[i+3:], strings.Repeat(string(c), 3))
			for k >= 0 && escaped(text, i+3+k) {
				k2 := strings.Index(text[i+3+k+1:], strings.Repeat(string(c), 3))
				if k2 < 0 {
					k = -1
					break
				}
				k += 1 + k2
			}
			if k < 0 {
				return out
			}
			i += 3 + k + 2
		case c == '"' || c == '\'':
			for i++; i < len(text) && text[i] != c && text[i] != '\n'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
			if i < len(text) && text[i] == '\n' {
				i-- // the line break ends the line, as outside the string
			}
		case js && c == '`':
			for i++; i < len(text) && text[i] != '`'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case js && strings.HasPrefix(text[i:], "/*"):
			k := strings.Index(text[i+2:], "*/")
			if k < 0 {
				return out
			}
			i += 2 + k + 1
		case !js && c == '#' || js && strings.HasPrefix(text[i:], "//"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
			i-- // the line break, if any, is the loop's
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth--
		case c == '\n' && depth <= 0:
			out = append(out, skipSpaces(text, i+1))
		}
	}
	return out
}

// escaped reports whether the byte at i follows an odd number of "\".
func escaped(text string, i int) bool {
	n := 0
	for k := i - 1; k >= 0 && text[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// statementEnd returns the end of the import statement at start: the
// first line break outside brackets (Python: not after "\"), or ";"
// (Python: before a comment that ends its line). A quote ' or " ends at
// its line's end at the latest.
func statementEnd(text string, start int, js bool) int {
	depth := 0
	var quote byte
	for i := start; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			} else if c == '\n' && quote != '`' {
				quote = 0
				if depth <= 0 {
					return i
				}
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth--
		case c == ';' && js && depth <= 0:
			return i + 1
		case c == '\\' && !js && i+1 < len(text) && text[i+1] == '\n':
			i++
		case c == '#' && !js:
			if depth <= 0 {
				return start + len(strings.TrimRight(text[start:i], " \t"))
			}
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
		case c == '\n' && depth <= 0:
			return i
		}
	}
	return len(text)
}

// importName is the name of an import POI whose statement resolved to no
// definition: the last name it brings in (`import os.path` -> "path",
// `from . import x` -> "x", `import * as ns from 'm'` -> "ns"), or the
// module's when it brings in none.
func importName(stmt string) string {
	if i := strings.Index(stmt, " from "); i >= 0 && !strings.HasPrefix(stmt, "from") {
		stmt = stmt[:i] // JavaScript: the names before `from`
	}
	if i := strings.LastIndex(stmt, " import "); i >= 0 {
		stmt = stmt[i+len(" import "):]
	} else {
		stmt = strings.TrimPrefix(strings.TrimPrefix(stmt, "export"), "import")
	}
	var name string
	for _, f := range strings.FieldsFunc(stmt, func(r rune) bool { return !(r < utf8.RuneSelf && resolver.IsIdentByte(byte(r))) }) {
		switch f {
		case "as", "type", "from", "import":
			continue
		}
		name = f
	}
	return name
}

// delegates reports whether the call of name at offset off, inside the
// method df, forwards df to another object: df's own name called as a
// member of something other than the object itself (`self`, `cls`,
// `this`, `super()`, a class named by a capitalised name as in
// `Base.__init__(self)`), as a proxy, adapter or dispatcher does
// (`def create_response(self, r): return self._handler(r).create_response(r)`).
// The callee is the method of that name of the object's class, which a
// name cannot tell among the classes defining it: the lexical rule would
// take the one other definition the caller's file has, a sibling of the
// caller (oauthlib's ImplicitTokenGrantDispatcher for
// AuthorizationCodeGrantDispatcher's call on a grant type), so such a
// site is not left to it.
func delegates(text string, off int, df *def, name string) bool {
	if df.typ != resolver.TypeMethod || name != df.name {
		return false
	}
	i := off
	for i > 0 && (text[i-1] == ' ' || text[i-1] == '\t') {
		i--
	}
	if i == 0 || text[i-1] != '.' {
		return false // a plain call
	}
	if i >= 2 && text[i-2] == '?' {
		i-- // JavaScript's ?.
	}
	switch w, start := wordBefore(text, i-1); {
	case w == "self" || w == "cls" || w == "this":
		return start > 0 && text[start-1] == '.' // `o.self.m(`: a member named self
	case w == "" && strings.HasSuffix(strings.TrimRight(text[:i-1], " \t"), "super()"):
		return false
	case w != "" && w[0] >= 'A' && w[0] <= 'Z' && (start == 0 || text[start-1] != '.'):
		return false // `Base.__init__(self, …)`: the class it names
	}
	return true
}
