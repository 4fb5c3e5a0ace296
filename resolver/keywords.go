package resolver

// kwKind says how a keyword affects call detection.
type kwKind uint8

const (
	// kwNone: not a keyword.
	kwNone kwKind = iota
	// kwOperator: not a call itself; a name right after it can be called (`return foo()`).
	kwOperator
	// kwModifier: not a call itself; a name right after it is being declared (`async foo() {`).
	kwModifier
	// kwDefine: introduces a definition; the next name is defined, not called (`function foo(`).
	kwDefine
	// kwNew: the (possibly qualified) name after it is constructed, not called (`new Foo()`).
	kwNew
)

// keywords are the words of JavaScript, TypeScript, Python, Go, Java and C-like
// languages that can be followed by "(" without being a call. A member access
// (`promise.catch(`) is never looked up here: after a dot any name is a call.
// Read-only lookup table.
var keywords = map[string]kwKind{
	// Control flow and operators.
	"if": kwOperator, "elif": kwOperator, "else": kwOperator, "for": kwOperator, "foreach": kwOperator,
	"while": kwOperator, "do": kwOperator, "switch": kwOperator, "case": kwOperator, "default": kwOperator,
	"try": kwOperator, "catch": kwOperator, "finally": kwOperator, "except": kwOperator, "with": kwOperator,
	"return": kwOperator, "yield": kwOperator, "await": kwOperator, "throw": kwOperator, "raise": kwOperator,
	"typeof": kwOperator, "instanceof": kwOperator, "sizeof": kwOperator, "delete": kwOperator,
	"not": kwOperator, "and": kwOperator, "or": kwOperator, "in": kwOperator, "of": kwOperator, "is": kwOperator,
	"assert": kwOperator, "del": kwOperator, "lambda": kwOperator, "import": kwOperator, "from": kwOperator,
	"go": kwOperator, "defer": kwOperator, "select": kwOperator, "range": kwOperator, "chan": kwOperator,
	"map": kwOperator, "struct": kwOperator, "var": kwOperator, "let": kwOperator, "const": kwOperator,
	"type": kwOperator, "super": kwOperator, "this": kwOperator, "extends": kwOperator, "implements": kwOperator,
	"synchronized": kwOperator, "using": kwOperator, "lock": kwOperator,
	// Modifiers that precede a declared name.
	"async": kwModifier, "static": kwModifier, "void": kwModifier,
	// Definitions.
	"function": kwDefine, "def": kwDefine, "func": kwDefine, "fn": kwDefine, "class": kwDefine,
	"interface": kwDefine, "enum": kwDefine,
	// Construction.
	"new": kwNew,
}
