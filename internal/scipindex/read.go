// Package scipindex maps a SCIP index (the protobuf files scip-python,
// scip-typescript, scip-java, rust-analyzer and other indexers write) to
// relay analyses: one outbox.Analysis per document, whose POIs carry their
// symbols and supplied references. It is pure: it reads the index and the
// indexed source, and hands each document to its caller, which publishes
// it (relay analyze --scip). See Read for what a document becomes.
package scipindex

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/scip-code/scip/bindings/go/scip"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/relay-dev/relay/outbox"
)

// Config is what Read needs besides the index.
type Config struct {
	// Source is the indexed project's root: each document's
	// relative_path is read from it (a document's own text, when the
	// index holds it, is used instead).
	Source fs.FS
	// ModulePOIs adds, for each document with call sites outside its
	// definitions, a POI for that top-level code (a function_definition
	// named __module__ with id "<path>:1:", no symbol, and as rawCode the
	// document with its definitions' and imports' text blanked, lines
	// kept), whose references are the calls there. relay analyze --scip
	// does not set it: a module is no point of interest a user calls. The
	// accuracy harness sets it to score against call graphs that name a
	// module's own code as a caller (relay-eval --pycg --scip
	// --module-pois).
	ModulePOIs bool
}

// File is one document of the index, mapped.
type File struct {
	// Analysis is the document's analysis (Repository left empty for the
	// caller to set): fileId is the document's relative_path.
	Analysis outbox.Analysis
	// Occurrences is how many occurrences the document holds; POIs how
	// many POIs it became; Fallbacks how many of its call sites the index
	// resolved nothing at, left to relay's lexical rule (a name reference).
	Occurrences, POIs, Fallbacks int
}

// Error is a malformed or truncated index: it names the document (its
// position in the index, from 1, and its path when it was read) and, when
// one is at fault, the occurrence (its position in the document, from 1).
type Error struct {
	Document   int
	Path       string
	Occurrence int // 0 when no single occurrence is at fault
	Line       int // the occurrence's line, from 1 (0 when none)
	Reason     string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("scip index: document #%d", e.Document)
	if e.Path != "" {
		s += fmt.Sprintf(" %q", e.Path)
	}
	if e.Occurrence > 0 {
		s += fmt.Sprintf(", occurrence #%d", e.Occurrence)
		if e.Line > 0 {
			s += fmt.Sprintf(" (line %d)", e.Line)
		}
	}
	return s + ": " + e.Reason
}

// Read reads the SCIP index in r and calls fn with each document, mapped,
// in the index's order. It holds one document at a time (its occurrences
// and its source): memory is bounded by the largest document, not by the
// index.
//
// The index's framing is checked first, by seeking over it: a truncated
// index, or one whose length prefixes do not fit the file, is an *Error
// before fn is called at all. Each document is then decoded, validated
// and mapped whole before fn sees it (every range inside its source,
// every symbol well formed), so fn never receives part of a document; a
// document that fails is an *Error naming it and the occurrence at fault,
// and Read returns it without reading further. A caller that must publish
// nothing of a malformed index reads it twice: once with an fn that only
// counts (Validate), then to publish.
//
// An error fn returns stops Read and is returned as it is.
func Read(ctx context.Context, r io.ReadSeeker, cfg Config, fn func(File) error) error {
	if err := checkFraming(r); err != nil {
		return err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("error reading the scip index: %w", err)
	}
	n, lastPath := 0, ""
	var stop error // fn's error or a mapping error, returned as is
	v := scip.IndexVisitor{
		VisitDocument: func(ctx context.Context, d *scip.Document) error {
			n++
			if err := ctx.Err(); err != nil {
				stop = err
				return err
			}
			f, err := mapDocument(ctx, n, d, cfg)
			if err != nil {
				stop = err
				return err
			}
			lastPath = d.RelativePath
			if err := fn(f); err != nil {
				stop = err
				return err
			}
			return nil
		},
	}
	err := v.ParseStreaming(ctx, bufio.NewReaderSize(r, 64<<10))
	switch {
	case err == nil:
		return nil
	case stop != nil && errors.Is(err, stop):
		return stop
	}
	after := ""
	if lastPath != "" {
		after = fmt.Sprintf(" (the one after %q)", lastPath)
	}
	return &Error{Document: n + 1, Reason: "cannot be decoded" + after + ": " + err.Error()}
}

// Index's fields (scip.proto): metadata, documents, external_symbols.
const (
	fieldMetadata        = 1
	fieldDocuments       = 2
	fieldExternalSymbols = 3
)

// checkFraming walks the index's top-level fields by their length
// prefixes, seeking over their contents, and reports an index that is
// truncated, has a field of another kind, or a length that runs past its
// end, naming the document. The bindings' streaming reader allocates each
// field's length before reading it, so a corrupt length must not reach it.
func checkFraming(r io.ReadSeeker) error {
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("error reading the scip index: %w", err)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("error reading the scip index: %w", err)
	}
	br := bufio.NewReader(r)
	var pos int64
	doc := 0
	fail := func(reason string) error {
		return &Error{Document: doc + 1, Reason: fmt.Sprintf("%s (at byte %d of %d)", reason, pos, size)}
	}
	for pos < size {
		tag, k, err := readUvarint(br)
		if err != nil {
			return fail("the index is truncated or corrupt: " + err.Error())
		}
		pos += int64(k)
		num, typ := protowire.DecodeTag(tag)
		if (num != fieldMetadata && num != fieldDocuments && num != fieldExternalSymbols) || typ != protowire.BytesType {
			return fail(fmt.Sprintf("not a SCIP index: field %d of wire type %d where metadata, documents or external symbols are", num, typ))
		}
		length, k, err := readUvarint(br)
		if err != nil {
			return fail("the index is truncated: " + err.Error())
		}
		pos += int64(k)
		if length > uint64(size-pos) {
			return fail(fmt.Sprintf("the index is truncated: a %d-byte field where %d bytes are left", length, size-pos))
		}
		if _, err := br.Discard(int(length)); err != nil {
			return fail("the index is truncated: " + err.Error())
		}
		pos += int64(length)
		if num == fieldDocuments {
			doc++
		}
	}
	return nil
}

// readUvarint reads a protobuf varint, returning it and its length.
func readUvarint(br *bufio.Reader) (uint64, int, error) {
	var x uint64
	for i := 0; i < binaryMaxVarintLen; i++ {
		b, err := br.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, binaryMaxVarintLen, errors.New("a varint longer than 10 bytes")
}

const binaryMaxVarintLen = 10
