// Package termout keeps data from controlling an operator's terminal.
//
// relay prints identifiers, error messages and code that came from analysed
// files. Such text can hold escape sequences (ESC [ … m recolours, OSC sets
// the window title, CSI J erases the screen) or bidirectional-override
// characters that reorder what is shown. Writer passes text through with
// every such character replaced by a visible escape, so the terminal shows
// the data instead of obeying it.
//
// The escapes are JSON's: U+001B is written as \u001b. encoding/json never
// emits a raw C0 control character, so JSON written through a Writer decodes
// to the same values; only C1 controls, DEL and bidi controls, which
// encoding/json emits raw, change spelling.
package termout

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// unsafeRune reports whether r would be interpreted by a terminal or would
// reorder the text around it: C0 controls (other than the kept ones), DEL,
// C1 controls, and Unicode's bidirectional embedding, override and isolate
// controls.
func unsafeRune(r rune, keepLayout bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !keepLayout
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

func appendEscaped(b []byte, r rune) []byte {
	return fmt.Appendf(b, `\u%04x`, r)
}

func appendInvalid(b []byte, c byte) []byte {
	return fmt.Appendf(b, `\x%02x`, c)
}

// Writer escapes unsafe characters in everything written through it and
// keeps newlines and tabs, so tables and multi-line blocks keep their layout.
// A UTF-8 sequence split across two writes is decoded whole. Writer keeps
// the first error of the underlying writer and returns it from every later
// Write and from Flush, like bufio.Writer.
type Writer struct {
	w     io.Writer
	carry []byte // an incomplete UTF-8 sequence at the end of the last Write
	buf   []byte
	err   error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it. It reports len(p) on success.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	in := p
	if len(w.carry) > 0 {
		in = append(w.carry, p...)
		w.carry = nil
	}
	out := w.buf[:0]
	for i := 0; i < len(in); {
		c := in[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c), true) {
				out = appendEscaped(out, rune(c))
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		if !utf8.FullRune(in[i:]) {
			w.carry = append([]byte(nil), in[i:]...)
			break
		}
		r, size := utf8.DecodeRune(in[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = appendInvalid(out, c)
		case unsafeRune(r, true):
			out = appendEscaped(out, r)
		default:
			out = append(out, in[i:i+size]...)
		}
		i += size
	}
	w.buf = out
	if _, err := w.w.Write(out); err != nil {
		w.err = err
		return 0, err
	}
	return len(p), nil
}

// Flush writes an incomplete UTF-8 sequence held back from the last Write,
// escaped, and returns the first error the underlying writer gave.
func (w *Writer) Flush() error {
	if w.err == nil && len(w.carry) > 0 {
		var out []byte
		for _, c := range w.carry {
			out = appendInvalid(out, c)
		}
		w.carry = nil
		if _, err := w.w.Write(out); err != nil {
			w.err = err
		}
	}
	return w.err
}

// Err returns the first error the underlying writer gave.
func (w *Writer) Err() error { return w.err }

// String returns s with every unsafe character escaped, newlines and tabs
// included: for a value printed in one table cell or on one line, where a
// newline in the data would forge a row.
func String(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r, false) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	out := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = appendInvalid(out, s[i])
		case unsafeRune(r, false):
			out = appendEscaped(out, r)
		default:
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}
