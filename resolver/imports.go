package resolver

import (
	"context"
	"path"
	"strings"
)

// jsExtensions are file extensions of JavaScript-family files, where
// `import "x"` is a side-effect import rather than a Go import. Read-only lookup table.
var jsExtensions = map[string]bool{
	".js": true, ".jsx": true, ".mjs": true, ".cjs": true,
	".ts": true, ".tsx": true, ".mts": true, ".cts": true,
	".vue": true, ".svelte": true,
}

// extractImports adds the IMPORTS references of an import POI: the names its
// import statements bring in, or the POI's own Name when no import statement
// can be parsed from its code.
func extractImports(ctx context.Context, p POI, refs *refSet) error {
	ip := importParser{
		z:    newTokenizer(ctx, p.RawCode),
		js:   jsExtensions[strings.ToLower(path.Ext(p.FilePath))],
		refs: refs,
	}
	ip.run()
	if err := scanError(ip.z, p, "imports"); err != nil {
		return err
	}
	if !ip.recognized {
		refs.add(Imports, p.Name)
	}
	return nil
}

// importParser reads the import statements of JavaScript, TypeScript, Python,
// Go and Java.
type importParser struct {
	z          *tokenizer
	js         bool // the file is JavaScript or TypeScript
	refs       *refSet
	recognized bool // an import statement was parsed, even one importing no names
}

// add records an imported name.
func (ip *importParser) add(name string) { ip.refs.add(Imports, name) }

// run dispatches on each statement keyword.
func (ip *importParser) run() {
	var prev token
	for {
		t := ip.z.next()
		if t.kind == tokEOF {
			return
		}
		if t.kind == tokIdent && !isMemberAccess(prev) {
			switch t.text {
			case "import":
				ip.importStatement()
			case "from":
				ip.pythonFrom()
			case "export":
				ip.exportFrom()
			case "const", "let", "var":
				ip.require()
			}
		}
		prev = t
	}
}

// importStatement reads what follows `import`.
func (ip *importParser) importStatement() {
	for {
		t := ip.z.peek()
		switch {
		case t.kind == tokString: // Go `import "fmt"`, or a JS side-effect import
			ip.z.next()
			ip.recognized = true
			if !ip.js {
				ip.add(goPackageName(stringContent(t)))
			}
			return
		case t.isPunct("("): // Go import group, or a JS dynamic import()
			if !ip.js {
				ip.z.next()
				ip.goGroup()
			}
			return
		case t.isPunct("{") || t.isPunct("*"):
			ip.jsClause(nil)
			return
		case t.kind == tokIdent || t.isPunct("."):
		default:
			return
		}
		after := ip.z.peekAt(1)
		switch {
		case after.kind == tokString: // Go `import m "math"`, `import . "x"`, `import _ "embed"`
			ip.z.next()
			ip.z.next()
			ip.recognized = true
			ip.add(goPackageName(stringContent(after)))
			return
		case t.isPunct("."):
			return
		case (t.text == "type" || t.text == "typeof") &&
			(after.isPunct("{") || after.isPunct("*") || after.kind == tokIdent && !after.isIdent("from")):
			ip.z.next() // TypeScript `import type …`
		case t.text == "static" && after.kind == tokIdent:
			ip.z.next() // Java `import static …`
		default:
			ip.dottedImports()
			return
		}
	}
}

