package scipindex

import (
	"fmt"
	"unicode/utf8"

	"github.com/scip-code/scip/bindings/go/scip"
)

// source is a document's text with its line starts, converting SCIP
// positions to byte offsets.
type source struct {
	text  string
	lines []int // the byte offset of each line's start
	enc   scip.PositionEncoding
}

func newSource(text string, enc scip.PositionEncoding) *source {
	s := &source{text: text, enc: enc, lines: []int{0}}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	return s
}

// lineEnd returns the offset of line l's end (before its line break).
func (s *source) lineEnd(l int) int {
	if l+1 < len(s.lines) {
		end := s.lines[l+1] - 1
		if end > s.lines[l] && s.text[end-1] == '\r' {
			end--
		}
		return end
	}
	return len(s.text)
}

// offset converts a line and a column in the document's position encoding
// to a byte offset. An unspecified encoding is read as UTF-16 code units:
// scip-python and scip-typescript leave it unset and count as the
// TypeScript compiler and LSP do. A column past the line's end is an
// error; the column just after it is the line's end. A column inside a
// character (a UTF-8 continuation byte, between a UTF-16 surrogate pair's
// halves) is an error too: the text there would be cut mid-character.
func (s *source) offset(line, col int32) (int, error) {
	if line < 0 || int(line) >= len(s.lines) {
		return 0, fmt.Errorf("line %d is outside the source's %d lines", line+1, len(s.lines))
	}
	if col < 0 {
		return 0, fmt.Errorf("column %d is negative", col)
	}
	start, end := s.lines[line], s.lineEnd(int(line))
	if s.enc == scip.PositionEncoding_UTF8CodeUnitOffsetFromLineStart {
		if int(col) > end-start {
			return 0, fmt.Errorf("column %d is past the end of line %d (%d bytes)", col, line+1, end-start)
		}
		if off := start + int(col); off < end && !utf8.RuneStart(s.text[off]) {
			return 0, fmt.Errorf("column %d is inside a character of line %d", col, line+1)
		}
		return start + int(col), nil
	}
	units := 0
	i := start
	for units < int(col) {
		if i >= end {
			return 0, fmt.Errorf("column %d is past the end of line %d", col, line+1)
		}
		r, size := utf8.DecodeRuneInString(s.text[i:end])
		switch {
		case s.enc == scip.PositionEncoding_UTF32CodeUnitOffsetFromLineStart:
			units++
		case r >= 0x10000:
			units += 2
		default:
			units++
		}
		i += size
	}
	if units > int(col) {
		return 0, fmt.Errorf("column %d is inside a character of line %d", col, line+1)
	}
	return i, nil
}

// span is a range as byte offsets.
type span struct{ start, end int }

// rangeOf converts a SCIP range ([line, col, endCol] or [line, col,
// endLine, endCol], 0-based) to byte offsets, checking it.
func (s *source) rangeOf(r []int32) (span, error) {
	var sl, sc, el, ec int32
	switch len(r) {
	case 3:
		sl, sc, el, ec = r[0], r[1], r[0], r[2]
	case 4:
		sl, sc, el, ec = r[0], r[1], r[2], r[3]
	default:
		return span{}, fmt.Errorf("range %v has %d elements, not 3 or 4", r, len(r))
	}
	if el < sl || el == sl && ec < sc {
		return span{}, fmt.Errorf("range %v ends before it starts", r)
	}
	a, err := s.offset(sl, sc)
	if err != nil {
		return span{}, fmt.Errorf("range %v: %w", r, err)
	}
	b, err := s.offset(el, ec)
	if err != nil {
		return span{}, fmt.Errorf("range %v: %w", r, err)
	}
	return span{a, b}, nil
}

// lineOf returns the 0-based line of offset off.
func (s *source) lineOf(off int) int {
	lo, hi := 0, len(s.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
