package mapreduce

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Item is one work item read from an input file.
type Item struct {
	ID string
	// Position counts items from 1 in input order; it is the id of an item
	// without an "id" field.
	Position int
	// Line is where the item starts in the input.
	Line int
	Data json.RawMessage
}

// InputError is one invalid item of an input file.
type InputError struct {
	Line     int
	Position int
	Err      string
}

func (e InputError) Error() string {
	return fmt.Sprintf("line %d (item %d): %s", e.Line, e.Position, e.Err)
}

// MaxItemBytes is the largest item accepted.
const MaxItemBytes = 16 << 20

// MaxIDBytes is the longest item id accepted, in bytes of UTF-8.
const MaxIDBytes = 1024

// ParseInput reads work items from r: a JSON array, or newline-delimited
// JSON values (blank lines skipped). An item's id is its "id" field (a
// string, or a number written as in the input) or, without one, its
// position from 1. Invalid JSON, data PostgreSQL cannot store (invalid
// UTF-8, the escape \u0000, a lone UTF-16 surrogate such as \ud800), an id
// that is neither string nor number, an empty id, an id holding a control
// character or longer than MaxIDBytes, and a duplicate id are reported per
// item with their line number; items is nil when any is. An empty input is
// an error.
func ParseInput(r io.Reader) ([]Item, []InputError, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	first, err := peekNonSpace(br)
	if err == io.EOF {
		return nil, nil, errors.New("input holds no items")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("error reading input: %w", err)
	}
	var (
		items []Item
		bad   []InputError
	)
	if first == '[' {
		items, bad, err = parseArray(br)
	} else {
		items, bad, err = parseLines(br)
	}
	if err != nil {
		return nil, nil, err
	}
	bad = append(bad, checkIDs(items)...)
	if len(bad) > 0 {
		return nil, bad, nil
	}
	if len(items) == 0 {
		return nil, nil, errors.New("input holds no items")
	}
	return items, nil, nil
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) == n && !isSpace(b[n-1]) {
			return b[n-1], nil
		}
		if err != nil {
			return 0, err
		}
		if n >= 1<<20 {
			return 0, errors.New("input starts with more than 1 MiB of blanks")
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func parseLines(br *bufio.Reader) ([]Item, []InputError, error) {
	var (
		items []Item
		bad   []InputError
		pos   int
	)
	for line := 1; ; line++ {
		raw, readErr := br.ReadBytes('\n')
		if t := bytes.TrimSpace(raw); len(t) > 0 {
			pos++
			it, err := newItem(t, pos, line)
			if err != nil {
				bad = append(bad, InputError{Line: line, Position: pos, Err: err.Error()})
			} else {
				items = append(items, it)
			}
		}
		if readErr == io.EOF {
			return items, bad, nil
		}
		if readErr != nil {
			return nil, nil, fmt.Errorf("error reading input at line %d: %w", line, readErr)
		}
	}
}

// parseArray reads a JSON array element by element, tracking lines. A
// syntax error ends the parse: the rest of the array cannot be trusted.
func parseArray(br *bufio.Reader) ([]Item, []InputError, error) {
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading input: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	if _, err := dec.Token(); err != nil { // [
		return nil, []InputError{{Line: 1, Position: 0, Err: "invalid JSON array: " + err.Error()}}, nil
	}
	var (
		items []Item
		bad   []InputError
	)
	for pos := 1; dec.More(); pos++ {
		start := dec.InputOffset()
		for start < int64(len(data)) && (isSpace(data[start]) || data[start] == ',') {
			start++
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			bad = append(bad, InputError{Line: lineAt(start), Position: pos, Err: "invalid JSON: " + err.Error()})
			return nil, bad, nil
		}
		it, err := newItem(raw, pos, lineAt(start))
		if err != nil {
			bad = append(bad, InputError{Line: lineAt(start), Position: pos, Err: err.Error()})
			continue
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil { // ]
		return nil, append(bad, InputError{Line: lineAt(dec.InputOffset()), Err: "invalid JSON array: " + err.Error()}), nil
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return nil, append(bad, InputError{Line: lineAt(dec.InputOffset()), Err: "unexpected data after the JSON array"}), nil
	}
	return items, bad, nil
}

func newItem(raw []byte, pos, line int) (Item, error) {
	if len(raw) > MaxItemBytes {
		return Item{}, fmt.Errorf("item is %d bytes, more than %d", len(raw), MaxItemBytes)
	}
	if !utf8.Valid(raw) {
		return Item{}, errors.New("item is not valid UTF-8")
	}
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		return Item{}, fmt.Errorf("invalid JSON: %v", err)
	}
	if err := checkStorable(raw); err != nil {
		return Item{}, err
	}
	it := Item{ID: strconv.Itoa(pos), Position: pos, Line: line, Data: json.RawMessage(bytes.Clone(raw))}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return it, nil // not an object: the position is its id
	}
	idRaw, ok := obj["id"]
	if !ok {
		return it, nil
	}
	var s string
	switch {
	case string(idRaw) == "null":
		return Item{}, errors.New("id must be a string or a number, not null")
	case json.Unmarshal(idRaw, &s) == nil:
	case len(idRaw) > 0 && (idRaw[0] == '-' || (idRaw[0] >= '0' && idRaw[0] <= '9')):
		s = string(idRaw)
	default:
		return Item{}, fmt.Errorf("id must be a string or a number, not %s", idRaw)
	}
	if err := checkID(s); err != nil {
		return Item{}, err
	}
	it.ID = s
	return it, nil
}

// checkID rejects ids that are empty, too long or hold a control
// character (NUL among them: an id is also an environment variable's value).
func checkID(id string) error {
	if id == "" {
		return errors.New("id is empty")
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf("id is %d bytes long; the maximum is %d", len(id), MaxIDBytes)
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("id holds the control character %U at byte %d", r, i)
		}
	}
	return nil
}

