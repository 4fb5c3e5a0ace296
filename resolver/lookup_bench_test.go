package resolver

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkLookup_CommonName looks up a name with as many definitions as
// String has in the Go standard library (about 2,000 methods).
func BenchmarkLookup_CommonName(b *testing.B) {
	cands := make([]Candidate, 2000)
	for i := range cands {
		cands[i] = Candidate{POIID: fmt.Sprintf("p%d", i), FileID: fmt.Sprintf("f%d.go", i/3), Name: "String", Type: TypeMethod}
	}
	ref := Reference{Name: "String", Type: Calls}
	for b.Loop() {
		Lookup("src", "f5000.go", ref, cands)
	}
}

// BenchmarkLookup_GoForms looks up one reference of each Go call form
// (plain, qualified, receiver, typed, guessed, derived by call and by
// field, root) among a few hundred candidates of the names they read.
func BenchmarkLookup_GoForms(b *testing.B) {
	var cands []Candidate
	for i := range 40 {
		dir := fmt.Sprintf("pkg%d", i)
		cands = append(cands,
			Candidate{POIID: dir + ".Open", FileID: dir + "/db.go", Name: "Open", Type: TypeFunction, Result: "DB"},
			Candidate{POIID: dir + ".DB.Begin", FileID: dir + "/db.go", Name: "Begin", Type: TypeMethod, Receiver: "DB", Result: "Tx"},
			Candidate{POIID: dir + ".Tx.Commit", FileID: dir + "/db.go", Name: "Commit", Type: TypeMethod, Receiver: "Tx"},
			Candidate{POIID: dir + ".Conn", FileID: dir + "/conn.go", Name: "Conn", Type: TypeClass, Fields: "db DB tx Tx n -"},
			Candidate{POIID: dir + ".Conn.Close", FileID: dir + "/conn.go", Name: "Close", Type: TypeMethod, Receiver: "Conn"},
		)
	}
	refs := benchGoRefs()
	b.ReportAllocs()
	for b.Loop() {
		for _, ref := range refs {
			Lookup("src", "pkg1/main.go", ref, cands)
		}
	}
}

// BenchmarkLookupNames lists the names of a reference of every Go form.
func BenchmarkLookupNames(b *testing.B) {
	refs := benchGoRefs()
	b.ReportAllocs()
	for b.Loop() {
		for _, ref := range refs {
			LookupNames(ref)
		}
	}
}

// benchGoRefs is a reference of each Go form: plain, qualified, receiver,
// typed, guessed, derived by call and by field, root, and an embedded type.
func benchGoRefs() []Reference {
	return []Reference{
		{Name: "Open", Type: Calls},
		{Name: "pkg7.Open", Type: Calls},
		{Name: "().Close", Type: Calls},
		{Name: "(.).Close", Type: Calls},
		{Name: "(pkg3).Close", Type: Calls},
		{Name: "(.Conn).Close", Type: Calls},
		{Name: "(pkg3.Conn).Close", Type: Calls},
		{Name: ".Commit", Type: Calls},
		{Name: "{Open}.Begin", Type: Calls},
		{Name: "{{pkg5.Open}.Begin}.Commit", Type: Calls},
		{Name: "{.Conn:tx}.Commit", Type: Calls},
		{Name: "{pkg9.Conn:db}.Begin", Type: Calls},
		{Name: "^.Open", Type: Calls},
		{Name: "(^.Conn).Close", Type: Calls},
		{Name: "pkg2.Conn", Type: Extends},
	}
}

// benchGoMethod is a Go method whose calls take every form the scanner
// writes.
const benchGoMethod = `func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	conn := &Conn{srv: s}
	db, err := sql.Open("pgx", s.dsn)
	if err != nil {
		return fmt.Errorf("error opening: %w", err)
	}
	tx, err := db.Begin()
	defer tx.Rollback()
	rows := newRows(tx)
	for rows.Next() {
		s.handle(ctx, rows.Value())
		conn.srv.log.Info("row")
		conn.Close()
	}
	c := pgx.Connect(ctx, s.dsn).PgConn()
	c.Exec(ctx, "SELECT 1")
	var buf bytes.Buffer
	buf.WriteString(strings.ToLower(s.name))
	items[0].Reset()
	s.pool.Put(conn)
	return s.finish(ctx)
}`

// BenchmarkExtract_Go extracts the references of benchGoMethod, in a
// package and in a test file of the root directory (which adds root forms).
func BenchmarkExtract_Go(b *testing.B) {
	for _, file := range []string{"srv/server.go", "server_test.go"} {
		b.Run(file, func(b *testing.B) {
			p := POI{ID: "p", Type: TypeMethod, Name: "Serve", FilePath: file, RawCode: benchGoMethod}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Extract(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
