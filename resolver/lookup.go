package resolver

import "strconv"

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
// not count either: an import names another file's POI.
//
// Counting candidates in the source file win: exactly one is Resolved, two or
// more are Ambiguous (with no fallback to other files). With none there, one
// counting candidate anywhere is Resolved, more are Ambiguous, none is Unknown.
// Candidates are counted by distinct POIID, so a repeated row does not make a
// name ambiguous, and the order of cands does not matter.
func Lookup(sourceID, sourceFile string, ref Reference, cands []Candidate) (targetID string, outcome Outcome) {
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
	for _, ids := range []distinctIDs{local, global} {
		switch {
		case ids.count > 1:
			return "", Ambiguous
		case ids.count == 1:
			return ids.first, Resolved
		}
	}
	return "", Unknown
}

// distinctIDs counts distinct ids, up to two.
type distinctIDs struct {
	first string
	count int
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
