package resolver

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResultType(t *testing.T) {
	t.Parallel()

	tests := []struct{ name, typ, code, want string }{
		{"PointerResultOfAMethod", TypeMethod, "func (db *DB) Begin() (*Tx, error) {", "Tx"},
		{"SingleResult", TypeFunction, "func newTestDB(t testing.TB, name string) *DB {\n\treturn nil\n}", "DB"},
		{"QualifiedResult", TypeFunction, "func connect(ctx context.Context) (c *pgconn.PgConn, err error) {", "pgconn.PgConn"},
		{"NamedResultsSharingAType", TypeFunction, "func f() (a, b *T) {", "T"},
		{"GenericResult", TypeFunction, "func New[K comparable, V any](n int) *List[K, V] {", "List"},
		{"MultiLineParameters", TypeFunction, "func f(\n\ta int,\n\tb func() error,\n) (*Rows, error) {", "Rows"},
		{"OneLineBody", TypeFunction, "func f() Conn { return Conn{} }", "Conn"},
		{"ResultWithoutMethods", TypeFunction, "func f() (int, error) {", "-"},
		{"ErrorResult", TypeMethod, "func (r *Rows) Err() error {", "-"},
		{"SliceResult", TypeFunction, "func f() []*T {", "-"},
		{"NoResult", TypeFunction, "func f(x interface{}) {", ""},
		{"TypeParameterResult", TypeFunction, "func Must[T any](v T, err error) T {", ""},
		{"TypeParametersSharingAConstraint", TypeFunction, "func Pick[K, V comparable](m map[K]V) *V {", ""},
		{"ReceiverTypeParameterResult", TypeMethod, "func (s *Stack[T]) Pop() (T, bool) {", ""},
		{"GenericTypeOfATypeParameter", TypeMethod, "func (s *Stack[T]) Top() *Node[T] {", "Node"},
		{"NotAGoFunction", TypeClass, "T struct{}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ResultType(POI{Type: tt.typ, FilePath: "a/b.go", RawCode: tt.code}))
		})
	}
	require.Empty(t, ResultType(POI{Type: TypeFunction, FilePath: "a.js", RawCode: "func f() *T {"}))
}

func TestFieldTypes(t *testing.T) {
	t.Parallel()

	tests := []struct{ name, code, want string }{
		{"NamedAndEmbeddedFields", "Conn struct {\n\tpgConn *pgconn.PgConn\n\tconfig *ConnConfig\n\t*Base\n\tsync.Mutex\n}",
			"pgConn pgconn.PgConn config ConnConfig Base Base Mutex sync.Mutex"},
		{"WithTheTypeKeyword", "type DB struct {\n\tconnector driver.Connector // comment\n\tmu sync.Mutex\n}",
			"connector driver.Connector mu sync.Mutex"},
		{"SharedTypesTagsAndNoMethods", "T struct {\n\ta, b Conn `json:\"a\"`\n\tn int\n\tm map[string]T\n\tfn func() error\n}",
			"a Conn b Conn n - m - fn -"},
		{"NestedLiteralStruct", "T struct {\n\tinner struct {\n\t\tx Conn\n\t}\n\tc *Conn\n}", "inner - c Conn"},
		{"SemicolonsAndGenerics", "List[T any] struct { head *Node[T]; n int }", "head Node n -"},
		{"TypeParameterFieldsAreLeftOut", "Pair[K comparable, V any] struct {\n\tk K\n\tv *V\n\tnext *Pair[K, V]\n}", "next Pair"},
		{"FieldsAfterLongComments", "Command struct {\n" + strings.Repeat("\t// a comment line that documents a field at length.\n", 200) +
			"\tflags *flag.FlagSet\n}", "flags flag.FlagSet"},
		{"NotAStruct", "Level int", ""},
		{"Alias", "Tx = pgx.Tx", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, FieldTypes(POI{Type: TypeClass, FilePath: "a/b.go", RawCode: tt.code}))
		})
	}
}

