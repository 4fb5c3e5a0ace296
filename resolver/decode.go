package resolver

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// JSON field names of a POI, as used in ValidationError.Field.
const (
	fieldID         = "id"
	fieldType       = "type"
	fieldName       = "name"
	fieldLineNumber = "lineNumber"
	fieldFilePath   = "filePath"
	fieldRawCode    = "rawCode"
	fieldContext    = "context"
	fieldSymbol     = "symbol"
	fieldReferences = "references"
)

// maxQuotedValue is how many bytes of an offending string value an error message quotes.
const maxQuotedValue = 40

// DecodePOI decodes one POI from raw JSON and validates it structurally.
//
// The value must be a JSON object. id, type and name must be non-empty strings.
// lineNumber must be a non-negative integer that fits in an int32: a JSON number
// whose value has no fractional part (3 and 3.0 are accepted; 3.5, -1 and "3" are not).
// filePath, rawCode and context must be strings when present and not null; absent
// or null they decode as "". symbol, when present and not null, must be a
// non-empty string of at most MaxSymbolBytes bytes. references, when present
// and not null, must be an array (possibly empty: References is then empty,
// not nil) of objects, each with a type among CALLS, EXTENDS, IMPLEMENTS and
// IMPORTS and exactly one of symbol, targetId and name, a non-empty string
// of at most MaxSymbolBytes bytes (a name not starting with "sym:" or "id:"). Unknown fields are ignored; keys match exactly
// (case-sensitively).
//
// Every problem with the data, invalid JSON included, is reported as a
// *ValidationError naming the first field at fault, in the order id, type, name,
// lineNumber, filePath, rawCode, context, symbol, references (a reference's
// field is named with its index: references[2].type). When the id is usable
// it is set in POIID even if another field is at fault. DecodePOI never panics.
func DecodePOI(raw []byte) (POI, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return POI{}, err
	}
	return validate(fields, true)
}

// Symbol is what DecodeSymbol reads from a POI.
type Symbol struct {
	// POI is the POI without RawCode and Context, when Err is nil.
	POI POI
	// Err is DecodePOI's error for the POI.
	Err error
	// ID, IDOK, FilePath and FilePathOK are Peek's results.
	ID         string
	IDOK       bool
	FilePath   string
	FilePathOK bool
	// Name is the POI's name when it is a JSON string (NameOK), whether or
	// not the rest of the POI is valid.
	Name   string
	NameOK bool
}

// DecodeSymbol is DecodePOI and Peek in one pass over raw, for the symbol
// table: it validates exactly as DecodePOI (same errors) but leaves RawCode
// and Context empty, checking only that they are strings (or null or
// absent) rather than decoding them, the bulk of a POI. A Go function's,
// method's or type's RawCode is decoded only as far as Receiver,
// ResultType and FieldTypes read it (codePrefix).
func DecodeSymbol(raw []byte) Symbol {
	fields, err := objectFields(raw)
	if err != nil {
		return Symbol{Err: err}
	}
	var s Symbol
	s.ID, s.IDOK = asString(fields[fieldID])
	s.FilePath, s.FilePathOK = asString(fields[fieldFilePath])
	s.Name, s.NameOK = asString(fields[fieldName])
	s.POI, s.Err = validate(fields, false)
	return s
}

// objectFields returns the members of raw, a JSON object, that DecodePOI
// reads: through scanObject, or encoding/json for what it leaves, which
// also gives the error for invalid JSON and a value that is not an object.
func objectFields(raw []byte) (map[string]json.RawMessage, error) {
	if fields, ok := scanObject(raw); ok {
		return fields, nil
	}
	return generalFields(raw)
}

