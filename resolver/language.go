package resolver

import (
	"path"
	"strings"
)

// language is the source language of a POI, judged by its FilePath's
// extension. Rules that differ between languages depend on it; a file of an
// unknown extension gets the rules of every language at once, as before
// languages were told apart.
type language uint8

const (
	langOther language = iota
	langGo
	langPython
	langJS // JavaScript and TypeScript (jsExtensions)
)

// IsPython reports whether the file at filePath is Python source, by its
// extension.
func IsPython(filePath string) bool { return languageOf(filePath) == langPython }

// languageOf returns the language of the file at filePath.
func languageOf(filePath string) language {
	switch strings.ToLower(path.Ext(filePath)) {
	case ".go":
		return langGo
	case ".py", ".pyi", ".pyw":
		return langPython
	}
	if jsExtensions[strings.ToLower(path.Ext(filePath))] {
		return langJS
	}
	return langOther
}

// keywordsOf returns the keyword table of lang (read-only).
func keywordsOf(lang language) map[string]kwKind {
	switch lang {
	case langGo:
		return goKeywords
	case langPython:
		return pythonKeywords
	case langJS:
		return jsKeywords
	}
	return keywords
}

// goKeywords are Go's keywords that can be followed by "(": a Go function
// may be named like a keyword of another language (lock, with, not).
var goKeywords = map[string]kwKind{
	"if": kwOperator, "else": kwOperator, "for": kwOperator, "switch": kwOperator, "case": kwOperator,
	"default": kwOperator, "return": kwOperator, "go": kwOperator, "defer": kwOperator, "select": kwOperator,
	"range": kwOperator, "chan": kwOperator, "map": kwOperator, "struct": kwOperator, "var": kwOperator,
	"const": kwOperator, "type": kwOperator, "import": kwOperator, "package": kwOperator,
	"goto": kwOperator, "break": kwOperator, "continue": kwOperator, "fallthrough": kwOperator,
	"func": kwDefine, "interface": kwDefine,
}

// pythonKeywords are Python's keywords (and the soft keyword case) that can
// be followed by "(". Names that are keywords or operators in Go, Rust or
// JavaScript (func, map, range, type, select, delete, lock, new, this…) are
// ordinary names in Python: `return func(x)` calls func.
var pythonKeywords = map[string]kwKind{
	"if": kwOperator, "elif": kwOperator, "else": kwOperator, "for": kwOperator, "while": kwOperator,
	"try": kwOperator, "except": kwOperator, "finally": kwOperator, "with": kwOperator, "return": kwOperator,
	"yield": kwOperator, "await": kwOperator, "raise": kwOperator, "not": kwOperator, "and": kwOperator,
	"or": kwOperator, "in": kwOperator, "is": kwOperator, "assert": kwOperator, "del": kwOperator,
	"lambda": kwOperator, "import": kwOperator, "from": kwOperator, "as": kwOperator, "global": kwOperator,
	"nonlocal": kwOperator, "pass": kwOperator, "case": kwOperator, "super": kwOperator,
	"async": kwModifier,
	"def":   kwDefine, "class": kwDefine,
}

// jsKeywords are JavaScript's and TypeScript's keywords that can be
// followed by "(" or precede a called name. Names that are keywords in Go,
// Rust or Python (func, fn, def, map, range, type, select, go, lock,
// lambda, not…) are ordinary names in JavaScript: `return func(x)` calls
// func. void is an operator (`void run()` calls run), not a modifier as in
// Java.
var jsKeywords = map[string]kwKind{
	"if": kwOperator, "else": kwOperator, "for": kwOperator, "while": kwOperator, "do": kwOperator,
	"switch": kwOperator, "case": kwOperator, "default": kwOperator, "try": kwOperator, "catch": kwOperator,
	"finally": kwOperator, "with": kwOperator, "return": kwOperator, "yield": kwOperator, "await": kwOperator,
	"throw": kwOperator, "typeof": kwOperator, "instanceof": kwOperator, "delete": kwOperator, "void": kwOperator,
	"in": kwOperator, "of": kwOperator, "import": kwOperator, "export": kwOperator, "super": kwOperator,
	"this": kwOperator, "extends": kwOperator, "implements": kwOperator, "var": kwOperator, "let": kwOperator,
	"const": kwOperator, "keyof": kwOperator,
	"async": kwModifier, "static": kwModifier,
	"function": kwDefine, "class": kwDefine, "interface": kwDefine, "enum": kwDefine,
	"new": kwNew,
}

// goBuiltins are Go's predeclared functions and types: a call of one (or a
// conversion to one) is not a CALLS reference.
var goBuiltins = map[string]bool{
	"append": true, "cap": true, "clear": true, "close": true, "complex": true, "copy": true, "delete": true,
	"imag": true, "len": true, "make": true, "max": true, "min": true, "new": true, "panic": true,
	"print": true, "println": true, "real": true, "recover": true,
	"any": true, "bool": true, "byte": true, "comparable": true, "complex64": true, "complex128": true,
	"error": true, "float32": true, "float64": true, "int": true, "int8": true, "int16": true, "int32": true,
	"int64": true, "rune": true, "string": true, "uint": true, "uint8": true, "uint16": true, "uint32": true,
	"uint64": true, "uintptr": true,
}
