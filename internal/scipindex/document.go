package scipindex

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/scip-code/scip/bindings/go/scip"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// occ is one occurrence of a document, checked and in byte offsets.
type occ struct {
	index  int // its position in the document, from 1
	symbol string
	parsed *scip.Symbol // nil for a local symbol
	at     span
	enc    span
	hasEnc bool
	roles  int32
}

// def is a definition that becomes a POI.
type def struct {
	symbol, typ, name string
	nameAt            span // the name's occurrence
	raw               span // rawCode
	own               span // where its calls are its own: from its name to its end
	body              int  // where its header ends
	refs              []resolver.SuppliedReference
	seen              map[resolver.SuppliedReference]bool
	fallbacks         int
	occurrences       int // an import statement\'s; none: not code (a docstring\'s "from … import")
}

func (d *def) add(r resolver.SuppliedReference) {
	if d.seen[r] {
		return
	}
	if d.seen == nil {
		d.seen = map[resolver.SuppliedReference]bool{}
	}
	d.seen[r] = true
	d.refs = append(d.refs, r)
}

// mapDocument validates document d (number n of the index) and maps it to
// its analysis:
//
//   - a POI per definition of a function, method (constructors included),
//     class or interface, and per class field or constant whose value is
//     an arrow function or function expression, and (JavaScript,
//     TypeScript) per nested function, which the index names by a
//     document-local symbol. The type comes from the symbol's last
//     descriptor (indexers leave SymbolInformation.kind unset): a method
//     "()." is a method_definition when it belongs to a type "#", else a
//     function_definition; a type is a class_declaration, or in
//     JavaScript and TypeScript an interface_declaration when declared
//     with `interface` (type aliases and enums are not POIs). Several
//     definitions of one symbol (overload signatures) are one POI, the
//     largest. Its extent is the occurrence's enclosing_range, else read
//     from the source (resolver.DefinitionExtent); rawCode is that
//     extent, from its first line's indentation when the index gives
//     none;
//   - with Config.ModulePOIs, a POI for the module's own code, the
//     innermost POI of every call outside the others (named __module__,
//     id "<path>:1:", no symbol; only when it has references);
//   - a POI of type import per import statement, with an IMPORTS
//     reference by symbol to each imported definition the index resolves;
//   - each POI's references: a CALLS reference by symbol per call site
//     (a name followed by "(", or after `new`) inside its extent and not
//     inside a nested POI's, that the index resolves to a function, method
//     or field; a construction `X()` (Python) or `new X()` calls X's
//     constructor (X#__init__(). or X#`<constructor>`().: relay's CALLS
//     targets are functions and methods, not classes); a CALLS reference
//     by name for each call site relay's lexical rule finds
//     (resolver.CallSites) where the index has no occurrence at all,
//     unless it names a method of the language's built-in types
//     (builtinMethods) or is a method forwarding to its own name on
//     another object (delegates);
//     EXTENDS, or IMPLEMENTS after `implements`, to each type the class's
//     or interface's header names as a parent (inheritance).
//
// Local symbols become "local:<path>:<id>" so that they are unique in a
// repository.
func mapDocument(ctx context.Context, n int, d *scip.Document, cfg Config) (File, error) {
	p := d.RelativePath
	fail := func(o *occ, format string, args ...any) error {
		e := &Error{Document: n, Path: p, Reason: fmt.Sprintf(format, args...)}
		if o != nil {
			e.Occurrence = o.index
		}
		return e
	}
	if p == "" || !fs.ValidPath(p) || path.Clean(p) != p {
		return File{}, fail(nil, "relative_path %q is not a clean relative path inside the project", p)
	}
	text := d.Text
	if text == "" {
		if cfg.Source == nil {
			return File{}, fail(nil, "no source root to read the document's text from")
		}
		b, err := fs.ReadFile(cfg.Source, p)
		if err != nil {
			return File{}, fail(nil, "cannot read its source: %v", err)
		}
		text = string(b)
	}
	src := newSource(text, d.PositionEncoding)
	if !utf8.ValidString(text) {
		// JSON would replace the bytes silently; relay does not alter code.
		bad := 0
		for bad < len(text) {
			r, size := utf8.DecodeRuneInString(text[bad:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			bad += size
		}
		return File{}, fail(nil, "its source is not valid UTF-8 (line %d)", src.lineOf(bad)+1)
	}
	js := !resolver.IsPython(p)

	parsed := map[string]*scip.Symbol{}
	occs := make([]occ, 0, len(d.Occurrences))
	for i, o := range d.Occurrences {
		oc := occ{index: i + 1, symbol: o.Symbol, roles: o.SymbolRoles}
		var err error
		if oc.at, err = src.rangeOf(o.Range); err != nil {
			e := fail(&oc, "%v", err).(*Error)
			if len(o.Range) > 0 {
				e.Line = int(o.Range[0]) + 1
			}
			return File{}, e
		}
		line := src.lineOf(oc.at.start) + 1
		if len(o.EnclosingRange) > 0 {
			if oc.enc, err = src.rangeOf(o.EnclosingRange); err != nil {
				e := fail(&oc, "enclosing_range: %v", err).(*Error)
				e.Line = line
				return File{}, e
			}
			oc.hasEnc = true
		}
		if o.Symbol == "" {
			e := fail(&oc, "symbol is empty").(*Error)
			e.Line = line
			return File{}, e
		}
		if !scip.IsLocalSymbol(o.Symbol) {
			ps, ok := parsed[o.Symbol]
			if !ok {
				if ps, err = scip.ParseSymbol(o.Symbol); err != nil {
					e := fail(&oc, "symbol %q: %v", o.Symbol, err).(*Error)
					e.Line = line
					return File{}, e
				}
				parsed[o.Symbol] = ps
			}
			oc.parsed = ps
		}
		occs = append(occs, oc)
	}

	// Definitions, one per symbol.
	defs := map[string]*def{}
	for i := range occs {
		o := &occs[i]
		if o.roles&int32(scip.SymbolRole_Definition) == 0 {
			continue
		}
		typ, name, ok := classify(o, text, js)
		if !ok {
			continue
		}
		df := &def{symbol: relaySymbol(p, o.symbol), typ: typ, name: name, nameAt: o.at}
		needBody := typ == resolver.TypeClass || typ == resolver.TypeInterface
		if o.hasEnc && o.enc.end > o.at.start && o.enc.start <= o.at.start {
			df.raw = o.enc
			df.own = span{o.at.start, o.enc.end}
		} else {
			needBody = true
		}
		if needBody {
			ext, err := resolver.DefinitionExtent(ctx, p, text, o.at.start)
			if err != nil {
				return File{}, fail(o, "%v", err)
			}
			df.body = ext.BodyStart
			if df.own.end == 0 {
				ls := src.lines[src.lineOf(o.at.start)]
				for ls < o.at.start && (text[ls] == ' ' || text[ls] == '\t') {
					ls++
				}
				df.raw = span{ls, ext.End}
				df.own = span{o.at.start, ext.End}
			}
		}
		if old, dup := defs[df.symbol]; dup && old.own.end-old.own.start >= df.own.end-df.own.start {
			continue
		}
		defs[df.symbol] = df
	}
	// Import statements.
	for _, st := range importStatements(text, js) {
		defs[fmt.Sprintf("\x00import %d", st.start)] = &def{typ: resolver.TypeImport, raw: st, own: st, body: st.end}
	}
	// The module's own code (Config.ModulePOIs): the whole document, so
	// that it is the innermost POI of every call outside the others.
	var module *def
	if cfg.ModulePOIs {
		module = &def{typ: resolver.TypeFunction, name: moduleName, own: span{0, len(text)}, raw: span{0, len(text)}}
		defs["\x00module"] = module
	}
	sorted := make([]*def, 0, len(defs))
	for _, df := range defs {
		sorted = append(sorted, df)
	}
	slices.SortFunc(sorted, func(a, b *def) int {
		return cmp.Or(cmp.Compare(a.own.start, b.own.start), cmp.Compare(b.own.end, a.own.end), cmp.Compare(a.symbol, b.symbol))
	})
	// innermost returns the POI whose own extent holds off most closely:
	// sorted by start, then the larger first, it is the last POI that
	// starts at or before off and holds it.
	innermost := func(off int) *def {
		i, _ := slices.BinarySearchFunc(sorted, off+1, func(df *def, t int) int { return cmp.Compare(df.own.start, t) })
		for i--; i >= 0; i-- {
			if df := sorted[i]; off < df.own.end || off == df.own.start {
				return df
			}
		}
		return nil
	}

	known := make(map[int]bool, len(occs)) // offsets where the index has an occurrence
	for i := range occs {
		known[occs[i].at.start] = true
	}
	for i := range occs {
		o := &occs[i]
		if o.roles&int32(scip.SymbolRole_Definition) != 0 {
			continue
		}
		df := innermost(o.at.start)
		if df == nil {
			continue
		}
		if o.at.start >= df.nameAt.start && o.at.start < df.nameAt.end {
			continue // on the POI's own name, where only its definition belongs: no reference
		}
		if df.typ == resolver.TypeImport {
			df.occurrences++
			if o.parsed != nil && importable(o.parsed) {
				df.add(resolver.SuppliedReference{Type: resolver.Imports, Symbol: o.symbol})
				if df.name == "" {
					df.name = text[o.at.start:o.at.end]
				}
			}
			continue
		}
		if (df.typ == resolver.TypeClass || df.typ == resolver.TypeInterface) && o.at.start < df.body {
			if rt, ok := inheritance(o, df, text, js); ok {
				df.add(resolver.SuppliedReference{Type: rt, Symbol: o.symbol})
			}
		}
		if df.typ == resolver.TypeInterface || !isCallSite(text, o.at, js) {
			continue
		}
		if target := callTarget(o, defs, p, js); target != "" {
			df.add(resolver.SuppliedReference{Type: resolver.Calls, Symbol: target})
		}
	}

	// `super(…)` in a JavaScript constructor calls the parent class's
	// constructor, which the index does not say (it has no occurrence
	// there): the parent is the class's EXTENDS, its constructor that
	// symbol's `<constructor>`().
	if js {
		for _, df := range sorted {
			if df.typ != resolver.TypeMethod || df.name != "constructor" || df.nameAt.start == 0 {
				continue
			}
			class := innermost(df.nameAt.start - 1)
			if class == nil || class.typ != resolver.TypeClass || !superCall.MatchString(text[df.own.start:df.own.end]) {
				continue
			}
			for _, r := range class.refs {
				if r.Type == resolver.Extends {
					df.add(resolver.SuppliedReference{Type: resolver.Calls, Symbol: r.Symbol + "`<constructor>`()."})
				}
			}
		}
	}

	// The lexical rule at the call sites the index has nothing at.
	fallbacks := 0
	for _, df := range sorted {
		if df.typ != resolver.TypeFunction && df.typ != resolver.TypeMethod && df.typ != resolver.TypeClass {
			continue
		}
		raw := text[df.raw.start:df.raw.end]
		if df == module {
			raw = moduleCode(text, sorted, module)
		}
		sites, err := resolver.CallSites(ctx, resolver.POI{ID: df.symbol, Type: df.typ, Name: df.name, FilePath: p, RawCode: raw})
		if err != nil {
			return File{}, fail(nil, "%v", err)
		}
		first := src.lineOf(df.raw.start)
		for _, s := range sites {
			line := first + s.Line
			if line >= len(src.lines) {
				continue
			}
			off := src.lines[line] + s.Column
			if s.Line == 0 {
				off = df.raw.start + s.Column
			}
			if known[off] || innermost(off) != df || builtinMethods[js][s.Name] || delegates(text, off, df, s.Name) {
				continue
			}
			df.add(resolver.SuppliedReference{Type: resolver.Calls, RefName: s.Name})
			df.fallbacks++
			fallbacks++
		}
	}

	// The POIs, in source order.
	pois := make([]json.RawMessage, 0, len(sorted))
	ids := map[string]int{}
	for _, df := range sorted {
		if df.typ == resolver.TypeImport && df.occurrences == 0 {
			continue
		}
		if df.typ == resolver.TypeImport && df.name == "" {
			df.name = importName(text[df.raw.start:df.raw.end])
			if df.name == "" {
				continue
			}
		}
		rawCode := text[df.raw.start:df.raw.end]
		line := src.lineOf(df.own.start) + 1
		id := fmt.Sprintf("%s:%d:%s", p, line, df.name)
		if df == module {
			if len(df.refs) == 0 {
				continue
			}
			rawCode, id = moduleCode(text, sorted, module), p+":1:"
		}
		if k := ids[id]; k > 0 {
			ids[id] = k + 1
			id = fmt.Sprintf("%s#%d", id, k+1)
		} else {
			ids[id] = 1
		}
		slices.SortFunc(df.refs, func(a, b resolver.SuppliedReference) int {
			return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name(), b.Name()))
		})
		refs := df.refs
		if refs == nil {
			refs = []resolver.SuppliedReference{}
		}
		poi := resolver.POI{ID: id, Type: df.typ, Name: df.name, FilePath: p, LineNumber: line,
			RawCode: rawCode, Symbol: df.symbol, References: refs}
		raw, err := json.Marshal(poi)
		if err != nil {
			return File{}, fail(nil, "error encoding poi %q: %v", id, err)
		}
		pois = append(pois, raw)
	}
	return File{Analysis: outbox.Analysis{FileID: p, POIs: pois}, Occurrences: len(occs), POIs: len(pois), Fallbacks: fallbacks}, nil
}

