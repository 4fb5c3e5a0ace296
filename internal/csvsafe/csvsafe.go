// Package csvsafe writes CSV that a spreadsheet opens as data, never as
// formulas.
//
// Spreadsheet programs evaluate a cell that starts with =, +, - or @ as a
// formula (=HYPERLINK(…) can exfiltrate, =cmd|… can run commands in old
// Excel), and some do so after a leading tab or carriage return. Exports of
// failed_pois and dead_lettered_items carry text from analysed files and
// agents, so every cell that starts with one of those characters is
// prefixed with a single quote, OWASP's rule for CSV injection. The quote
// shows in a text editor and in a spreadsheet it marks the cell as text; a
// consumer that wants the original value strips one leading quote from a
// cell whose second character is one of = + - @ \t \r.
package csvsafe

import (
	"encoding/csv"
	"io"
)

// Cell returns s neutralized: prefixed with ' when it starts with a
// character a spreadsheet treats as the start of a formula.
func Cell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// Writer is a csv.Writer that neutralizes every cell with Cell.
type Writer struct {
	cw  *csv.Writer
	rec []string
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{cw: csv.NewWriter(w)} }

// Write writes one record, each cell neutralized.
func (w *Writer) Write(record []string) error {
	w.rec = w.rec[:0]
	for _, s := range record {
		w.rec = append(w.rec, Cell(s))
	}
	return w.cw.Write(w.rec)
}

// Flush writes any buffered data and returns the first write error.
func (w *Writer) Flush() error {
	w.cw.Flush()
	return w.cw.Error()
}
