package resolvefile_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
)

// suppliedCorpus builds n files whose POIs carry analyzer-supplied symbols
// and references (by symbol and by target id), in Go and TypeScript files:
// every file's functions share one name, so only the symbols tell them
// apart; one symbol is declared in two files (ambiguous outside them); one
// is declared only in the last file; each file has a POI whose reference
// list is malformed.
func suppliedCorpus(n int) []outbox.Analysis {
	var out []outbox.Analysis
	file := func(k int) string {
		if k%2 == 0 {
			return fmt.Sprintf("pkg%02d/f.go", k)
		}
		return fmt.Sprintf("src/f%02d.ts", k)
	}
	for k := range n {
		var pois []json.RawMessage
		add := func(id, typ, name, symbol, code string, refs ...map[string]string) {
			p := map[string]any{"id": id, "type": typ, "name": name, "filePath": file(k), "lineNumber": len(pois) + 1, "rawCode": code}
			if symbol != "" {
				p["symbol"] = symbol
			}
			if refs != nil {
				p["references"] = refs
			}
			raw, _ := json.Marshal(p)
			pois = append(pois, raw)
		}
		sym := func(typ, s string) map[string]string { return map[string]string{"type": typ, "symbol": s} }
		tid := func(typ, id string) map[string]string { return map[string]string{"type": typ, "targetId": id} }
		next, prev := (k+1)%n, (k+n-1)%n
		add(fmt.Sprintf("s%02d.f", k), "function_definition", "run", fmt.Sprintf("m/p%02d.run", k),
			"function run() { get(); other(); }", // not read: references are supplied
			sym("CALLS", fmt.Sprintf("m/p%02d.run", next)), tid("CALLS", fmt.Sprintf("s%02d.g", (k+3)%n)),
			sym("CALLS", "m/late.fn"), sym("CALLS", "m/dup"), tid("CALLS", fmt.Sprintf("s%02d.l", n-1)),
			sym("CALLS", "m/nowhere.fn"), sym("CALLS", fmt.Sprintf("m/p%02d.run", k)))
		add(fmt.Sprintf("s%02d.g", k), "method_definition", "get", fmt.Sprintf("m/p%02d.(*T).get", k),
			"get() { run(); }", []map[string]string{}...)
		add(fmt.Sprintf("s%02d.C", k), "class_declaration", "C", fmt.Sprintf("m/p%02d.C", k), "class C {}",
			tid("EXTENDS", fmt.Sprintf("s%02d.C", prev)), sym("IMPLEMENTS", fmt.Sprintf("m/p%02d.I", next)),
			sym("IMPLEMENTS", fmt.Sprintf("m/p%02d.C", next))) // a class is not implemented
		add(fmt.Sprintf("s%02d.I", k), "interface_declaration", "I", fmt.Sprintf("m/p%02d.I", k), "interface I {}")
		if k < 2 {
			add(fmt.Sprintf("s%02d.d", k), "function_definition", "dup", "m/dup", "function dup() {}")
		}
		if k == n-1 {
			add(fmt.Sprintf("s%02d.l", k), "function_definition", "late", "m/late.fn", "function late() {}",
				sym("CALLS", "m/p00.run"))
		}
		pois = append(pois, json.RawMessage(fmt.Sprintf(
			`{"id":"s%02d.bad","type":"function_definition","name":"bad","lineNumber":1,"references":[{"type":"CALLZ","symbol":"x"}]}`, k)))
		out = append(out, outbox.Analysis{FileID: file(k), POIs: pois})
	}
	return out
}

func TestEndToEnd_SuppliedReferencesIndependentOfOrderAndConcurrency(t *testing.T) {
	t.Parallel()
	files := suppliedCorpus(10)

	ref, want := referenceRun(t, files)

	require.Contains(t, want, "s00.f CALLS s01.f", "by symbol, across files, although every function is named run")
	require.Contains(t, want, "s01.f CALLS s04.g", "by target id")
	require.Contains(t, want, "s03.f CALLS s09.l", "by symbol, declared only in the last file")
	require.Contains(t, want, "s04.f CALLS s09.l", "by target id of a POI of the last file")
	require.Contains(t, want, "s09.l CALLS s00.f")
	require.Contains(t, want, "s00.f CALLS s00.d", "a symbol declared in two files: the source's own")
	require.NotContains(t, want, "s02.f CALLS s00.d", "a symbol declared in two files is ambiguous outside them")
	require.NotContains(t, want, "s02.f CALLS s01.d")
	require.Contains(t, want, "s05.C EXTENDS s04.C")
	require.Contains(t, want, "s00.C EXTENDS s09.C")
	require.Contains(t, want, "s05.C IMPLEMENTS s06.I")
	require.NotContains(t, want, "s05.C IMPLEMENTS s06.C", "the target's type must accept the relationship")
	require.NotContains(t, want, "s00.f CALLS s00.f", "no self edges")
	for _, r := range want {
		require.False(t, strings.HasPrefix(r, "s03.g "), "an empty reference list: rawCode is not read: %s", r)
	}
	require.Equal(t, 10, testdb.Count(t, ref.db.Pool, `SELECT count(*) FROM failed_pois`), "one malformed reference list per file")
	require.Equal(t, 1, testdb.Count(t, ref.db.Pool,
		`SELECT count(*) FROM failed_pois WHERE poi_id = 's03.bad' AND error_message LIKE '%references[0].type "CALLZ" is not one of CALLS, EXTENDS, IMPLEMENTS, IMPORTS%'`))
	require.Equal(t, 10, testdb.Count(t, ref.db.Pool,
		`SELECT count(*) FROM poi_references WHERE target_poi_id IS NULL AND name = 'sym:m/nowhere.fn'`),
		"a symbol no POI has stays unresolved")
	require.Equal(t, 8, testdb.Count(t, ref.db.Pool,
		`SELECT count(*) FROM poi_references WHERE target_poi_id IS NULL AND name = 'sym:m/dup'`),
		"m/dup is ambiguous outside its two files")

	for _, tc := range orderCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupE2E(t, tc.concurrency)
			order := tc.order(files)
			e.start(t)
			e.publishConcurrently(t, order)
			// The last file re-published without late (the target of a
			// symbol and of an id), then whole: the references to it go
			// unresolved, then resolve again.
			last := files[len(files)-1]
			trimmed := last
			trimmed.POIs = trimmed.POIs[:len(trimmed.POIs)-2]
			e.publish(t, trimmed)
			waitDrained(t, e.db.Pool)
			without := relationships(t, e.db.Pool)
			require.NotContains(t, without, "s03.f CALLS s09.l")
			require.NotContains(t, without, "s04.f CALLS s09.l")
			require.Contains(t, without, "s00.f CALLS s01.f")
			e.publish(t, last)
			waitDrained(t, e.db.Pool)
			require.Equal(t, want, relationships(t, e.db.Pool))
		})
	}
}