// Errors for what valid JSON may hold but PostgreSQL's jsonb cannot store.
var (
	errNUL      = errors.New(`item holds the escape \u0000 (NUL), which PostgreSQL cannot store`)
	errLoneHigh = errors.New(`item holds a lone UTF-16 surrogate (a \ud800-\udbff escape not followed by \udc00-\udfff), which PostgreSQL cannot store`)
	errLoneLow  = errors.New(`item holds a lone UTF-16 surrogate (a \udc00-\udfff escape without \ud800-\udbff before it), which PostgreSQL cannot store`)
)

// checkStorable rejects the escape \u0000 and UTF-16 surrogate escapes that
// are not a high-low pair, in any string of raw (keys included). raw is
// valid JSON.
func checkStorable(raw []byte) error {
	inString, pendingHigh := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			inString = c == '"'
			continue
		}
		if c != '\\' || raw[i+1] != 'u' { // anything but a \uXXXX escape
			if pendingHigh {
				return errLoneHigh
			}
			if c == '"' {
				inString = false
			} else if c == '\\' {
				i++ // skip the escaped character
			}
			continue
		}
		v, _ := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		i += 5
		isHigh, isLow := v >= 0xD800 && v <= 0xDBFF, v >= 0xDC00 && v <= 0xDFFF
		switch {
		case pendingHigh && !isLow:
			return errLoneHigh
		case !pendingHigh && isLow:
			return errLoneLow
		case v == 0:
			return errNUL
		}
		pendingHigh = isHigh
	}
	return nil
}

func checkIDs(items []Item) []InputError {
	var bad []InputError
	seen := make(map[string]int, len(items))
	for _, it := range items {
		if line, dup := seen[it.ID]; dup {
			bad = append(bad, InputError{Line: it.Line, Position: it.Position,
				Err: fmt.Sprintf("duplicate item id %q (first on line %d)", it.ID, line)})
			continue
		}
		seen[it.ID] = it.Line
	}
	return bad
}
