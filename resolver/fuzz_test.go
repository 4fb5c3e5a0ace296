package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzTypes are the POI types FuzzExtract picks from.
var fuzzTypes = []string{TypeFunction, TypeMethod, TypeClass, TypeInterface, TypeVariable, TypeImport, "other"}

func FuzzExtract(f *testing.F) {
	f.Add("function add(a, b) { return sum(a, b) /* x( */ }", "add", uint8(0), "a.js")
	f.Add("def f():\n    '''doc(''' \n    return g(1)  # h(\n", "f", uint8(1), "a.py")
	f.Add("class A<T> extends B<T> implements C, D { m() { n() } }", "A", uint8(2), "a.ts")
	f.Add("class A(B, metaclass=M):\n    pass", "A", uint8(2), "a.py")
	f.Add("type R interface {\n\tio.Reader\n\tClose() error\n}", "R", uint8(3), "a.go")
	f.Add("import X, { a, b as c } from './x'\nconst { d } = require('d')", "X", uint8(5), "a.js")
	f.Add("from x import (a,\n b as c)\nimport os.path", "a", uint8(5), "a.py")
	f.Add("import (\n\t\"fmt\"\n\tm \"math/v2\"\n)", "fmt", uint8(5), "a.go")
	f.Add("`${'\"\\`", "", uint8(0), "")
	f.Add("new new new (((( )))) ))) function* * def class", "x", uint8(2), "")
	f.Add("class A extends B {\n  #x = f()\n  @d(g()) m<T>(a): R {\n    h()\n  }\n  static { i() }\n}", "A", uint8(2), "a.ts")
	f.Add("func f() {\n\tvar (\n\t\tx = g[T](y).H()\n\t)\n\t(&q.T{}).M()\n\t(*T)(x).N()\n}", "f", uint8(0), "a.go")

	f.Fuzz(func(t *testing.T, code, name string, typ uint8, filePath string) {
		p := POI{ID: "p", Type: fuzzTypes[int(typ)%len(fuzzTypes)], Name: name, FilePath: filePath, RawCode: code}
		got, err := Extract(context.Background(), p)
		require.NoError(t, err)
		require.True(t, slices.IsSortedFunc(got, compareReferences), "not sorted: %v", got)
		for i, r := range got {
			require.NotEmpty(t, r.Name, "empty name in %v", got)
			require.Contains(t, []RelType{Calls, Extends, Implements, Imports}, r.Type)
			if i > 0 {
				require.NotEqual(t, got[i-1], r, "duplicate in %v", got)
			}
		}
	})
}

