// Package resolver decodes points of interest (POIs), extracts the names their
// code refers to, and decides which POI a name resolves to. It is pure: no
// database, no I/O, no goroutines, no global state. A worker calls it once per
// POI inside an error boundary.
//
// This is the overview. The rules in full, language by language and form by
// form, are in docs/references.md, and each rule's examples are a table test:
// a change of a rule changes both.
//
// # Entry points
//
//   - DecodePOI turns one raw JSON POI into a POI or a *ValidationError that
//     names the field at fault; Peek reads just the id and filePath, and
//     DecodeSymbol, for the symbol table, validates as DecodePOI without
//     decoding the bulk of the code.
//   - Extract returns a POI's references ([]Reference: a name and a RelType,
//     CALLS, EXTENDS, IMPLEMENTS or IMPORTS), de-duplicated and sorted.
//   - Lookup decides which candidate a reference resolves to, and
//     LookupElsewhere a supplied reference by symbol across repositories.
//   - LookupNames, TargetName and ReferenceKey say which names a reference
//     reads candidates of, looks up, and is resolved again for; AnswerNames
//     says which names a POI answers to. The worker and the linker read the
//     symbol table, and re-resolve after a publish, by these names alone.
//   - Receiver, ResultType and FieldTypes are what the symbol table keeps of
//     a Go POI (Candidate.Receiver, Result, Fields) for Go's member calls.
//
// # References
//
// A POI's references come from one of two places:
//
//   - Supplied: an analyzer that knows them (a compiler front end, a SCIP or
//     LSIF indexer) sends them with the POI, each by the target's symbol
//     ("sym:<symbol>"), its POI id ("id:<id>") or a name resolved as one read
//     from code would be. Extract returns them instead of reading RawCode.
//   - Extracted: Extract reads RawCode with a hand-written tokenizer, in one
//     pass, in time linear in the code, checking its context every 4 KiB.
//     It is not a parser. Comments and string literals are skipped; CALLS
//     come from function, method and class bodies, EXTENDS and IMPLEMENTS
//     from class and interface headers, IMPORTS from import statements.
//
// Languages are told apart by FilePath's extension: Go (.go), Python (.py,
// .pyi, .pyw) and JavaScript/TypeScript (.js, .ts, .vue, ... : jsExtensions)
// each have their own keywords and rules; any other file (Java, C-like code)
// gets the rules of all of them at once.
//
// A Go reference's name says what the call's form tells of its target: it is
// a GoRef ((q.T).m, {X}.m, ^.N, ...), which ParseGoRef reads and String
// writes, and nothing else takes the text apart. The names are stored as
// these strings. GoRef's documentation lists the forms; goref_test.go's
// TestParseGoRef has each with its fields.
//
// # Outcomes
//
// Lookup resolves a reference among the candidates the caller gives it (the
// POIs of the names LookupNames lists, in the source's repository) to one of
// three Outcomes:
//
//   - Resolved: exactly one candidate counts at the deciding level; Lookup
//     returns its POI id.
//   - Unknown: no candidate counts.
//   - Ambiguous: more than one counts; none is chosen rather than a guess.
//
// A candidate counts when its type accepts the relationship (Accepts: CALLS
// targets functions and methods, EXTENDS classes and interfaces, IMPLEMENTS
// interfaces, IMPORTS anything but an import) and it is not the source POI:
// there are no self edges. Every language but Go uses the name rule
// (ByNameOnly): a candidate in the source file wins over candidates
// elsewhere. A Go reference follows its form: a package is a directory, a
// member call never resolves to a function nor a plain call to a method, a
// _test.go file's declarations are candidates only for its directory's test
// files, and a method called on the value of a call or field ({X}.m) is
// looked up on the type that value has. Supplied references by symbol or id
// follow the name rule in every language.
//
// A lookup is within one repository; a supplied reference by symbol that its
// own repository leaves Unknown is given to LookupElsewhere, where exactly
// one POI of that symbol in the other repositories resolves it.
//
// # Where the details are
//
//   - docs/references.md: every rule in prose, with the tests below per
//     section.
//   - Extraction: extract_test.go (TestExtract_Calls,
//     TestExtract_ExtendsImplements, TestExtract_Imports), language_test.go
//     (TestExtract_GoCalls, TestExtract_PythonRules,
//     TestExtract_JavaScriptRules, TestExtract_GoRootTestFileAddsRootForms),
//     supplied_reference_test.go.
//   - Go references: goref_test.go (TestParseGoRef, TestParseGoExpr,
//     FuzzGoRef).
//   - Lookup: lookup_test.go (TestLookup, TestAccepts), language_test.go
//     (TestLookup_Go, TestLookup_GoExtends, TestReferenceKey),
//     golang_types_test.go (TestLookup_GoDerived,
//     TestLookup_GoDerivedReadsOnlyLookupNames), answer_names_test.go.
//   - Decoding: decode_test.go (TestDecodePOI, TestPeek,
//     TestDecodeSymbol_GoPOIsKeepWhatTheSymbolTableReads).
package resolver
