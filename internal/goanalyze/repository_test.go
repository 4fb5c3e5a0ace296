package goanalyze

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

func TestModulePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ gomod, want string }{
		{"module example.com/m\n\ngo 1.22\n", "example.com/m"},
		{"// a comment\nmodule   example.com/m // trailing\n", "example.com/m"},
		{"module \"example.com/quoted\"\n", "example.com/quoted"},
		{"module `example.com/raw`\n", "example.com/raw"},
		{"go 1.22\n\nmodule example.com/late", "example.com/late"},
		{"modules example.com/x\nmodule\n", ""},
		{"go 1.22\n", ""},
		{"", ""},
	} {
		require.Equal(t, tc.want, modfile.ModulePath([]byte(tc.gomod)), "%q", tc.gomod)
	}
}

func TestDefaultRepository_IsTheModulePathOfTheContainingModuleElseTheDirectoryName(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mod := filepath.Join(root, "mod")
	sub := filepath.Join(mod, "internal", "p")
	plain := filepath.Join(root, "plain", "project")
	noModule := filepath.Join(root, "nomodule")
	for _, d := range []string{sub, plain, noModule} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(noModule, "go.mod"), []byte("go 1.22\n"), 0o600))

	repo, err := DefaultRepository(mod)
	require.NoError(t, err)
	require.Equal(t, "example.com/m", repo)

	// A directory inside the module: the module's path, not the
	// directory's name.
	repo, err = DefaultRepository(sub)
	require.NoError(t, err)
	require.Equal(t, "example.com/m", repo)

	// Outside a module (this test's temporary directories are in none):
	// the base name of the absolute, clean directory.
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, plain)
	require.NoError(t, err)
	repo, err = DefaultRepository(rel + string(filepath.Separator) + ".")
	require.NoError(t, err)
	require.Equal(t, "project", repo)

	// A go.mod without a module line names no module.
	repo, err = DefaultRepository(noModule)
	require.NoError(t, err)
	require.Equal(t, "nomodule", repo)
}