func FuzzDecodePOI(f *testing.F) {
	f.Add([]byte(`{"id":"m1","type":"function_definition","name":"add","filePath":"a.js","lineNumber":3,"rawCode":"x","context":""}`))
	f.Add([]byte(`{"id":"m1","type":"x","name":"y","lineNumber":3.0e0}`))
	f.Add([]byte(`{"id":"m1","type":"x","name":"y","lineNumber":-0.5e-3}`))
	f.Add([]byte(`{"id":12}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"id":"a"}]`))
	f.Add([]byte(`{"id":"a","type":"b","name":"c","lineNumber":1e400}`))
	f.Add([]byte(`{"id":"\ud800","type":"b","name":"c","lineNumber":"1"}`))

	f.Add([]byte(` { "id" : "a\\\"\n\t\/\b\f\r" , "type":"b","name":"c","lineNumber":0,"x":[1],"rawCode":null} `))
	f.Add([]byte(`{"id":"a","type":"b","name":"c","lineNumber":1,"id":"d","context":"\u00e9\ud83d\ude00"}`))
	f.Add([]byte("{\"id\":\"a\xff\",\"type\":\"b\",\"name\":\"c\",\"lineNumber\":1,\"i\\u0064\":2}"))
	// Flat objects, so that the fast path (not the fallback) decodes the
	// escapes, surrogate pairs and invalid UTF-8.
	f.Add([]byte(`{"id":"a\\\"\n\t\/\b\f\r\u003c","type":"b","name":"c","lineNumber":0,"rawCode":null,"x":true}`))
	f.Add([]byte("{\"id\":\"a\xff\",\"type\":\"b\",\"name\":\"c\",\"lineNumber\":1,\"context\":\"\\ud800x\"}"))

	f.Add([]byte(`{"id":"a","type":"b","name":"c","lineNumber":1,"symbol":"m/p.(*T).M","references":[{"type":"CALLS","symbol":"m/p.F"},{"type":"EXTENDS","targetId":"b"}]}`))
	f.Add([]byte(`{"id":"a","type":"b","name":"c","lineNumber":1,"references":[]}`))
	f.Add([]byte(`{"id":"a","type":"b","name":"c","lineNumber":1,"references":[{"type":"CALLZ","symbol":"\ud800","targetId":null,"type":"CALLS"}]}`))

	f.Add([]byte(`{"id":"m","type":"method_definition","name":"Begin","filePath":"a.go","lineNumber":1,"rawCode":"func (db *DB) Begin() (*Tx, error) {\n\treturn nil, nil\n}"}`))
	f.Add([]byte(`{"id":"s","type":"class_declaration","name":"Conn","filePath":"a.go","lineNumber":1,"rawCode":"Conn struct {\n\tpgConn *pgconn.PgConn\n\tConfig\n}"}`))
	// A struct longer than the code Receiver, ResultType and FieldTypes read
	// (maxShapeBytes decoded), mostly plain text so the input stays small:
	// the fuzzer minimizes every new input it finds, and a large one takes
	// minutes.
	long := `{"id":"s","type":"class_declaration","name":"T","filePath":"a.go","lineNumber":1,"rawCode":"T struct {` +
		`\n\tf\u00e9 *q.T\t\"x\"` + strings.Repeat(`\n\tf *q.T`, maxShapeBytes/8) + `\n}"}`
	f.Add([]byte(long))

	f.Fuzz(func(t *testing.T, raw []byte) {
		// The fast path (scanObject) and encoding/json agree on every input.
		general, generalErr := decodeGeneral(raw)
		if fields, ok := scanObject(raw); ok {
			require.True(t, json.Valid(raw), "scanObject accepted invalid JSON %q", raw)
			fast, fastErr := validate(fields, true)
			require.Equal(t, general, fast, "input %q", raw)
			require.Equal(t, generalErr, fastErr, "input %q", raw)
		}

		id, idOK, filePath, filePathOK := Peek(raw)
		p, err := DecodePOI(raw)

		// DecodeSymbol is DecodePOI and Peek, without the code.
		sym := DecodeSymbol(raw)
		require.Equal(t, [4]any{id, idOK, filePath, filePathOK}, [4]any{sym.ID, sym.IDOK, sym.FilePath, sym.FilePathOK}, "input %q", raw)
		require.Equal(t, err, sym.Err, "input %q", raw)
		withoutCode, symWithoutCode := p, sym.POI
		withoutCode.RawCode, withoutCode.Context, symWithoutCode.RawCode = "", "", ""
		require.Equal(t, withoutCode, symWithoutCode, "input %q", raw)
		// It keeps what the symbol table reads of the code.
		require.Equal(t, [3]string{Receiver(p), ResultType(p), FieldTypes(p)},
			[3]string{Receiver(sym.POI), ResultType(sym.POI), FieldTypes(sym.POI)}, "input %q", raw)

		if err != nil {
			var verr *ValidationError
			require.True(t, errors.As(err, &verr), "not a *ValidationError: %v", err)
			require.Equal(t, POI{}, p)
			require.NotEmpty(t, verr.Reason)
			if verr.Field != "id" && verr.Field != "" {
				require.True(t, idOK)
				require.Equal(t, id, verr.POIID)
			}
			return
		}
		require.True(t, idOK)
		require.Equal(t, id, p.ID)
		require.NotEmpty(t, p.ID)
		require.NotEmpty(t, p.Type)
		require.NotEmpty(t, p.Name)
		require.GreaterOrEqual(t, p.LineNumber, 0)
		require.LessOrEqual(t, p.LineNumber, math.MaxInt32)

		// A decoded POI survives a round trip.
		again, err := json.Marshal(p)
		require.NoError(t, err)
		p2, err := DecodePOI(again)
		require.NoError(t, err)
		require.Equal(t, p, p2)
	})
}

