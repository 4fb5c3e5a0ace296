package resolver

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// Accepts reports whether a POI of targetType can be the target of a
// relationship of type rt:
//
//	CALLS      -> function_definition, method_definition
//	EXTENDS    -> class_declaration, interface_declaration
//	IMPLEMENTS -> interface_declaration
//	IMPORTS    -> any type except import
//
// An unknown rt accepts nothing.
func Accepts(rt RelType, targetType string) bool {
	switch rt {
	case Calls:
		return targetType == TypeFunction || targetType == TypeMethod
	case Extends:
		return targetType == TypeClass || targetType == TypeInterface
	case Implements:
		return targetType == TypeInterface
	case Imports:
		return targetType != TypeImport
	}
	return false
}

// Candidate is a POI in the symbol table that has a referenced name.
type Candidate struct {
	POIID  string
	FileID string
	Name   string
	Type   string
	// Receiver is the type a Go method is declared on (Receiver of the
	// POI), "" for any other POI.
	Receiver string
	// Result is a Go function's or method's first result type
	// (ResultType of the POI), Fields a Go struct type's fields with their
	// types (FieldTypes); "" for any other POI.
	Result, Fields string
}

// Outcome is the result of looking a reference up.
type Outcome int

// Lookup outcomes.
const (
	// Resolved: exactly one target was found.
	Resolved Outcome = iota
	// Unknown: no target was found.
	Unknown
	// Ambiguous: more than one target was found, so none is chosen.
	Ambiguous
)