// TestLookup_GoDerived covers method calls on the values of calls and
// fields (database/sql's and pgx's misses of issue 19).
func TestLookup_GoDerived(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "newTestDB", FileID: "sql/sql_test.go", Name: "newTestDB", Type: TypeFunction, Result: "DB"},
		{POIID: "Open", FileID: "sql/sql.go", Name: "Open", Type: TypeFunction, Result: "DB"},
		{POIID: "noResult", FileID: "sql/sql.go", Name: "noResult", Type: TypeFunction},
		{POIID: "DB.Begin", FileID: "sql/sql.go", Name: "Begin", Type: TypeMethod, Receiver: "DB", Result: "Tx"},
		{POIID: "fake.Begin", FileID: "sql/fakedb_test.go", Name: "Begin", Type: TypeMethod, Receiver: "fakeConn", Result: "driver.Tx"},
		{POIID: "Tx.Commit", FileID: "sql/sql.go", Name: "Commit", Type: TypeMethod, Receiver: "Tx"},
		{POIID: "fakeTx.Commit", FileID: "sql/fakedb_test.go", Name: "Commit", Type: TypeMethod, Receiver: "fakeTx"},
		{POIID: "DB.Close", FileID: "sql/sql.go", Name: "Close", Type: TypeMethod, Receiver: "DB"},
		{POIID: "Conn.Close", FileID: "sql/sql.go", Name: "Close", Type: TypeMethod, Receiver: "Conn"},
		{POIID: "Rows.Close", FileID: "sql/sql.go", Name: "Close", Type: TypeMethod, Receiver: "Rows"},
		{POIID: "Err", FileID: "sql/sql.go", Name: "Err", Type: TypeMethod, Receiver: "Rows", Result: "-"},
		{POIID: "Conn", FileID: "pgx/conn.go", Name: "Conn", Type: TypeClass, Fields: "pgConn pgconn.PgConn mu sync.Mutex cfg ConnConfig"},
		{POIID: "ConnConfig", FileID: "pgx/conn.go", Name: "ConnConfig", Type: TypeClass, Fields: "Config pgconn.Config"},
		{POIID: "PgConn.Exec", FileID: "pgx/pgconn/pgconn.go", Name: "Exec", Type: TypeMethod, Receiver: "PgConn"},
		{POIID: "Conn.Exec", FileID: "pgx/conn.go", Name: "Exec", Type: TypeMethod, Receiver: "Conn"},
		{POIID: "Config.Copy", FileID: "pgx/pgconn/config.go", Name: "Copy", Type: TypeMethod, Receiver: "Config"},
		{POIID: "Lock", FileID: "pgx/internal/lock.go", Name: "Lock", Type: TypeMethod, Receiver: "fakeLock"},
	}
	tests := []goCallCase{
		{"ResultOfAFunction", "sql/sql_test.go", "{newTestDB}.Close", "DB.Close", Resolved},
		{"ResultOfAMethodOfAKnownType", "sql/sql_test.go", "{(.DB).Begin}.Commit", "Tx.Commit", Resolved},
		{"ResultOfAResult", "sql/sql_test.go", "{{newTestDB}.Begin}.Commit", "Tx.Commit", Resolved},
		{"ResultOfAnExternalType", "sql/sql_test.go", "{(.fakeConn).Begin}.Commit", "", Unknown},
		{"ResultOfAFunctionOfTheNamedPackage", "cmd/main.go", "{sql.Open}.Close", "DB.Close", Resolved},
		{"ResultWithoutMethods", "sql/sql.go", "{(.Rows).Err}.Close", "", Unknown},
		{"ResultNotShownFallsBackToThePackage", "sql/sql.go", "{noResult}.Close", "", Ambiguous},
		{"AmbiguousCallFallsBackToAnyPackage", "sql/sql.go", "{.Begin}.Close", "", Ambiguous},
		{"UnknownFunctionFallsBackToThePackage", "sql/sql.go", "{missing}.Err", "Err", Resolved},
		{"FieldOfTheReceiverType", "pgx/conn.go", "{.Conn:pgConn}.Exec", "PgConn.Exec", Resolved},
		{"FieldOfAnExternalType", "pgx/conn.go", "{.Conn:mu}.Lock", "", Unknown},
		// A field of a derived struct is read as the plain member call: its
		// struct's name is known only while resolving, so LookupNames
		// cannot list it.
		{"FieldOfAFieldFallsBackToAnyPackage", "pgx/conn.go", "{{.Conn:cfg}:Config}.Copy", "Config.Copy", Resolved},
		{"FieldOfAResultFallsBackToAnyPackage", "sql/sql_test.go", "{{newTestDB}:conn}.Close", "", Ambiguous},
		{"FieldOfATypeOfANamedPackage", "cmd/main.go", "{pgx.Conn:pgConn}.Exec", "PgConn.Exec", Resolved},
		{"UnknownFieldFallsBackToAnyPackage", "pgx/conn.go", "{.Conn:other}.Lock", "Lock", Resolved},
	}
	runGoCallCases(t, cands, tests)
}

