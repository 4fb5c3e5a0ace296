package resolver

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// knownFields are the POI keys DecodePOI reads; scanObject keeps only these.
var knownFields = [...]string{fieldID, fieldType, fieldName, fieldLineNumber, fieldFilePath, fieldRawCode, fieldContext, fieldSymbol, fieldReferences}

// scanObject is DecodePOI's fast path. It validates raw as one JSON object
// whose member values are strings, numbers, booleans or null (every POI relay
// writes, and nearly every POI a caller sends) and returns the values of the
// known keys as sub-slices of raw, the last one winning on a duplicate key as
// with encoding/json. It returns ok false, and DecodePOI takes the general
// path through encoding/json, for anything else: invalid JSON, a value that
// is not an object, a nested object or array, or a key with an escape in it.
// It is a single pass without allocation beyond the returned map, where the
// general path validates and copies the data three times.
func scanObject(raw []byte) (fields map[string]json.RawMessage, ok bool) {
	s := scanner{b: raw}
	s.ws()
	if !s.eat('{') {
		return nil, false
	}
	fields = make(map[string]json.RawMessage, len(knownFields))
	s.ws()
	if s.eat('}') {
		return fields, s.end()
	}
	for {
		s.ws()
		start := s.i
		keyOK, escaped := s.str()
		if !keyOK || escaped {
			return nil, false
		}
		key := raw[start+1 : s.i-1]
		s.ws()
		if !s.eat(':') {
			return nil, false
		}
		s.ws()
		start = s.i
		if !s.scalar() {
			return nil, false
		}
		for _, k := range knownFields {
			if string(key) == k {
				fields[k] = raw[start:s.i]
				break
			}
		}
		s.ws()
		if s.eat('}') {
			return fields, s.end()
		}
		if !s.eat(',') {
			return nil, false
		}
	}
}

// scanner walks JSON text; every method leaves i after what it accepted.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// scalar accepts a string, number, true, false or null.
func (s *scanner) scalar() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		ok, _ := s.str()
		return ok
	case c == '-' || isDigit(c):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// str accepts a JSON string with valid escapes (as encoding/json, it does not
// require valid UTF-8) and reports whether it had any escape.
func (s *scanner) str() (ok, escaped bool) {
	if !s.eat('"') {
		return false, false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c >= 0x20 && c != '"' && c != '\\' {
			s.i++
			continue
		}
		switch {
		case c == '"':
			s.i++
			return true, escaped
		case c < 0x20:
			return false, escaped
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return false, escaped
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 {
					return false, escaped
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return false, escaped
					}
				}
				s.i += 6
			default:
				return false, escaped
			}
		}
	}
	return false, escaped
}

// number accepts a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.eat('.') && !s.digits() {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits accepts [0-9]* and reports whether there was at least one.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
	}
	return s.i > start
}

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// unquote decodes a JSON string already known to be valid, exactly as
// encoding/json does (the fuzz test holds it to that): without a copy when it
// has no escapes, with one pass otherwise. Invalid UTF-8, which encoding/json
// replaces with U+FFFD, goes to encoding/json.
func unquote(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || !utf8.Valid(v) {
		return unquoteGeneral(v)
	}
	body := v[1 : len(v)-1]
	first := bytes.IndexByte(body, '\\')
	if first < 0 {
		return string(body), true
	}
	out := make([]byte, first, len(body))
	copy(out, body)
	for i := first; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch body[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(body[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				// A valid pair is one rune; anything else is U+FFFD.
				if i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
					if d := utf16.DecodeRune(r, hex4(body[i+3:i+7])); d != unicode.ReplacementChar {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, body[i])
		}
	}
	return string(out), true
}

// hex4 is the value of four hex digits (validated by the scanner).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func unquoteGeneral(v json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
