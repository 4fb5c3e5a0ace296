package resolver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodePOI(t *testing.T) {
	t.Parallel()

	valid := POI{ID: "m1", Type: TypeMethod, Name: "add", FilePath: "src/calc.js", LineNumber: 10, RawCode: "add(a) {}", Context: "class Calc"}

	// with returns a valid POI JSON object with field key set to the raw JSON value v,
	// or removed when v is "".
	with := func(key, v string) string {
		m := map[string]json.RawMessage{
			"id": json.RawMessage(`"m1"`), "type": json.RawMessage(`"method_definition"`), "name": json.RawMessage(`"add"`),
			"filePath": json.RawMessage(`"src/calc.js"`), "lineNumber": json.RawMessage(`10`),
			"rawCode": json.RawMessage(`"add(a) {}"`), "context": json.RawMessage(`"class Calc"`),
		}
		if v == "" {
			delete(m, key)
		} else {
			m[key] = json.RawMessage(v)
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		return string(b)
	}

	tests := []struct {
		name       string
		raw        string
		want       POI
		wantPOIID  string
		wantField  string
		wantReason string // substring of Reason; "" means no error expected
	}{
		{name: "Valid", raw: with("id", `"m1"`), want: valid},
		{name: "ExtraFieldsIgnored", raw: with("extra", `{"deep": [1, 2]}`), want: valid},
		{name: "LineNumberFloatIntegral", raw: with("lineNumber", `3.0`), want: func() POI { p := valid; p.LineNumber = 3; return p }()},
		{name: "LineNumberExponent", raw: with("lineNumber", `0.3e1`), want: func() POI { p := valid; p.LineNumber = 3; return p }()},
		{name: "LineNumberZero", raw: with("lineNumber", `0`), want: func() POI { p := valid; p.LineNumber = 0; return p }()},
		{name: "LineNumberMaxInt32", raw: with("lineNumber", `2147483647`), want: func() POI { p := valid; p.LineNumber = 2147483647; return p }()},
		{name: "OptionalFieldsAbsent", raw: `{"id":"m1","type":"function_definition","name":"f","lineNumber":1}`, want: POI{ID: "m1", Type: TypeFunction, Name: "f", LineNumber: 1}},
		{name: "OptionalFieldsNull", raw: `{"id":"m1","type":"x","name":"f","lineNumber":1,"filePath":null,"rawCode":null,"context":null}`, want: POI{ID: "m1", Type: "x", Name: "f", LineNumber: 1}},
		{name: "OptionalFieldsEmpty", raw: `{"id":"m1","type":"x","name":"f","lineNumber":1,"filePath":"","rawCode":"","context":""}`, want: POI{ID: "m1", Type: "x", Name: "f", LineNumber: 1}},
		{name: "UnicodeValues", raw: `{"id":"ü1","type":"function_definition","name":"添加","lineNumber":1,"rawCode":"def 添加(): pass\u2028"}`, want: POI{ID: "ü1", Type: TypeFunction, Name: "添加", LineNumber: 1, RawCode: "def 添加(): pass\u2028"}},
		{name: "KeysAreCaseSensitive", raw: `{"ID":"m1","type":"x","name":"f","lineNumber":1}`, wantField: "id", wantReason: "is required"},

		{name: "InvalidJSON", raw: `{"id": "m1",`, wantReason: "is not valid JSON: "},
		{name: "TrailingGarbage", raw: with("id", `"m1"`) + ` {}`, wantReason: "is not valid JSON: "},
		{name: "Empty", raw: ``, wantReason: "is not valid JSON: "},
		{name: "Null", raw: `null`, wantReason: "must be a JSON object, got null"},
		{name: "Array", raw: `[]`, wantReason: "must be a JSON object, got array"},
		{name: "String", raw: `"x"`, wantReason: `must be a JSON object, got string "x"`},
		{name: "Number", raw: ` 12 `, wantReason: "must be a JSON object, got number 12"},

		{name: "IDMissing", raw: with("id", ""), wantField: "id", wantReason: "is required"},
		{name: "IDNumber", raw: with("id", `12`), wantField: "id", wantReason: "must be a non-empty string, got number 12"},
		{name: "IDNull", raw: with("id", `null`), wantField: "id", wantReason: "must be a non-empty string, got null"},
		{name: "IDEmpty", raw: with("id", `""`), wantField: "id", wantReason: "must be a non-empty string, got empty string"},
		{name: "IDObject", raw: with("id", `{}`), wantField: "id", wantReason: "must be a non-empty string, got object"},
		{name: "TypeMissing", raw: with("type", ""), wantPOIID: "m1", wantField: "type", wantReason: "is required"},
		{name: "TypeArray", raw: with("type", `["a"]`), wantPOIID: "m1", wantField: "type", wantReason: "must be a non-empty string, got array"},
		{name: "TypeBoolean", raw: with("type", `true`), wantPOIID: "m1", wantField: "type", wantReason: "must be a non-empty string, got boolean true"},
		{name: "NameEmpty", raw: with("name", `""`), wantPOIID: "m1", wantField: "name", wantReason: "must be a non-empty string, got empty string"},
		{name: "NameNull", raw: with("name", `null`), wantPOIID: "m1", wantField: "name", wantReason: "got null"},
		{name: "NameNumber", raw: with("name", `1.5`), wantPOIID: "m1", wantField: "name", wantReason: "got number 1.5"},
		{name: "LineNumberMissing", raw: with("lineNumber", ""), wantPOIID: "m1", wantField: "lineNumber", wantReason: "is required"},
		{name: "LineNumberString", raw: with("lineNumber", `"ten"`), wantPOIID: "m1", wantField: "lineNumber", wantReason: `must be a non-negative integer, got string "ten"`},
		{name: "LineNumberNumericString", raw: with("lineNumber", `"3"`), wantPOIID: "m1", wantField: "lineNumber", wantReason: `got string "3"`},
		{name: "LineNumberNull", raw: with("lineNumber", `null`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "got null"},
		{name: "LineNumberBoolean", raw: with("lineNumber", `false`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "got boolean false"},
		{name: "LineNumberNegative", raw: with("lineNumber", `-1`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "must be a non-negative integer, got number -1"},
		{name: "LineNumberFraction", raw: with("lineNumber", `3.5`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "got number 3.5"},
		{name: "LineNumberTinyFraction", raw: with("lineNumber", `3.0000000000000000001`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "got number 3.0000000000000000001"},
		{name: "LineNumberTooLarge", raw: with("lineNumber", `2147483648`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "no greater than 2147483647, got number 2147483648"},
		{name: "LineNumberHugeExponent", raw: with("lineNumber", `1e99999999999999999999`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "no greater than 2147483647"},
		{name: "LineNumberObject", raw: with("lineNumber", `{"n":1}`), wantPOIID: "m1", wantField: "lineNumber", wantReason: "got object"},
		{name: "FilePathNumber", raw: with("filePath", `7`), wantPOIID: "m1", wantField: "filePath", wantReason: "must be a string, got number 7"},
		{name: "RawCodeArray", raw: with("rawCode", `["x"]`), wantPOIID: "m1", wantField: "rawCode", wantReason: "must be a string, got array"},
		{name: "ContextBoolean", raw: with("context", `true`), wantPOIID: "m1", wantField: "context", wantReason: "must be a string, got boolean true"},
		{name: "LongStringTruncated", raw: with("lineNumber", `"`+strings.Repeat("é", 100)+`"`), wantPOIID: "m1", wantField: "lineNumber", wantReason: `got string "` + strings.Repeat("é", 20) + `"...`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := DecodePOI([]byte(tt.raw))
			if tt.wantReason == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				return
			}
			require.Equal(t, POI{}, got)
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tt.wantPOIID, verr.POIID)
			require.Equal(t, tt.wantField, verr.Field)
			require.Contains(t, verr.Reason, tt.wantReason)

			msg := err.Error()
			if tt.wantPOIID != "" {
				require.Contains(t, msg, `poi "`+tt.wantPOIID+`": `)
			} else {
				require.Contains(t, msg, "poi at unknown id: ")
			}
			if tt.wantField != "" {
				require.Contains(t, msg, ": "+tt.wantField+" "+verr.Reason)
			} else {
				require.Contains(t, msg, ": value "+verr.Reason)
			}
		})
	}
}

func TestValidationError_Error(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  *ValidationError
		want string
	}{
		{name: "WithID", err: &ValidationError{POIID: "m1", Field: "lineNumber", Reason: `must be a non-negative integer, got string "ten"`}, want: `poi "m1": lineNumber must be a non-negative integer, got string "ten"`},
		{name: "UnknownID", err: &ValidationError{Field: "id", Reason: "is required"}, want: "poi at unknown id: id is required"},
		{name: "WholeValue", err: &ValidationError{Reason: "must be a JSON object, got array"}, want: "poi at unknown id: value must be a JSON object, got array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestPeek(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name           string
		raw            string
		wantID         string
		wantIDOK       bool
		wantFilePath   string
		wantFilePathOK bool
	}{
		{name: "Both", raw: `{"id":"a","filePath":"src/x.js","lineNumber":"bad"}`, wantID: "a", wantIDOK: true, wantFilePath: "src/x.js", wantFilePathOK: true},
		{name: "EmptyStringsAreStrings", raw: `{"id":"","filePath":""}`, wantIDOK: true, wantFilePathOK: true},
		{name: "WrongTypes", raw: `{"id":12,"filePath":null}`},
		{name: "Missing", raw: `{}`},
		{name: "OnlyFilePath", raw: `{"filePath":"a.go"}`, wantFilePath: "a.go", wantFilePathOK: true},
		{name: "NotAnObject", raw: `["id"]`},
		{name: "Null", raw: `null`},
		{name: "InvalidJSON", raw: `{"id":"a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			id, idOK, filePath, filePathOK := Peek([]byte(tt.raw))
			require.Equal(t, tt.wantID, id)
			require.Equal(t, tt.wantIDOK, idOK)
			require.Equal(t, tt.wantFilePath, filePath)
			require.Equal(t, tt.wantFilePathOK, filePathOK)
		})
	}
}

func TestDecodeSymbol_GoPOIsKeepWhatTheSymbolTableReads(t *testing.T) {
	t.Parallel()

	long := "T struct {\n\tconn *q.Conn\n" + strings.Repeat("\tf\u00e9\t\"x\" int\n", maxShapeBytes) + "}"
	tests := []struct {
		name, typ, code              string
		receiver, result, fieldTypes string
	}{
		{"Method", TypeMethod, "func (c *Conn) Query(sql string) (*Rows, error) {\n\tc.run(\"x)\")\n}", "Conn", "Rows", ""},
		{"Function", TypeFunction, "func newTestDB(t testing.TB) *DB {\n\treturn nil\n}", "", "DB", ""},
		{"Struct", TypeClass, "Conn struct {\n\tpgConn *pgconn.PgConn\n\tConfig\n}", "", "", "pgConn pgconn.PgConn Config Config"},
		{"LongStruct", TypeClass, long, "", "", FieldTypes(POI{Type: TypeClass, FilePath: "a.go", RawCode: long})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			code, err := json.Marshal(tt.code)
			require.NoError(t, err)
			raw := []byte(`{"id":"m","type":"` + tt.typ + `","name":"N","filePath":"a.go","lineNumber":1,"rawCode":` + string(code) + `}`)
			s := DecodeSymbol(raw)
			require.NoError(t, s.Err)
			full, err := DecodePOI(raw)
			require.NoError(t, err)
			for _, p := range []POI{s.POI, full} {
				require.Equal(t, tt.receiver, Receiver(p))
				require.Equal(t, tt.result, ResultType(p))
				require.Equal(t, tt.fieldTypes, FieldTypes(p))
			}
		})
	}
}