// TestLookup_GoOutsideTypes: a method called on a value of a type from
// outside the corpus links to no tree method (issue 25): rows.Next() on the
// *sql.Rows of s.db.Query(…), req.Body.Close() on an *http.Request, even
// when the tree's only Next or Close is one guess away. A qualifier that
// names no directory may name the root package (no directory name): its
// types are read there.
func TestLookup_GoOutsideTypes(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "Store", FileID: "store/store.go", Name: "Store", Type: TypeClass, Fields: "db sql.DB mu sync.Mutex"},
		{POIID: "Iter.Next", FileID: "store/iter.go", Name: "Next", Type: TypeMethod, Receiver: "Iter"},
		{POIID: "File.Close", FileID: "store/file.go", Name: "Close", Type: TypeMethod, Receiver: "File"},
		{POIID: "Locker.Lock", FileID: "store/lock.go", Name: "Lock", Type: TypeMethod, Receiver: "Locker"},
		// The root package (pgx): Conn.PgConn returns a *pgconn.PgConn.
		{POIID: "Conn", FileID: "conn.go", Name: "Conn", Type: TypeClass, Fields: "pgConn pgconn.PgConn"},
		{POIID: "Conn.PgConn", FileID: "conn.go", Name: "PgConn", Type: TypeMethod, Receiver: "Conn", Result: "pgconn.PgConn"},
		{POIID: "dbTx.LargeObjects", FileID: "tx.go", Name: "LargeObjects", Type: TypeMethod, Receiver: "dbTx", Result: "LargeObjects"},
		{POIID: "PgConn.Close", FileID: "pgconn/pgconn.go", Name: "Close", Type: TypeMethod, Receiver: "PgConn"},
		{POIID: "LargeObjects.Next", FileID: "large_objects.go", Name: "Next", Type: TypeMethod, Receiver: "LargeObjects"},
	}
	tests := []goCallCase{
		{"MethodOfAFieldOfAnOutsideType", "store/store.go", "{{.Store:db}.Query}.Next", "", Unknown},
		{"MethodOfAParameterOfAnOutsideType", "store/store.go", "{(sql.DB).Query}.Next", "", Unknown},
		{"ResultOfAResultOfAnOutsideFunction", "store/store.go", "{{sql.Open}.Query}.Next", "", Unknown},
		{"FieldOfAnOutsideStruct", "store/server.go", "{http.Request:Body}.Close", "", Unknown},
		{"MutexField", "store/store.go", "{.Store:mu}.Lock", "", Unknown},
		{"MethodOfARootTypeThroughItsQualifier", "pgtype/x_test.go", "{(pgx.Conn).PgConn}.Close", "PgConn.Close", Resolved},
		{"FieldOfARootStructThroughItsQualifier", "stdlib/sql.go", "{pgx.Conn:pgConn}.Close", "PgConn.Close", Resolved},
		// pgx.Tx is an interface of the root: its method's result is not
		// known, and the value is not outside the tree.
		{"MethodOfARootInterfaceFallsBackToAnyPackage", "pgtype/x_test.go", "{(pgx.Tx).LargeObjects}.Next", "", Ambiguous},
		// The root package's own non-test files cannot import it.
		{"NotTheRootFromItsOwnFiles", "conn_helper.go", "{(pgx.Conn).PgConn}.Close", "", Unknown},
	}
	runGoCallCases(t, cands, tests)
}