// generalFields is objectFields through encoding/json alone.
func generalFields(raw []byte) (map[string]json.RawMessage, error) {
	var top json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, &ValidationError{Reason: "is not valid JSON: " + err.Error()}
	}
	if kind := jsonKind(top); kind != '{' {
		return nil, &ValidationError{Reason: "must be a JSON object, got " + describe(top)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(top, &fields); err != nil {
		// Unreachable for a valid JSON object; kept so a decoder change cannot panic us.
		return nil, &ValidationError{Reason: "is not valid JSON: " + err.Error()}
	}
	return fields, nil
}

// validate builds a POI from the members of a valid JSON object, or gives
// the *ValidationError for the first field at fault. Without code, RawCode
// and Context are checked but not decoded.
func validate(fields map[string]json.RawMessage, code bool) (POI, error) {
	var p POI
	var reason string
	if p.ID, reason = requiredString(fields, fieldID); reason != "" {
		return POI{}, &ValidationError{Field: fieldID, Reason: reason}
	}
	fail := func(field, reason string) (POI, error) {
		return POI{}, &ValidationError{POIID: p.ID, Field: field, Reason: reason}
	}
	if p.Type, reason = requiredString(fields, fieldType); reason != "" {
		return fail(fieldType, reason)
	}
	if p.Name, reason = requiredString(fields, fieldName); reason != "" {
		return fail(fieldName, reason)
	}
	if p.LineNumber, reason = lineNumber(fields); reason != "" {
		return fail(fieldLineNumber, reason)
	}
	if p.FilePath, reason = optionalString(fields, fieldFilePath); reason != "" {
		return fail(fieldFilePath, reason)
	}
	if !code {
		if reason = optionalStringKind(fields, fieldRawCode); reason != "" {
			return fail(fieldRawCode, reason)
		}
		if reason = optionalStringKind(fields, fieldContext); reason != "" {
			return fail(fieldContext, reason)
		}
		if (p.Type == TypeMethod || p.Type == TypeFunction || p.Type == TypeClass) && languageOf(p.FilePath) == langGo {
			p.RawCode = codePrefix(fields[fieldRawCode])
		}
	} else {
		if p.RawCode, reason = optionalString(fields, fieldRawCode); reason != "" {
			return fail(fieldRawCode, reason)
		}
		if p.Context, reason = optionalString(fields, fieldContext); reason != "" {
			return fail(fieldContext, reason)
		}
	}
	if v, present := fields[fieldSymbol]; present && jsonKind(v) != 'n' {
		if p.Symbol, reason = symbolString(v); reason != "" {
			return fail(fieldSymbol, reason)
		}
	}
	var field string
	if p.References, field, reason = suppliedReferences(fields[fieldReferences]); reason != "" {
		return fail(field, reason)
	}
	return p, nil
}

// relTypes are the relationship types a supplied reference may have.
var relTypes = []RelType{Calls, Extends, Implements, Imports}

// symbolString returns the symbol or target id in v, a non-empty string of
// at most MaxSymbolBytes bytes, or a reason why it is not one.
func symbolString(v json.RawMessage) (string, string) {
	s, reason := nonEmptyString(v)
	if reason == "" && len(s) > MaxSymbolBytes {
		return "", fmt.Sprintf("is %d bytes, more than the %d-byte limit", len(s), MaxSymbolBytes)
	}
	return s, reason
}

// nonEmptyString returns the non-empty string in v, or a reason why it is
// not one.
func nonEmptyString(v json.RawMessage) (string, string) {
	s, ok := asString(v)
	switch {
	case !ok:
		return "", "must be a non-empty string, got " + describe(v)
	case s == "":
		return "", "must be a non-empty string, got empty string"
	}
	return s, ""
}

// suppliedReferences decodes the references field v (nil when absent): nil
// for absent or null, or the references, or the field at fault and why.
func suppliedReferences(v json.RawMessage) ([]SuppliedReference, string, string) {
	switch jsonKind(v) {
	case 0, 'n':
		return nil, "", ""
	case '[':
	default:
		return nil, fieldReferences, "must be an array, got " + describe(v)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		// Unreachable for a valid JSON array.
		return nil, fieldReferences, "is not a valid array: " + err.Error()
	}
	refs := make([]SuppliedReference, 0, len(items))
	for i, item := range items {
		at := func(f string) string { return fmt.Sprintf("%s[%d]%s", fieldReferences, i, f) }
		if jsonKind(item) != '{' {
			return nil, at(""), "must be an object, got " + describe(item)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, at(""), "is not a valid object: " + err.Error()
		}
		var r SuppliedReference
		t, present := m["type"]
		if !present {
			return nil, at(".type"), "is required"
		}
		s, ok := asString(t)
		if !ok {
			return nil, at(".type"), "must be one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS, got " + describe(t)
		}
		r.Type = RelType(s)
		if !slices.Contains(relTypes, r.Type) {
			return nil, at(".type"), quoteTruncated(s) + " is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS"
		}
		sym, hasSym := m["symbol"]
		tid, hasTID := m["targetId"]
		nm, hasName := m["name"]
		hasSym = hasSym && jsonKind(sym) != 'n'
		hasTID = hasTID && jsonKind(tid) != 'n'
		hasName = hasName && jsonKind(nm) != 'n'
		var reason string
		switch n := btoi(hasSym) + btoi(hasTID) + btoi(hasName); {
		case n > 1:
			return nil, at(""), "must have exactly one of symbol, targetId and name, got " + presentKeys(hasSym, hasTID, hasName)
		case hasSym:
			if r.Symbol, reason = symbolString(sym); reason != "" {
				return nil, at(".symbol"), reason
			}
		case hasTID:
			if r.TargetID, reason = symbolString(tid); reason != "" {
				return nil, at(".targetId"), reason
			}
		case hasName:
			if r.RefName, reason = symbolString(nm); reason != "" {
				return nil, at(".name"), reason
			}
			if IsSupplied(r.RefName) {
				return nil, at(".name"), quoteTruncated(r.RefName) + " starts with " + SymbolPrefix + " or " + IDPrefix +
					": give a symbol or a targetId instead"
			}
		default:
			return nil, at(""), "must have exactly one of symbol, targetId and name, got none"
		}
		refs = append(refs, r)
	}
	return refs, "", ""
}

// Peek returns the id and filePath of a raw POI when they are JSON strings,
// without validating anything else; idOK and filePathOK say whether each was
// a string (an empty string counts). It never panics; invalid JSON or a value
// that is not an object gives all zero results.
func Peek(raw []byte) (id string, idOK bool, filePath string, filePathOK bool) {
	fields, ok := scanObject(raw)
	if !ok {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return "", false, "", false
		}
	}
	id, idOK = asString(fields[fieldID])
	filePath, filePathOK = asString(fields[fieldFilePath])
	return id, idOK, filePath, filePathOK
}

