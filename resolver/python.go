package resolver

import "strings"

// pythonOwnCode returns a Python POI's code without the bodies of the
// functions and classes nested in it, each line of them left empty (so line
// structure stays): their calls are theirs, not the POI's. A class keeps its
// own body (decorators, base classes, class-level statements and the
// methods' def lines, with their decorators and default values), a function
// its own statements. The POI's own header is the first line that is not a
// decorator; nested definitions are the def and class lines indented more
// than it, and their bodies the lines after them indented more than they
// are (blank lines and comments inside included).
func pythonOwnCode(code string) string {
	if !strings.Contains(code, "def ") && !strings.Contains(code, "class ") {
		return code
	}
	lines := strings.Split(code, "\n")
	headerIndent := -1
	skipAbove := -1 // while >= 0: drop lines indented more than this
	parens := 0     // open brackets of a nested def's header, which is kept
	changed := false
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " \t")
		indent := len(l) - len(trimmed)
		if parens > 0 {
			// A continuation line of the header: it may close more
			// brackets than it opens (`    b):`), which is what ends it.
			parens = max(parens+bracketBalance(l), 0)
			continue
		}
		if skipAbove >= 0 {
			if trimmed == "" || trimmed[0] == '#' || indent > skipAbove {
				if l != "" {
					lines[i] = ""
					changed = true
				}
				continue
			}
			skipAbove = -1
		}
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if headerIndent < 0 {
			if trimmed[0] != '@' {
				headerIndent = indent
			}
			continue
		}
		if indent > headerIndent && isPythonDef(trimmed) {
			skipAbove = indent
			parens = max(bracketBalance(l), 0)
		}
	}
	if !changed {
		return code
	}
	return strings.Join(lines, "\n")
}

// isPythonDef reports whether a stripped line starts a def or class.
func isPythonDef(s string) bool {
	for _, kw := range []string{"def ", "async def ", "class "} {
		if strings.HasPrefix(s, kw) {
			return true
		}
	}
	return false
}

// bracketBalance counts the brackets a line opens minus those it closes,
// negative when it closes more (a header's continuation line), ignoring
// string contents roughly (a quote toggles).
func bracketBalance(l string) int {
	n := 0
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '#':
			return n
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			n++
		case c == ')' || c == ']' || c == '}':
			n--
		}
	}
	return n
}