// dottedImports reads `import a.b.C;` (Java), `import a.b as c, d` (Python),
// `import X from 'y'` and `import X, { y } from 'z'` (JavaScript) and
// `import X = require('y')` (TypeScript).
func (ip *importParser) dottedImports() {
	for {
		first := ip.z.next()
		if first.kind != tokIdent {
			return
		}
		last, segments, wildcard := first.text, 1, false
		for ip.z.peek().isPunct(".") {
			n := ip.z.peekAt(1)
			if n.kind == tokIdent {
				ip.z.next()
				ip.z.next()
				last = n.text
				segments++
				continue
			}
			if n.isPunct("*") {
				ip.z.next()
				ip.z.next()
				wildcard = true
			}
			break
		}
		nx := ip.z.peek()
		if segments == 1 {
			switch {
			case nx.isIdent("from"): // JavaScript default import
				ip.jsClause([]string{first.text})
				return
			case nx.isPunct(",") && (ip.z.peekAt(1).isPunct("{") || ip.z.peekAt(1).isPunct("*")):
				ip.z.next()
				ip.jsClause([]string{first.text})
				return
			case nx.isPunct("="): // TypeScript import-equals
				ip.recognized = true
				ip.add(first.text)
				return
			}
		}
		ip.recognized = true
		if !wildcard {
			ip.add(last)
		}
		if nx.isIdent("as") { // Python alias: the imported name is the module's
			ip.z.next()
			if ip.z.peek().kind == tokIdent {
				ip.z.next()
			}
			nx = ip.z.peek()
		}
		if !nx.isPunct(",") || nx.nlBefore {
			return
		}
		ip.z.next()
		if n := ip.z.peek(); n.kind != tokIdent || n.nlBefore {
			return
		}
	}
}

// jsClause reads the rest of a JavaScript import or re-export clause: an
// optional `* as ns` or `{ a, b as c }`, then `from 'module'`. The names,
// with defaults (a default import's local name), are recorded only when the
// `from` clause is there.
func (ip *importParser) jsClause(names []string) {
	switch t := ip.z.peek(); {
	case t.isPunct("*"): // namespace import: no names
		ip.z.next()
		if ip.z.peek().isIdent("as") {
			ip.z.next()
			if ip.z.peek().kind == tokIdent {
				ip.z.next()
			}
		}
	case t.isPunct("{"):
		ip.z.next()
		names = ip.namedList(names)
	}
	if !ip.z.peek().isIdent("from") {
		return
	}
	ip.z.next()
	if ip.z.peek().kind != tokString {
		return
	}
	ip.z.next()
	ip.recognized = true
	for _, n := range names {
		ip.add(n)
	}
}

// namedList reads `a, b as c, type D, default as E }` after a "{" and appends
// the exported names (a, b, D); `default` is not a name.
func (ip *importParser) namedList(names []string) []string {
	for {
		t := ip.z.next()
		switch {
		case t.kind == tokEOF || t.isPunct("}"):
			return names
		case t.isIdent("type") && ip.z.peek().kind == tokIdent && !ip.z.peek().isIdent("as"):
			// TypeScript inline `type D`: the name follows.
		case t.kind == tokIdent || t.kind == tokString:
			if t.kind == tokIdent && t.text != "default" {
				names = append(names, t.text)
			}
			if ip.z.peek().isIdent("as") {
				ip.z.next()
				if a := ip.z.peek(); a.kind == tokIdent || a.kind == tokString {
					ip.z.next()
				}
			}
		}
	}
}

// exportFrom reads a JavaScript re-export: `export { a } from './x'`,
// `export * from './x'`, `export type { T } from './x'`.
func (ip *importParser) exportFrom() {
	t := ip.z.peek()
	if t.isIdent("type") && ip.z.peekAt(1).isPunct("{") {
		ip.z.next()
		t = ip.z.peek()
	}
	if t.isPunct("{") || t.isPunct("*") {
		ip.jsClause(nil)
	}
}