// TestLookup_GoTestFiles: a _test.go file's declarations are seen only by
// the test files of its directory, and a method whose receiver's type is
// not known prefers a non-test file's (issue 25: interface calls resolved
// to test doubles).
func TestLookup_GoTestFiles(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "Conn.Close", FileID: "store/conn.go", Name: "Close", Type: TypeMethod, Receiver: "Conn"},
		{POIID: "fakeConn.Close", FileID: "store/fake_test.go", Name: "Close", Type: TypeMethod, Receiver: "fakeConn"},
		{POIID: "fakeConn.Open", FileID: "store/fake_test.go", Name: "Open", Type: TypeMethod, Receiver: "fakeConn"},
		{POIID: "helper", FileID: "store/helper_test.go", Name: "helper", Type: TypeFunction},
	}
	tests := []goCallCase{
		{"NonTestFileSeesNoTestDouble", "store/store.go", ".Close", "Conn.Close", Resolved},
		{"NonTestFileSeesNoTestMethod", "cmd/main.go", ".Open", "", Unknown},
		{"NonTestFileSeesNoTestFunction", "store/store.go", "helper", "", Unknown},
		{"OtherDirectorysTestSeesNoTestDouble", "cmd/main_test.go", "(store).Close", "Conn.Close", Resolved},
		{"TestFilePrefersANonTestMethod", "store/store_test.go", ".Close", "Conn.Close", Resolved},
		{"TestFileStillFindsATestMethod", "store/store_test.go", ".Open", "fakeConn.Open", Resolved},
		{"TestFileSeesItsDirectorysTestFunctions", "store/store_test.go", "helper", "helper", Resolved},
		{"KnownReceiverHasNoPreference", "store/store_test.go", "(.fakeConn).Close", "fakeConn.Close", Resolved},
	}
	runGoCallCases(t, cands, tests)
}

// goCallCase is a Go call ref in file and what Lookup gives it.
type goCallCase struct {
	name, file, ref string
	want            string
	outcome         Outcome
}

// runGoCallCases runs each case as a parallel subtest: Lookup's target and
// outcome, and that the candidates of LookupNames suffice.
func runGoCallCases(t *testing.T, cands []Candidate, tests []goCallCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, outcome := Lookup("src", tt.file, Reference{Name: tt.ref, Type: Calls}, cands)
			require.Equal(t, tt.outcome, outcome)
			require.Equal(t, tt.want, got)
			requireLookupNamesSuffice(t, tt.file, Reference{Name: tt.ref, Type: Calls}, cands)
		})
	}
}

// requireLookupNamesSuffice checks the invariant the worker and
// internal/accuracy rely on: Lookup given only the candidates named by
// LookupNames(ref) resolves ref as Lookup given every candidate.
func requireLookupNamesSuffice(t *testing.T, file string, ref Reference, cands []Candidate) {
	t.Helper()
	names := LookupNames(ref)
	var sub []Candidate
	for _, c := range cands {
		if slices.Contains(names, c.Name) {
			sub = append(sub, c)
		}
	}
	wantT, wantO := Lookup("src", file, ref, cands)
	gotT, gotO := Lookup("src", file, ref, sub)
	require.Equal(t, wantO, gotO, "%s: LookupNames %v", ref.Name, names)
	require.Equal(t, wantT, gotT, "%s: LookupNames %v", ref.Name, names)
}