// requiredString returns the non-empty string in fields[key], or a reason why there is none.
func requiredString(fields map[string]json.RawMessage, key string) (string, string) {
	v, present := fields[key]
	if !present {
		return "", "is required"
	}
	return nonEmptyString(v)
}

// optionalString returns the string in fields[key] ("" when absent or null), or a reason why it is not a string.
func optionalString(fields map[string]json.RawMessage, key string) (string, string) {
	v, present := fields[key]
	if !present || jsonKind(v) == 'n' {
		return "", ""
	}
	s, ok := asString(v)
	if !ok {
		return "", "must be a string, got " + describe(v)
	}
	return s, ""
}

// optionalStringKind is optionalString's check without the decoding: a
// valid JSON string always decodes.
func optionalStringKind(fields map[string]json.RawMessage, key string) string {
	v, present := fields[key]
	if !present {
		return ""
	}
	if k := jsonKind(v); k != 'n' && k != '"' {
		return "must be a string, got " + describe(v)
	}
	return ""
}

// lineNumber returns the validated lineNumber field, or a reason why it is not valid.
func lineNumber(fields map[string]json.RawMessage) (int, string) {
	v, present := fields[fieldLineNumber]
	if !present {
		return 0, "is required"
	}
	const want = "must be a non-negative integer"
	if jsonKind(v) != '0' {
		return 0, want + ", got " + describe(v)
	}
	n, problem := parseLineNumber(string(v))
	switch problem {
	case numNegative, numFraction:
		return 0, want + ", got " + describe(v)
	case numTooLarge:
		return 0, fmt.Sprintf("%s no greater than %d, got %s", want, math.MaxInt32, describe(v))
	}
	return n, ""
}

// asString reports whether v, a valid JSON value, is a string and returns
// its value.
func asString(v json.RawMessage) (string, bool) {
	if jsonKind(v) != '"' {
		return "", false
	}
	return unquote(v)
}

// jsonKind classifies a JSON value by its first significant byte: '{', '[', '"',
// 't' or 'f' (boolean), 'n' (null), '0' (number), or 0 when v is empty.
func jsonKind(v json.RawMessage) byte {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[', '"', 't', 'f', 'n':
			return c
		default:
			return '0'
		}
	}
	return 0
}