// pythonFrom reads `from module import a, b as c`, `from . import (a,\n b)`
// and `from x import *` after `from`.
func (ip *importParser) pythonFrom() {
	for {
		t := ip.z.peek()
		if t.nlBefore {
			return
		}
		if t.isIdent("import") {
			ip.z.next()
			break
		}
		if !t.isPunct(".") && t.kind != tokIdent {
			return
		}
		ip.z.next()
	}
	ip.recognized = true
	paren := ip.z.peek().isPunct("(")
	if paren {
		ip.z.next()
	}
	for {
		t := ip.z.peek()
		switch {
		case t.kind == tokEOF, !paren && t.nlBefore:
			return
		case paren && t.isPunct(")"):
			ip.z.next()
			return
		case t.isPunct(",") || t.isPunct("*"):
			ip.z.next()
		case t.kind == tokIdent:
			ip.z.next()
			ip.add(t.text)
			if a := ip.z.peek(); a.isIdent("as") && (paren || !a.nlBefore) {
				ip.z.next()
				if alias := ip.z.peek(); alias.kind == tokIdent && (paren || !alias.nlBefore) {
					ip.z.next()
				}
			}
		default:
			return
		}
	}
}

// require reads CommonJS `const { a, b: c } = require('./x')` and
// `const X = require('x')` (or `await import('x')`) after const, let or var.
func (ip *importParser) require() {
	var names []string
	switch t := ip.z.peek(); {
	case t.isPunct("{"):
		ip.z.next()
		names = ip.destructure()
	case t.kind == tokIdent:
		ip.z.next()
		names = []string{t.text}
	default:
		return
	}
	if !ip.z.peek().isPunct("=") {
		return
	}
	ip.z.next()
	if ip.z.peek().isIdent("await") {
		ip.z.next()
	}
	if callee := ip.z.peek(); !callee.isIdent("require") && !callee.isIdent("import") {
		return
	}
	ip.z.next()
	if !ip.z.peek().isPunct("(") || ip.z.peekAt(1).kind != tokString {
		return
	}
	ip.z.next()
	ip.z.next()
	ip.recognized = true
	for _, n := range names {
		ip.add(n)
	}
}

// destructure reads an object pattern `a, b: c, d = 1, ...rest }` after its
// "{" and returns the property names (a, b, d).
func (ip *importParser) destructure() []string {
	var names []string
	depth, expectKey := 0, true
	for {
		t := ip.z.next()
		switch {
		case t.kind == tokEOF:
			return names
		case t.isPunct("{") || t.isPunct("[") || t.isPunct("("):
			depth++
			expectKey = false
		case t.isPunct("}") || t.isPunct("]") || t.isPunct(")"):
			if depth == 0 {
				return names
			}
			depth--
		case depth > 0:
		case t.isPunct(","):
			expectKey = true
		case expectKey && t.kind == tokIdent:
			names = append(names, t.text)
			expectKey = false
		default:
			expectKey = false
		}
	}
}

// goGroup reads a Go import group after its "(": each path, aliased or not.
func (ip *importParser) goGroup() {
	ip.recognized = true
	for {
		t := ip.z.next()
		switch {
		case t.kind == tokEOF || t.isPunct(")"):
			return
		case t.kind == tokString:
			ip.add(goPackageName(stringContent(t)))
		}
	}
}

// goPackageName returns the package name a Go import path conventionally
// binds: its last element, skipping a major-version element (`x/y/v2` -> y)
// or suffix (`gopkg.in/yaml.v3` -> yaml). It returns "" for a relative path
// or one whose name is not an identifier (`go-spew`).
func goPackageName(importPath string) string {
	importPath = strings.TrimRight(importPath, "/")
	if importPath == "" || importPath[0] == '.' || importPath[0] == '/' {
		return ""
	}
	dir, last := "", importPath
	if i := strings.LastIndexByte(importPath, '/'); i >= 0 {
		dir, last = importPath[:i], importPath[i+1:]
	}
	if isMajorVersion(last) && dir != "" {
		last = dir[strings.LastIndexByte(dir, '/')+1:]
	}
	if i := strings.LastIndex(last, ".v"); i > 0 && isMajorVersion(last[i+1:]) {
		last = last[:i]
	}
	if !isIdentifier(last) {
		return ""
	}
	return last
}

// isMajorVersion reports whether s is a major-version element such as v2.
func isMajorVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