// String returns "resolved", "unknown" or "ambiguous".
func (o Outcome) String() string {
	switch o {
	case Resolved:
		return "resolved"
	case Unknown:
		return "unknown"
	case Ambiguous:
		return "ambiguous"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Lookup applies the name lookup rule for reference ref of the POI sourceID in
// file sourceFile, and returns the target's POI id when the outcome is Resolved.
//
// A candidate counts when its Name is ref.Name, Accepts(ref.Type, its Type)
// holds, and it is not the source POI itself: there are never self edges, so
// a recursive call creates none. For IMPORTS, candidates in the source file do
// not count either: an import names another file's POI. A Go file's IMPORTS
// name read from rawCode (a package's name) is Unknown: a package is no POI.
// Only supplied references link a Go import.
//
// Counting candidates in the source file win: exactly one is Resolved, two or
// more are Ambiguous (with no fallback to other files). With none there, one
// counting candidate anywhere is Resolved, more are Ambiguous, none is Unknown.
// Candidates are counted by distinct POIID, so a repeated row does not make a
// name ambiguous, and the order of cands does not matter.
//
// A supplied reference ("sym:…", "id:…", see IsSupplied) follows this rule
// in every language; its candidates are the POIs of that symbol or id, with
// Name set to the reference's name.
func Lookup(sourceID, sourceFile string, ref Reference, cands []Candidate) (targetID string, outcome Outcome) {
	if (ref.Type == Calls || ref.Type == Extends) && languageOf(sourceFile) == langGo && !IsSupplied(ref.Name) {
		r, ok := ParseGoRef(ref.Name)
		if !ok {
			return "", Unknown // a qualifier "(" without its ")" names nothing
		}
		return lookupGo(sourceID, sourceFile, r, ref.Type, cands, 0)
	}
	if ref.Type == Imports && languageOf(sourceFile) == langGo && !IsSupplied(ref.Name) {
		return "", Unknown // a Go import names a package, which is no POI (not the tree's func sort)
	}
	var local, global distinctIDs
	for _, c := range cands {
		if c.Name != ref.Name || c.POIID == sourceID || !Accepts(ref.Type, c.Type) {
			continue
		}
		if c.FileID == sourceFile {
			if ref.Type == Imports {
				continue
			}
			local.add(c.POIID)
		}
		global.add(c.POIID)
	}
	return decide(local, global)
}

// LookupElsewhere applies the rule for a supplied reference by symbol
// ("sym:…") that Lookup left Unknown in its own repository: cands are the
// POIs carrying that symbol in the other repositories (Name set to the
// reference's name, as for Lookup). Exactly one counting candidate (by
// Accepts) is Resolved, and its index in cands returned; more are
// Ambiguous, none Unknown. A POI id may repeat across repositories, so
// candidates are counted by position, not by id. Any other reference is
// Unknown: names and ids never resolve across repositories.
func LookupElsewhere(ref Reference, cands []Candidate) (index int, outcome Outcome) {
	if !strings.HasPrefix(ref.Name, SymbolPrefix) {
		return -1, Unknown
	}
	index, n := -1, 0
	for i, c := range cands {
		if c.Name == ref.Name && Accepts(ref.Type, c.Type) {
			index, n = i, n+1
		}
	}
	switch n {
	case 0:
		return -1, Unknown
	case 1:
		return index, Resolved
	}
	return -1, Ambiguous
}

// distinctIDs counts distinct ids, up to two.
type distinctIDs struct {
	first string
	count int
}

// decide is the outcome of a lookup whose candidates were counted in tiers,
// the preferred first: the first tier holding any candidate decides,
// Resolved with its one candidate or Ambiguous with more; no candidate in
// any tier is Unknown.
func decide(tiers ...distinctIDs) (string, Outcome) {
	for _, ids := range tiers {
		switch {
		case ids.count > 1:
			return "", Ambiguous
		case ids.count == 1:
			return ids.first, Resolved
		}
	}
	return "", Unknown
}

// add counts id unless it was counted already; it stops counting at two.
func (d *distinctIDs) add(id string) {
	switch {
	case d.count == 0:
		d.first, d.count = id, 1
	case d.count == 1 && id != d.first:
		d.count = 2
	}
}

// TargetName is the name of the POIs ref can resolve to: the name the
// symbol table is searched for. It is ref.Name without the qualifier a Go
// reference carries ("strings.ToLower", "().Close", ".Close" -> ToLower,
// Close); other references have none. A supplied reference's name is its
// target's name: "sym:<symbol>" or "id:<id>" (see AnswerNames).
func TargetName(ref Reference) string {
	if (ref.Type != Calls && ref.Type != Extends) || IsSupplied(ref.Name) {
		return ref.Name
	}
	return goTargetName(ref.Name)
}

// LookupNames returns the names of the POIs Lookup reads to resolve ref:
// TargetName(ref) and, for a Go derived reference ({X}.m, see the package
// documentation), the names X's type is read from (the functions and
// methods whose result it is, the struct types whose fields it names), each
// once. Lookup given only the candidates of these names resolves ref as
// given every candidate. A publish that changes the definition of any of
// them can change ref's resolution.
func LookupNames(ref Reference) []string {
	target := TargetName(ref)
	r, derived := derivedRef(ref)
	if !derived {
		return []string{target}
	}
	names := derivedNames(ParseGoExpr(r.Of), []string{target})
	slices.Sort(names)
	return slices.Compact(names)
}

// IsDerived reports whether ref is a Go derived reference ({X}.m): one
// that is its own ReferenceKey, so a publish finds it again only
// through the names LookupNames gives (even when that is one name, as in
// {New}.New).
func IsDerived(ref Reference) bool {
	_, ok := derivedRef(ref)
	return ok
}

// derivedRef is ref as a Go derived reference ({X}.m); ok is false for
// any other reference.
func derivedRef(ref Reference) (r GoRef, ok bool) {
	if ref.Type != Calls || IsSupplied(ref.Name) {
		return GoRef{}, false
	}
	return parseDerived(ref.Name)
}

// ReferenceKey returns the key of a reference name: the name whose
// change can change the reference's resolution. A publish reports the
// names whose definitions it changed (a POI's name, a Go method's
// receiver-qualified name, ReceiverName, and a supplied reference's
// "sym:…" and "id:…" names), and the references whose key is one of them
// are resolved again. The key of a Go reference drops its qualifier (see
// GoRef): "n", ".n", "().n", "(.).n", "pkg.n",
// "(pkg).n" and "^.n" have the key "n"; a member call on a value of a known
// type, "(.T).m", "(pkg.T).m" or "(^.T).m", has "T.m". A derived reference
// ({X}.m, found again through LookupNames) and a supplied one are their
// own key, and so is a name of any other language without a dot.
func ReferenceKey(name string) string {
	if head, _, ok := strings.Cut(name, ")"); ok && strings.HasPrefix(name, "(") {
		if i := strings.LastIndexByte(head, '.'); i >= 0 && i < len(head)-1 {
			return head[i+1:] + "." + name[strings.LastIndexByte(name, '.')+1:]
		}
	}
	if strings.HasPrefix(name, "{") || strings.Contains(name, ":") {
		return name
	}
	return name[strings.LastIndexByte(name, '.')+1:]
}

// ReceiverName is the name under which a publish that adds or removes a Go
// method named name, declared on type receiver (Receiver), reports it
// besides its name, so that the member calls on values of that type
// resolve again (ReferenceKey): "Conn.Query". It is "" when receiver is.
func ReceiverName(receiver, name string) string {
	if receiver == "" {
		return ""
	}
	return receiver + "." + name
}

// ByNameOnly reports whether the references of file sourceFile resolve by
// name and file alone (every language but Go): then, when three or more
// candidates of a name exist, the name is ambiguous everywhere outside
// their files.
func ByNameOnly(sourceFile string) bool { return languageOf(sourceFile) != langGo }

// lookupGo is the lookup rule of a Go reference (the package
// documentation has it in full): the reference's form limits the
// candidates to functions or methods (classes and interfaces for EXTENDS)
// of the source's package or of the package it names, a package being a
// directory (named after its last element); a plain call and a call on a
// value of the source's package prefer a candidate of the source file.
func lookupGo(sourceID, sourceFile string, r GoRef, rt RelType, cands []Candidate, depth int) (string, Outcome) {
	if r.Kind == GoDerived {
		if rt == Calls {
			return lookupDerived(sourceID, sourceFile, ParseGoExpr(r.Of), r.Name, cands, depth+1)
		}
		// No type is derived: {X}.T is a type of a directory named {X}.
		r = GoRef{Kind: GoFunc, Pkg: "{" + r.Of + "}", Name: r.Name}
	}
	dir := path.Dir(sourceFile)
	var pkg, recv string // the package ("" the source's) and receiver type the form names
	if r.Kind == GoFunc || r.Kind == GoMethod {
		pkg, recv = r.Pkg, r.Type
	}
	wantMethod := r.Kind != GoFunc
	// guess: a method whose receiver's type the reference does not name
	// (.m, ().m, (.).m, (q).m); one of a non-test file is preferred to one
	// of a _test.go file (a test double of an interface the call goes
	// through, a test's own type).
	guess := wantMethod && recv == "" && pkg != rootPkg
	// A plain call and a call on the receiver prefer the source file.
	preferFile := r.isPlain() || r.isReceiver()
	var local, scoped, scopedTest distinctIDs
	for i := range cands {
		c := &cands[i]
		if c.Name != r.Name || c.POIID == sourceID || !Accepts(rt, c.Type) {
			continue
		}
		if rt == Calls && (c.Type == TypeMethod) != wantMethod {
			continue
		}
		if recv != "" && c.Receiver != recv || !visibleFrom(sourceFile, c.FileID) {
			continue
		}
		cdir := path.Dir(c.FileID)
		switch {
		case pkg == rootPkg: // ^.F, (^.T).m: the root package, from its external tests: not the source's file
			if cdir != "." || c.FileID == sourceFile {
				continue
			}
		case pkg != "":
			// The package q is a directory named q. The corpus's root
			// directory has no name of its own: qualified references never
			// reach it (a change of one of its names could not find them
			// again); its external tests reach it through ^.N and (^.T).m.
			if cdir == "." || path.Base(cdir) != pkg {
				continue
			}
		case r.Kind == GoAnyMethod: // any package
		default: // the source's package
			if cdir != dir {
				continue
			}
			if c.FileID == sourceFile && preferFile {
				local.add(c.POIID)
			}
		}
		if guess && isGoTestFile(c.FileID) {
			scopedTest.add(c.POIID)
			continue
		}
		scoped.add(c.POIID)
	}
	return decide(local, scoped, scopedTest)
}

// isGoTestFile reports whether fileID is a Go test file (_test.go).
func isGoTestFile(fileID string) bool {
	return strings.HasSuffix(fileID, "_test.go")
}

// visibleFrom reports whether Go code in file sourceFile can refer to a
// declaration of file candFile: a _test.go file's declarations are part of
// its directory's test build only, so only the _test.go files of the same
// directory see them.
func visibleFrom(sourceFile, candFile string) bool {
	return !isGoTestFile(candFile) || isGoTestFile(sourceFile) && path.Dir(candFile) == path.Dir(sourceFile)
}
