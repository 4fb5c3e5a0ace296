package resolvefile_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/outbox"
)

// goFile builds a Go file's analysis from (type, name, rawCode) triples;
// POI ids are "<file>:<name>".
func goFile(file string, pois ...[3]string) outbox.Analysis {
	a := outbox.Analysis{FileID: file}
	for i, p := range pois {
		raw, _ := json.Marshal(map[string]any{"id": file + ":" + p[1], "type": p[0], "name": p[1], "filePath": file,
			"lineNumber": i + 1, "rawCode": p[2]})
		a.POIs = append(a.POIs, raw)
	}
	return a
}

// TestEndToEnd_DerivedReferencesFollowTheirDependencies: a method call on
// the value of a call (d := db.Open(); d.Close()) or of a field
// (s.db.Close()) resolves through the result and field types in the
// symbol table, whichever file is published first, and resolves again
// when a publish changes the function's result type or the struct's field
// type: a name it looks up but is not named after.
func TestEndToEnd_DerivedReferencesFollowTheirDependencies(t *testing.T) {
	t.Parallel()
	const (
		fn, method, class = "function_definition", "method_definition", "class_declaration"
	)
	dbFile := func(openResult string) outbox.Analysis {
		return goFile("db/db.go",
			[3]string{fn, "Open", "func Open() *" + openResult + " {\n\treturn nil\n}"},
			[3]string{class, "DB", "type DB struct {\n\tconn *Conn\n}"},
			[3]string{method, "Close", "func (d *DB) Close() error {\n\treturn d.conn.Close()\n}"})
	}
	connFile := goFile("db/conn.go",
		[3]string{class, "Conn", "type Conn struct{}"},
		[3]string{method, "Close", "func (c *Conn) Close() error {\n\treturn nil\n}"})
	serverFile := func(field string) outbox.Analysis {
		return goFile("app/server.go",
			[3]string{class, "Server", "type Server struct {\n\tdb *db." + field + "\n}"},
			[3]string{method, "run", "func (s *Server) run() {\n\ts.db.Close()\n}"})
	}
	mainFile := goFile("app/main.go",
		[3]string{fn, "main", "func main() {\n\td := db.Open()\n\td.Close()\n}"})

	e := setupE2E(t, 4)
	e.start(t)
	for _, a := range []outbox.Analysis{mainFile, serverFile("DB"), dbFile("DB"), connFile} {
		e.publish(t, a)
	}
	waitDrained(t, e.db.Pool)
	require.Equal(t, []string{
		"app/main.go:main CALLS db/db.go:Close",
		"app/main.go:main CALLS db/db.go:Open",
		"app/server.go:run CALLS db/db.go:Close",
		"db/db.go:Close CALLS db/conn.go:Close",
	}, relationships(t, e.db.Pool))

	// Open now returns a *Conn; Server's field is a *Conn.
	e.publish(t, dbFile("Conn"))
	e.publish(t, serverFile("Conn"))
	waitDrained(t, e.db.Pool)
	require.Equal(t, []string{
		"app/main.go:main CALLS db/conn.go:Close",
		"app/main.go:main CALLS db/db.go:Open",
		"app/server.go:run CALLS db/conn.go:Close",
		"db/db.go:Close CALLS db/conn.go:Close",
	}, relationships(t, e.db.Pool))

	// The method they resolve to goes, then comes back.
	e.publish(t, outbox.Analysis{FileID: "db/conn.go", POIs: connFile.POIs[:1]})
	waitDrained(t, e.db.Pool)
	require.Equal(t, []string{"app/main.go:main CALLS db/db.go:Open"}, relationships(t, e.db.Pool))
	e.publish(t, connFile)
	e.publish(t, dbFile("DB"))
	waitDrained(t, e.db.Pool)
	require.Equal(t, []string{
		"app/main.go:main CALLS db/db.go:Close",
		"app/main.go:main CALLS db/db.go:Open",
		"app/server.go:run CALLS db/conn.go:Close",
		"db/db.go:Close CALLS db/conn.go:Close",
	}, relationships(t, e.db.Pool))
}

// TestEndToEnd_DerivedReferenceFollowsAStructOfAnotherFile: a method call
// on a field (s.db.Close() in app/handler.go) whose struct (Server) is
// declared in another file resolves again when a publish of that file
// changes the field's type: only through depends, since the referring
// file is not published again.
func TestEndToEnd_DerivedReferenceFollowsAStructOfAnotherFile(t *testing.T) {
	t.Parallel()
	const (
		method, class = "method_definition", "class_declaration"
	)
	dbFile := goFile("db/db.go",
		[3]string{class, "DB", "type DB struct{}"},
		[3]string{method, "Close", "func (d *DB) Close() error {\n\treturn nil\n}"})
	connFile := goFile("db/conn.go",
		[3]string{class, "Conn", "type Conn struct{}"},
		[3]string{method, "Close", "func (c *Conn) Close() error {\n\treturn nil\n}"})
	serverFile := func(field string) outbox.Analysis {
		return goFile("app/server.go",
			[3]string{class, "Server", "type Server struct {\n\tdb *db." + field + "\n}"})
	}
	handlerFile := goFile("app/handler.go",
		[3]string{method, "handle", "func (s *Server) handle() {\n\ts.db.Close()\n}"})

	e := setupE2E(t, 4)
	e.start(t)
	for _, a := range []outbox.Analysis{handlerFile, serverFile("DB"), dbFile, connFile} {
		e.publish(t, a)
	}
	waitDrained(t, e.db.Pool)
	require.Equal(t, []string{"app/handler.go:handle CALLS db/db.go:Close"}, relationships(t, e.db.Pool))

	for _, tt := range []struct{ field, want string }{{"Conn", "db/conn.go:Close"}, {"DB", "db/db.go:Close"}} {
		e.publish(t, serverFile(tt.field))
		waitDrained(t, e.db.Pool)
		require.Equal(t, []string{"app/handler.go:handle CALLS " + tt.want}, relationships(t, e.db.Pool), tt.field)
	}
}
