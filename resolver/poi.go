package resolver

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
