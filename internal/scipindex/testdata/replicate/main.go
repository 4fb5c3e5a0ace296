// Command replicate writes a SCIP index holding N copies of every document
// of an index, copy K's paths under copyK/ and the package PKG of its
// symbols renamed PKGK (so that the copies' symbols stay unique), for
// BENCHMARKS.md's memory figures at size:
//
//	go run ./internal/scipindex/testdata/replicate IN.scip OUT.scip N PKG
//
// It holds the input's documents in memory (it is a test tool).
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/scip-code/scip/bindings/go/scip"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func main() {
	if len(os.Args) != 5 {
		fail(fmt.Errorf("usage: replicate IN.scip OUT.scip N PKG"))
	}
	in, out := os.Args[1], os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fail(err)
	}
	var docs []*scip.Document
	f, err := os.Open(in)
	if err != nil {
		fail(err)
	}
	v := scip.IndexVisitor{VisitDocument: func(_ context.Context, d *scip.Document) error { docs = append(docs, d); return nil }}
	if err := v.ParseStreaming(context.Background(), f); err != nil {
		fail(err)
	}
	o, err := os.Create(out)
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriter(o)
	for k := 0; k < n; k++ {
		for _, d := range docs {
			c := proto.Clone(d).(*scip.Document)
			c.RelativePath = fmt.Sprintf("copy%d/%s", k, d.RelativePath)
			pkg := os.Args[4]
			repl := func(s string) string { return strings.ReplaceAll(s, " "+pkg+" ", fmt.Sprintf(" %s%d ", pkg, k)) }
			for _, o := range c.Occurrences {
				o.Symbol = repl(o.Symbol)
			}
			for _, si := range c.Symbols {
				si.Symbol = repl(si.Symbol)
				for _, r := range si.Relationships {
					r.Symbol = repl(r.Symbol)
				}
			}
			b, err := proto.Marshal(c)
			if err != nil {
				fail(err)
			}
			w.Write(protowire.AppendTag(nil, 2, protowire.BytesType))
			w.Write(protowire.AppendVarint(nil, uint64(len(b))))
			w.Write(b)
		}
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
	if err := o.Close(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "replicate:", err)
	os.Exit(1)
}
