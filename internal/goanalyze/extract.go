// Package goanalyze turns Go source files into relay analyses: it parses each
// file with go/parser and makes one POI per function, method, type and
// import, whose rawCode is the declaration's exact source text, so that relay
// can resolve the calls, embeddings and imports between them. With typed
// references (WalkWith, Publish's default) the type checker supplies each
// function, method and type POI's symbol and references instead (see
// ReferencesTyped).
package goanalyze

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/relay-dev/relay/resolver"
)

// ParseError is a file that could not be parsed; it is reported and skipped.
type ParseError struct {
	// File is the path relative to the analysed directory (forward slashes).
	File string `json:"file"`
	// Line is where the first error is (0 when unknown).
	Line int `json:"line"`
	// Message is the parser's message.
	Message string `json:"message"`
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// Extract parses src, the Go file at relPath (relative to the analysed
// directory, forward slashes), and returns its POIs in source order: imports
// (named after the package they import), functions, methods (named after the
// method), and types (interface_declaration for interfaces,
// class_declaration for every other type). Each POI's id is
// "<relPath>:<line>:<name>", unique within the file. A file that does not
// parse returns a *ParseError.
func Extract(relPath string, src []byte) ([]resolver.POI, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, relPath, src, parser.SkipObjectResolution)
	if err != nil {
		pe := &ParseError{File: relPath, Message: err.Error()}
		if list, ok := err.(scanner.ErrorList); ok && len(list) > 0 {
			pe.Line, pe.Message = list[0].Pos.Line, list[0].Msg
		}
		return nil, pe
	}
	x := extractor{fset: fset, src: src, file: relPath, ids: map[string]int{}}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			typ := resolver.TypeFunction
			if d.Recv != nil {
				typ = resolver.TypeMethod
			}
			x.add(typ, d.Name.Name, d.Pos(), d.End())
		case *ast.GenDecl:
			x.genDecl(d)
		}
	}
	return x.pois, nil
}

type extractor struct {
	fset *token.FileSet
	src  []byte
	file string
	ids  map[string]int
	pois []resolver.POI
}

func (x *extractor) genDecl(d *ast.GenDecl) {
	grouped := d.Lparen.IsValid()
	for _, spec := range d.Specs {
		// A declaration of one spec is taken whole ("type T struct{...}",
		// `import "fmt"`); a spec of a group is its own text.
		from, to := spec.Pos(), spec.End()
		if !grouped {
			from, to = d.Pos(), d.End()
		}
		switch s := spec.(type) {
		case *ast.ImportSpec:
			if name := importName(s); name != "" {
				x.add(resolver.TypeImport, name, from, to)
			}
		case *ast.TypeSpec:
			typ := resolver.TypeClass
			if _, ok := s.Type.(*ast.InterfaceType); ok {
				typ = resolver.TypeInterface
			}
			x.add(typ, s.Name.Name, from, to)
		}
	}
}

func (x *extractor) add(typ, name string, from, to token.Pos) {
	if name == "_" || name == "" {
		return
	}
	pos := x.fset.Position(from)
	end := x.fset.Position(to)
	code := string(x.src[pos.Offset:end.Offset])
	if !utf8.ValidString(code) || strings.ContainsRune(code, 0) {
		// PostgreSQL cannot store it; the Go compiler rejects such files too.
		code = strings.ReplaceAll(strings.ToValidUTF8(code, "\uFFFD"), "\x00", "\uFFFD")
	}
	id := fmt.Sprintf("%s:%d:%s", x.file, pos.Line, name)
	if n := x.ids[id]; n > 0 {
		x.ids[id] = n + 1
		id += "#" + strconv.Itoa(n+1)
	} else {
		x.ids[id] = 1
	}
	x.pois = append(x.pois, resolver.POI{ID: id, Type: typ, Name: name, FilePath: x.file, LineNumber: pos.Line, RawCode: code})
}

// importName is the name an import brings into scope: its explicit name, or
// the last element of its path (skipping a major version suffix such as
// /v2, and a gopkg.in ".vN"). Blank and dot imports name nothing.
func importName(s *ast.ImportSpec) string {
	if s.Name != nil {
		if s.Name.Name == "_" || s.Name.Name == "." {
			return ""
		}
		return s.Name.Name
	}
	p, err := strconv.Unquote(s.Path.Value)
	if err != nil {
		return ""
	}
	elem := path.Base(p)
	if isMajorVersion(elem) && path.Dir(p) != "." {
		elem = path.Base(path.Dir(p))
	}
	if i := strings.Index(elem, ".v"); i > 0 && isDigits(elem[i+2:]) {
		elem = elem[:i]
	}
	return elem
}

func isMajorVersion(s string) bool { return len(s) > 1 && s[0] == 'v' && isDigits(s[1:]) }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
