package goanalyze_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/resolver"
)

func TestExtract_SampleFile(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("testdata", "sample.go.txt"))
	require.NoError(t, err)
	pois, err := goanalyze.Extract("pkg/sample.go", src)
	require.NoError(t, err)

	tests := []struct {
		id, typ, name string
		line          int
		rawCode       string
	}{
		{"pkg/sample.go:4:fmt", resolver.TypeImport, "fmt", 4, `import "fmt"`},
		{"pkg/sample.go:7:strings", resolver.TypeImport, "strings", 7, `"strings"`},
		{"pkg/sample.go:8:yaml", resolver.TypeImport, "yaml", 8, `yaml "gopkg.in/yaml.v3"`},
		{"pkg/sample.go:10:pgx", resolver.TypeImport, "pgx", 10, `"github.com/jackc/pgx/v5"`},
		{"pkg/sample.go:14:Greeter", resolver.TypeInterface, "Greeter", 14,
			"type Greeter interface {\n\tfmt.Stringer\n\tGreet(name string) string\n}"},
		{"pkg/sample.go:20:base", resolver.TypeClass, "base", 20, "base struct{ n int }"},
		{"pkg/sample.go:21:English", resolver.TypeClass, "English", 21, "English struct {\n\t\tbase\n\t\tPrefix string\n\t}"},
		{"pkg/sample.go:30:Greet", resolver.TypeMethod, "Greet", 30,
			"func (e *English) Greet(name string) string {\n\tcount++\n\treturn e.Prefix + strings.ToUpper(name) + helper()\n}"},
		{"pkg/sample.go:35:helper", resolver.TypeFunction, "helper", 35,
			"func helper() string { return fmt.Sprint(yaml.Node{}, pgx.Identifier{}) }"},
	}
	require.Len(t, pois, len(tests))
	for i, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p := pois[i]
			require.Equal(t, tt.id, p.ID)
			require.Equal(t, tt.typ, p.Type)
			require.Equal(t, tt.name, p.Name)
			require.Equal(t, tt.line, p.LineNumber)
			require.Equal(t, tt.rawCode, p.RawCode)
			require.Equal(t, "pkg/sample.go", p.FilePath)
		})
	}

	// The resolver reads what relay needs from the extracted code.
	refs, err := resolver.Extract(context.Background(), pois[7])
	require.NoError(t, err)
	require.Contains(t, refs, resolver.Reference{Name: "helper", Type: resolver.Calls})
	refs, err = resolver.Extract(context.Background(), pois[6])
	require.NoError(t, err)
	require.Equal(t, []resolver.Reference{{Name: "base", Type: resolver.Extends}}, refs)
}

func TestExtract_ParseErrorNamesFileAndLine(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("testdata", "broken.go.txt"))
	require.NoError(t, err)
	_, err = goanalyze.Extract("x/broken.go", src)
	var pe *goanalyze.ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "x/broken.go", pe.File)
	require.Equal(t, 5, pe.Line)
	require.Contains(t, pe.Error(), "x/broken.go:5: ")
}

func TestWalk_SkipsTestdataVendorAndReportsParseErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	}
	write("a/a.go", "package a\n\nfunc A() { B() }\n")
	write("a/b.go", "package a\n\nfunc B() {}\n")
	write("a/bad.go", "package a\n\nfunc {\n")
	write("a/testdata/t.go", "package t\n\nfunc T() {}\n")
	write("vendor/v/v.go", "package v\n\nfunc V() {}\n")
	write("a/notes.txt", "not go")

	var files []string
	var skipped []string
	err := goanalyze.Walk(context.Background(), root, func(f goanalyze.File) error {
		if f.Err != nil {
			skipped = append(skipped, f.Err.Error())
			return nil
		}
		files = append(files, f.Analysis.FileID)
		require.NotEmpty(t, f.Analysis.POIs)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a/a.go", "a/b.go"}, files)
	require.Len(t, skipped, 1)
	require.Contains(t, skipped[0], "a/bad.go:3: ")
}

func TestWalk_SkipsFilesTheDefaultBuildExcludes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(src), 0o600))
	}
	write("a.go", "package a\n\nfunc Encode() {}\n")
	write("v2_a.go", "//go:build goexperiment.jsonv2\n\npackage a\n\nfunc Encode() {}\n")
	write("ignored.go", "//go:build ignore\n\npackage main\n\nfunc main() {}\n")
	write("a_plan9.go", "package a\n\nfunc Encode() {}\n")
	write("a_test.go", "package a\n\nfunc TestEncode() { Encode() }\n")

	var files []string
	err := goanalyze.Walk(context.Background(), root, func(f goanalyze.File) error {
		files = append(files, f.Analysis.FileID)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a.go", "a_test.go"}, files)
}

func BenchmarkExtract(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("testdata", "sample.go.txt"))
	require.NoError(b, err)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := goanalyze.Extract("pkg/sample.go", src); err != nil {
			b.Fatal(err)
		}
	}
}