// lookupUniverse is a small Go tree of every kind of candidate a derived
// lookup reads: functions with result types, structs with fields (embedded,
// qualified, of type parameters), methods on several receivers, in several
// packages.
var lookupUniverse = []Candidate{
	{POIID: "Conn", FileID: "pgx/conn.go", Name: "Conn", Type: TypeClass, Fields: "cfg ConnConfig, pgConn pgconn.PgConn, Logger"},
	{POIID: "ConnConfig", FileID: "pgx/conn.go", Name: "ConnConfig", Type: TypeClass, Fields: "Config pgconn.Config"},
	{POIID: "PgConn", FileID: "pgx/pgconn/pgconn.go", Name: "PgConn", Type: TypeClass, Fields: "conn net.Conn"},
	{POIID: "Config", FileID: "pgx/pgconn/config.go", Name: "Config", Type: TypeClass},
	{POIID: "Logger", FileID: "pgx/log.go", Name: "Logger", Type: TypeInterface},
	{POIID: "Config.Copy", FileID: "pgx/pgconn/config.go", Name: "Copy", Type: TypeMethod, Receiver: "Config"},
	{POIID: "ConnConfig.Copy", FileID: "pgx/conn.go", Name: "Copy", Type: TypeMethod, Receiver: "ConnConfig", Result: "ConnConfig"},
	{POIID: "Other.Copy", FileID: "x/other.go", Name: "Copy", Type: TypeMethod, Receiver: "Other"},
	{POIID: "PgConn.Exec", FileID: "pgx/pgconn/pgconn.go", Name: "Exec", Type: TypeMethod, Receiver: "PgConn", Result: "MultiResultReader"},
	{POIID: "Conn.Exec", FileID: "pgx/conn.go", Name: "Exec", Type: TypeMethod, Receiver: "Conn", Result: "-"},
	{POIID: "Conn.Begin", FileID: "pgx/conn.go", Name: "Begin", Type: TypeMethod, Receiver: "Conn", Result: "Tx"},
	{POIID: "Tx.Commit", FileID: "pgx/tx.go", Name: "Commit", Type: TypeMethod, Receiver: "Tx"},
	{POIID: "Tx", FileID: "pgx/tx.go", Name: "Tx", Type: TypeClass, Fields: "conn *Conn"},
	{POIID: "Connect", FileID: "pgx/conn.go", Name: "Connect", Type: TypeFunction, Result: "Conn"},
	{POIID: "pgconn.Connect", FileID: "pgx/pgconn/pgconn.go", Name: "Connect", Type: TypeFunction, Result: "PgConn"},
	{POIID: "Must", FileID: "pgx/must.go", Name: "Must", Type: TypeFunction, Result: "T"},
	{POIID: "New", FileID: "pgx/new.go", Name: "New", Type: TypeFunction, Result: "Conn"},
	{POIID: "Conn.New", FileID: "pgx/conn.go", Name: "New", Type: TypeMethod, Receiver: "Conn"},
	// The root package and test files: qualifiers that may name the root,
	// and declarations only a directory's tests see.
	{POIID: "root.Conn", FileID: "conn.go", Name: "Conn", Type: TypeClass, Fields: "cfg ConnConfig"},
	{POIID: "root.Conn.Begin", FileID: "conn.go", Name: "Begin", Type: TypeMethod, Receiver: "Conn", Result: "pgx.Tx"},
	{POIID: "root.Connect", FileID: "connect.go", Name: "Connect", Type: TypeFunction, Result: "Conn"},
	{POIID: "fake.Exec", FileID: "pgx/fake_test.go", Name: "Exec", Type: TypeMethod, Receiver: "fakeConn"},
	{POIID: "fake.Commit", FileID: "pgx/fake_test.go", Name: "Commit", Type: TypeMethod, Receiver: "fakeTx"},
}

// FuzzLookupNames holds the invariant the worker's single candidate read
// relies on: a reference's lookup reads only the candidates of the names
// LookupNames lists. For any reference name, and for every reference the
// Go extractor emits from any code, Lookup over LookupNames' candidates
// equals Lookup over the whole tree.
func FuzzLookupNames(f *testing.F) {
	for _, s := range []struct{ name, code string }{
		{"{Connect}.Exec", "func f() {\n\tc := Connect()\n\tc.Exec()\n}"},
		{"{.Conn:pgConn}.Exec", "func (c *Conn) f() {\n\tc.pgConn.Exec()\n\tc.cfg.Config.Copy()\n}"},
		{"{{.Conn:cfg}:Config}.Copy", "func f() {\n\ttx, err := Connect().Begin()\n\ttx.Commit()\n}"},
		{"{{Connect}.Begin}.Commit", "func f() {\n\tc := pgconn.Connect()\n\tc.Exec()\n}"},
		{"{pgconn.Connect}.Exec", "func f() {\n\tx := Must(g())\n\tx.Copy()\n}"},
		{"{Must}.Copy", "func f() {\n\tfor _, c := range cs {\n\t\tc.Exec()\n\t}\n}"},
		{"{New}.New", "func f() {\n\tn := New()\n\tn.New()\n}"},
		{"(.Conn).Exec", "func (c Conn) g() { c.Exec(); c.cfg.Copy() }"},
		{"{.Tx:conn}.Begin", "func (tx *Tx) g() { tx.conn.Begin() }"},
		{"{{{{x}}}}.y", "func f() { a.b.c.d.e() }"},
		{"{(pgx.Conn).Begin}.Commit", "func f(c *pgx.Conn) {\n\ttx := c.Begin()\n\ttx.Commit()\n\t(&pgx.Conn{}).Begin().Exec()\n}"},
		{"{{pgx.Connect}.Begin}.Exec", "func f() {\n\tvar (\n\t\tc = pgx.Connect[T](x).Begin()\n\t)\n\tc.Exec()\n}"},
	} {
		f.Add(s.name, s.code)
	}
	f.Fuzz(func(t *testing.T, name, code string) {
		for _, file := range []string{"pgx/conn.go", "pgx/conn_test.go", "conn_test.go"} {
			requireLookupNamesSuffice(t, file, Reference{Name: name, Type: Calls}, lookupUniverse)
			p := POI{ID: "p", Type: TypeFunction, Name: "f", FilePath: file, RawCode: code}
			refs, err := Extract(context.Background(), p)
			require.NoError(t, err)
			for _, ref := range refs {
				requireLookupNamesSuffice(t, file, ref, lookupUniverse)
			}
		}
	})
}