// describe names the JSON type of v, with its value for scalars: `number 12`,
// `string "ten"`, `boolean true`, `null`, `object`, `array`.
func describe(v json.RawMessage) string {
	switch jsonKind(v) {
	case '{':
		return "object"
	case '[':
		return "array"
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean " + strings.TrimSpace(string(v))
	case '"':
		s, _ := asString(v)
		return "string " + quoteTruncated(s)
	case '0':
		return "number " + truncate(strings.TrimSpace(string(v)))
	}
	return "nothing"
}

// quoteTruncated quotes s, cut to maxQuotedValue bytes on a rune boundary.
func quoteTruncated(s string) string {
	if len(s) <= maxQuotedValue {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", truncate(s))
}

// truncate cuts s to at most maxQuotedValue bytes on a rune boundary.
func truncate(s string) string {
	if len(s) <= maxQuotedValue {
		return s
	}
	cut := maxQuotedValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// numProblem says why a JSON number is not a valid line number.
type numProblem int

const (
	numOK numProblem = iota
	numNegative
	numFraction
	numTooLarge
)

// maxExponent bounds the exponent a number's value is computed with, so a
// literal like 1e99999999999999999999 cannot overflow; any larger exponent is
// out of range anyway.
const maxExponent = 1 << 40

// parseLineNumber converts a syntactically valid JSON number to an int in
// [0, math.MaxInt32] exactly, without floating point: 3, 3.0, 30e-1 and 0.3e1
// are 3; 3.5 is a fraction; -0 is 0.
func parseLineNumber(num string) (int, numProblem) {
	num = strings.TrimSpace(num)
	neg := strings.HasPrefix(num, "-")
	num = strings.TrimPrefix(num, "-")

	i := 0
	for i < len(num) && isDigit(num[i]) {
		i++
	}
	intPart, frac := num[:i], ""
	if i < len(num) && num[i] == '.' {
		j := i + 1
		for j < len(num) && isDigit(num[j]) {
			j++
		}
		frac, i = num[i+1:j], j
	}
	var exp int64
	if i < len(num) && (num[i] == 'e' || num[i] == 'E') {
		i++
		expNeg := false
		if i < len(num) && (num[i] == '+' || num[i] == '-') {
			expNeg = num[i] == '-'
			i++
		}
		for ; i < len(num) && isDigit(num[i]); i++ {
			if exp < maxExponent {
				exp = exp*10 + int64(num[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}

	// The value is digits × 10^shift.
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := exp - int64(len(frac))
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		shift++
	}
	switch {
	case digits == "":
		return 0, numOK
	case neg:
		return 0, numNegative
	case shift < 0:
		return 0, numFraction
	case int64(len(digits))+shift > 10:
		return 0, numTooLarge
	}
	var n int64
	for k := 0; k < len(digits); k++ {
		n = n*10 + int64(digits[k]-'0')
	}
	for ; shift > 0; shift-- {
		n *= 10
	}
	if n > math.MaxInt32 {
		return 0, numTooLarge
	}
	return int(n), numOK
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maxPrefixBytes bounds the JSON text codePrefix decodes: a decoded byte
// takes at most 6 bytes of JSON text (\u00XX), so it holds more than
// maxShapeBytes decoded bytes, whatever the escapes, and the rune a cut
// may break lies beyond them.
const maxPrefixBytes = 8 * maxShapeBytes

// codePrefix decodes the JSON string raw, or only its first maxPrefixBytes
// bytes when it is longer: at least the first maxShapeBytes bytes of the
// code (all that Receiver, ResultType and FieldTypes read), exactly as
// decoding it whole gives them. It is "" when raw is not a string.
func codePrefix(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	if len(raw) > maxPrefixBytes+8 {
		// raw is a valid JSON string: cut it between two characters, never
		// inside an escape.
		end := 1
		for end < maxPrefixBytes {
			switch {
			case raw[end] != '\\':
				end++
			case raw[end+1] == 'u':
				end += 6
			default:
				end += 2
			}
		}
		prefix := make([]byte, 0, end+1)
		raw = append(append(prefix, raw[:end]...), '"')
	}
	code, _ := unquote(raw)
	return code
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// presentKeys names the reference keys present, for an error message.
func presentKeys(sym, tid, name bool) string {
	var keys []string
	for _, k := range []struct {
		on   bool
		name string
	}{{sym, "symbol"}, {tid, "targetId"}, {name, "name"}} {
		if k.on {
			keys = append(keys, k.name)
		}
	}
	return strings.Join(keys, " and ")
}
