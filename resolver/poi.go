package resolver

import "strings"

// POI is a point of interest as received from a backend service (camelCase JSON).
// Build one from untrusted input with DecodePOI, which validates it.
type POI struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	FilePath   string `json:"filePath"`
	LineNumber int    `json:"lineNumber"`
	RawCode    string `json:"rawCode"`
	Context    string `json:"context"`
	// Symbol is the POI's stable fully qualified name, when its analyzer
	// gives one (e.g. "github.com/x/y/pkg.(*T).Method"): references of
	// other POIs can name it instead of its Name (SuppliedReference).
	Symbol string `json:"symbol,omitempty"`
	// References, when not nil (the field present, even empty), are the
	// POI's references as its analyzer supplies them: Extract returns
	// these instead of reading RawCode.
	References []SuppliedReference `json:"references"`
}

// SuppliedReference is a reference an analyzer supplies with a POI: a
// relationship of Type to the POI whose symbol is Symbol, or to the POI
// whose id is TargetID, or to what the name RefName resolves to as a name
// the resolver read from code would (exactly one of the three is set). A
// name reference is how an analyzer that resolves most of a POI's
// references leaves one call site to relay's lexical rule (relay analyze
// --scip, for a call its index does not resolve).
type SuppliedReference struct {
	Type     RelType `json:"type"`
	Symbol   string  `json:"symbol,omitempty"`
	TargetID string  `json:"targetId,omitempty"`
	RefName  string  `json:"name,omitempty"`
}

// Prefixes of the reference names of supplied references: a reference to
// symbol S is named "sym:S", one to POI id I "id:I" (see Extract). The
// names share the name space of the names extracted from code, which never
// hold a colon after a letter, so the two cannot meet.
const (
	SymbolPrefix = "sym:"
	IDPrefix     = "id:"
)

// MaxSymbolBytes is the longest symbol or targetId a POI may hold: its
// reference name (with SymbolPrefix or IDPrefix) must fit MaxNameBytes.
const MaxSymbolBytes = MaxNameBytes - len(SymbolPrefix)

// Name is the reference name r is stored and resolved under: "sym:" and
// its symbol, "id:" and its target id, or its name as given.
func (r SuppliedReference) Name() string {
	switch {
	case r.Symbol != "":
		return SymbolPrefix + r.Symbol
	case r.RefName != "":
		return r.RefName
	}
	return IDPrefix + r.TargetID
}

// IsSupplied reports whether a reference name is that of a supplied
// reference ("sym:…" or "id:…").
func IsSupplied(name string) bool {
	return strings.HasPrefix(name, SymbolPrefix) || strings.HasPrefix(name, IDPrefix)
}

// Known POI types. A POI of any other type is valid data: Extract returns no
// references for it, and it can only be the target of an IMPORTS relationship.
const (
	// TypeFunction is a free function definition.
	TypeFunction = "function_definition"
	// TypeMethod is a method defined in a class, struct or object.
	TypeMethod = "method_definition"
	// TypeClass is a class (or Go struct type) declaration.
	TypeClass = "class_declaration"
	// TypeInterface is an interface declaration.
	TypeInterface = "interface_declaration"
	// TypeVariable is a variable or constant declaration.
	TypeVariable = "variable_declaration"
	// TypeImport is an import statement.
	TypeImport = "import"
)
