package scipindex

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/scip-code/scip/bindings/go/scip"

	"github.com/relay-dev/relay/resolver"
)

// FuzzRead: any index over any source is read without a panic; it is
// either an *Error or documents whose every POI relay accepts and whose
// rawCode is a piece of the source.
func FuzzRead(f *testing.F) {
	f.Add(encodeFuzz(f, true), tsSrc, pySrc)
	f.Add(encodeFuzz(f, false), "export class Sq {\n  x = (", "def f(:\n")
	f.Add([]byte{0x12, 0x80, 0x80, 0x80, 0x80, 0x10}, tsSrc, pySrc)
	// A type's occurrence on the class's own name (review: it panicked).
	f.Add(encodeDocs(f, &scip.Document{RelativePath: "pkg/c.py", Occurrences: []*scip.Occurrence{
		mkOcc(sym("`m`/Foo#"), isDef, []int32{0, 6, 9}, 0, 0, 1, 8), mkOcc(sym("`m`/Base#"), 0, []int32{0, 6, 6}),
		mkOcc(sym("`m`/Base#"), 0, []int32{0, 6, 9})}}), tsSrc, "class Foo(Base):\n    pass\n")
	f.Fuzz(func(t *testing.T, index []byte, ts, py string) {
		src := fstest.MapFS{"src/sq.ts": {Data: []byte(ts)}, "pkg/c.py": {Data: []byte(py)}}
		err := Read(context.Background(), bytes.NewReader(index), Config{Source: src}, func(file File) error {
			text := ts
			if file.Analysis.FileID == "pkg/c.py" {
				text = py
			}
			for _, raw := range file.Analysis.POIs {
				p, err := resolver.DecodePOI(raw)
				if err != nil {
					// A name or id past relay's limits is the outbox's to
					// reject, with the file named; nothing else may fail.
					var verr *resolver.ValidationError
					if !errors.As(err, &verr) || !strings.Contains(verr.Reason, "-byte limit") {
						t.Fatalf("poi of %s: %v", file.Analysis.FileID, err)
					}
					continue
				}
				if file.Analysis.FileID == "src/sq.ts" || file.Analysis.FileID == "pkg/c.py" {
					if !bytes.Contains([]byte(text), []byte(p.RawCode)) {
						t.Fatalf("poi %q: rawCode %q is not in the source", p.ID, p.RawCode)
					}
				}
			}
			return nil
		})
		var ierr *Error
		if err != nil && !errors.As(err, &ierr) {
			t.Fatalf("not an *Error: %v", err)
		}
	})
}

func encodeDocs(f *testing.F, docs ...*scip.Document) []byte {
	f.Helper()
	return encode(f, docs...)
}

func encodeFuzz(f *testing.F, both bool) []byte {
	f.Helper()
	if both {
		return encode(f, pyDoc(), tsDoc())
	}
	return encode(f, tsDoc())
}