// TestLookup_GoDerivedReadsOnlyLookupNames: a field of a derived struct
// ({{.Conn:cfg}:Config}.Copy, {{newConn}:Config}.Copy) reads a struct whose
// name its reference does not spell; it resolves as the plain member call,
// from the candidates LookupNames lists.
func TestLookup_GoDerivedReadsOnlyLookupNames(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "Conn", FileID: "pgx/conn.go", Name: "Conn", Type: TypeClass, Fields: "cfg ConnConfig"},
		{POIID: "ConnConfig", FileID: "pgx/conn.go", Name: "ConnConfig", Type: TypeClass, Fields: "Config pgconn.Config"},
		{POIID: "Config.Copy", FileID: "pgx/pgconn/config.go", Name: "Copy", Type: TypeMethod, Receiver: "Config"},
		{POIID: "other.Copy", FileID: "x/other.go", Name: "Copy", Type: TypeMethod, Receiver: "Other"},
		{POIID: "newConn", FileID: "pgx/conn.go", Name: "newConn", Type: TypeFunction, Result: "ConnConfig"},
	}
	for _, name := range []string{"{{.Conn:cfg}:Config}.Copy", "{{newConn}:Config}.Copy", "{{{newConn}.x}:Config}.Copy",
		"{.Conn:cfg}.Copy", "{newConn}.Copy", "{{.Conn:cfg}.x}.Copy"} {
		requireLookupNamesSuffice(t, "pgx/conn.go", Reference{Name: name, Type: Calls}, cands)
	}
	_, outcome := Lookup("src", "pgx/conn.go", Reference{Name: "{{newConn}:Config}.Copy", Type: Calls}, cands)
	require.Equal(t, Ambiguous, outcome)
}

// TestLookup_GoDerivedTrustsOnlyAPinnedCall: the type of a call's value is
// read from its target's result only when the call's form pins a package or
// a receiver (f, q.f, (.T).M, (q.T).M, {…}.M). A call on a value of unknown
// type (.M, (.).M, ().M, (q).M) is a guess: the method call on its value
// resolves as the plain member call.
func TestLookup_GoDerivedTrustsOnlyAPinnedCall(t *testing.T) {
	t.Parallel()

	cands := []Candidate{
		{POIID: "Store.Open", FileID: "store/store.go", Name: "Open", Type: TypeMethod, Receiver: "Store", Result: "File"},
		{POIID: "File.Close", FileID: "store/file.go", Name: "Close", Type: TypeMethod, Receiver: "File"},
		{POIID: "Conn.Close", FileID: "db/conn.go", Name: "Close", Type: TypeMethod, Receiver: "Conn"},
	}
	_, before := Lookup("src", "app/run.go", Reference{Name: ".Close", Type: Calls}, cands)
	require.Equal(t, Ambiguous, before)
	for _, tt := range []struct{ file, ref, want string }{
		{"app/run.go", "{.Open}.Close", ""},
		{"store/run.go", "{(.).Open}.Close", ""},
		{"store/run.go", "{().Open}.Close", ""},
		{"app/run.go", "{(store).Open}.Close", ""},
		{"store/run.go", "{(.Store).Open}.Close", "File.Close"},
		{"app/run.go", "{(store.Store).Open}.Close", "File.Close"},
	} {
		got, outcome := Lookup("src", tt.file, Reference{Name: tt.ref, Type: Calls}, cands)
		if tt.want == "" {
			require.Equal(t, Ambiguous, outcome, "%s links to %s", tt.ref, got)
		} else {
			require.Equal(t, tt.want, got, tt.ref)
		}
		requireLookupNamesSuffice(t, tt.file, Reference{Name: tt.ref, Type: Calls}, cands)
	}
}

func TestLookupNames(t *testing.T) {
	t.Parallel()

	tests := []struct {
		ref  Reference
		want []string
	}{
		{Reference{Name: "(.DB).Close", Type: Calls}, []string{"Close"}},
		{Reference{Name: "{newTestDB}.Close", Type: Calls}, []string{"Close", "newTestDB"}},
		{Reference{Name: "{{newTestDB}.Begin}.Commit", Type: Calls}, []string{"Begin", "Commit", "newTestDB"}},
		{Reference{Name: "{{.Conn:cfg}:Config}.Copy", Type: Calls}, []string{"Copy"}},
		{Reference{Name: "{pgx.Conn:pgConn}.Exec", Type: Calls}, []string{"Conn", "Exec"}},
		{Reference{Name: "{(.DB).Close}.Close", Type: Calls}, []string{"Close"}},
		{Reference{Name: "sym:{x}.y", Type: Calls}, []string{"sym:{x}.y"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, LookupNames(tt.ref), tt.ref.Name)
		require.Equal(t, tt.ref.Name[0] == '{', IsDerived(tt.ref), tt.ref.Name)
	}
}