// moduleName is the name of a module's POI (Config.ModulePOIs), as the
// accuracy harness's Python extractor names it.
const moduleName = "__module__"

// moduleCode is the module POI's rawCode: the document with the text of
// every other POI (definitions, decorators and imports) blanked, its line
// breaks kept, so that lines and columns stay the document's and what is
// left is the top-level code.
func moduleCode(text string, defs []*def, module *def) string {
	b := []byte(text)
	for _, df := range defs {
		if df == module {
			continue
		}
		for i := min(df.raw.start, df.own.start); i < max(df.raw.end, df.own.end); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// superCall matches a call of the parent's constructor, `super(`.
var superCall = regexp.MustCompile(`\bsuper\s*\(`)

// relaySymbol is the symbol a POI of SCIP symbol s in document p carries:
// s, or for a local symbol "local:<p>:<id>".
func relaySymbol(p, s string) string {
	if id, ok := strings.CutPrefix(s, "local "); ok {
		return "local:" + p + ":" + id
	}
	return s
}

// classify returns the POI type and name of a definition occurrence, or
// ok false when it is not a POI.
func classify(o *occ, text string, js bool) (typ, name string, ok bool) {
	if o.parsed == nil { // a local symbol: a nested JS function
		name = text[o.at.start:o.at.end]
		if js && resolver.IsIdentifier(name) && (afterFunctionKeyword(text, o.at.start) || isFunctionValue(text, o.at.end)) {
			return resolver.TypeFunction, name, true
		}
		return "", "", false
	}
	ds := o.parsed.Descriptors
	if len(ds) == 0 {
		return "", "", false
	}
	last := ds[len(ds)-1]
	parentIsType := len(ds) > 1 && ds[len(ds)-2].Suffix == scip.Descriptor_Type
	name = last.Name
	switch last.Suffix {
	case scip.Descriptor_Method:
		if name == "<constructor>" {
			name = "constructor"
		}
		if parentIsType {
			return resolver.TypeMethod, name, true
		}
		return resolver.TypeFunction, name, true
	case scip.Descriptor_Type:
		if !js {
			return resolver.TypeClass, name, true
		}
		switch w, _ := wordBefore(text, o.at.start); w {
		case "class":
			return resolver.TypeClass, name, true
		case "interface":
			return resolver.TypeInterface, name, true
		}
	case scip.Descriptor_Term:
		if js && isFunctionValue(text, o.at.end) {
			if parentIsType {
				return resolver.TypeMethod, name, true
			}
			return resolver.TypeFunction, name, true
		}
	}
	return "", "", false
}

// importable reports whether a symbol an import statement names is a
// definition that can be a POI (not a module or namespace).
func importable(s *scip.Symbol) bool {
	if len(s.Descriptors) == 0 {
		return false
	}
	switch s.Descriptors[len(s.Descriptors)-1].Suffix {
	case scip.Descriptor_Method, scip.Descriptor_Type, scip.Descriptor_Term:
		return true
	}
	return false
}

// inheritance returns the relationship a class's or interface's header
// occurrence o makes, when o names a type: a base class in Python's
// `class C(A, B):` (not a keyword argument such as metaclass=, nor inside
// [...]); in JavaScript and TypeScript a type after `extends`, or after
// `implements` (IMPLEMENTS), outside type arguments <...>. The header, not
// the symbol's relationships, decides: indexers list inherited types
// there too, and leave some out (scip-typescript for an interface's
// extends, scip-python for some of pyparsing's classes). An occurrence
// that starts before the class's name ends (on the name itself, as a
// malformed or odd index may put one) makes none.
func inheritance(o *occ, df *def, text string, js bool) (resolver.RelType, bool) {
	if o.at.start < df.nameAt.end {
		return "", false
	}
	if o.parsed == nil || len(o.parsed.Descriptors) == 0 || o.parsed.Descriptors[len(o.parsed.Descriptors)-1].Suffix != scip.Descriptor_Type {
		return "", false
	}
	head := text[df.nameAt.end:o.at.start]
	if after := skipSpaces(text, o.at.end); after < len(text) && text[after] == '.' {
		return "", false // a qualifier (`ppu.Latin1`): the base is the name after it
	}
	if !js {
		depth, square := 0, 0
		for i := 0; i < len(head); i++ {
			switch head[i] {
			case '(':
				depth++
			case ')':
				depth--
			case '[':
				square++
			case ']':
				square--
			}
		}
		before := strings.TrimRight(head, " \t\n")
		if depth != 1 || square != 0 || strings.HasSuffix(before, "=") || strings.HasSuffix(before, ".") && !isQualified(head) {
			return "", false
		}
		return resolver.Extends, true
	}
	angle := 0
	for i := 0; i < len(head); i++ {
		switch {
		case head[i] == '<':
			angle++
		case head[i] == '>' && (i == 0 || head[i-1] != '='):
			angle--
		}
	}
	if angle != 0 {
		return "", false
	}
	ext, impl := lastWord(head, "extends"), lastWord(head, "implements")
	switch {
	case impl > ext && df.typ == resolver.TypeClass:
		return resolver.Implements, true
	case ext >= 0 || impl >= 0:
		return resolver.Extends, true
	}
	return "", false
}

// isQualified reports whether a Python header's text before a base ends
// with a module path (`(mod.Base`): the base is still a base.
func isQualified(head string) bool {
	i := strings.LastIndexAny(head, "(,")
	return i >= 0 && isDottedName(strings.TrimSpace(head[i+1:]))
}

// isDottedName reports whether s is `a.b.` (names each followed by a dot).
func isDottedName(s string) bool {
	for _, part := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if !resolver.IsIdentifier(part) {
			return false
		}
	}
	return strings.HasSuffix(s, ".")
}

// lastWord returns the offset of the last occurrence of word w in s, or -1.
func lastWord(s, w string) int {
	for end := len(s); ; {
		k := strings.LastIndex(s[:end], w)
		if k < 0 {
			return -1
		}
		if (k == 0 || !resolver.IsIdentByte(s[k-1])) && (k+len(w) == len(s) || !resolver.IsIdentByte(s[k+len(w)])) {
			return k
		}
		end = k
	}
}

// callTarget returns the symbol a call at occurrence o calls, or "" when
// it is not a POI relay makes (a parameter, a variable, a module).
func callTarget(o *occ, defs map[string]*def, p string, js bool) string {
	if o.parsed == nil {
		s := relaySymbol(p, o.symbol)
		if df := defs[s]; df != nil && df.typ == resolver.TypeFunction {
			return s
		}
		return ""
	}
	ds := o.parsed.Descriptors
	if len(ds) == 0 {
		return ""
	}
	switch ds[len(ds)-1].Suffix {
	case scip.Descriptor_Method, scip.Descriptor_Term:
		return o.symbol
	case scip.Descriptor_Type:
		// `super()` is Python's builtin, not a construction.
		if !js && !(ds[len(ds)-1].Name == "super" && len(ds) == 2 && ds[0].Name == "builtins") {
			return o.symbol + "__init__()."
		}
	}
	return ""
}
