package goanalyze

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
)

// DefaultRepository is the repository `relay analyze` publishes dir's files
// to when it is not told one: the module path of the go.mod of the module
// that contains dir (the nearest go.mod in dir or above it), else the base
// name of dir made absolute and clean.
func DefaultRepository(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("error making %s absolute: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "go.mod")
		data, err := os.ReadFile(p)
		switch {
		case err == nil:
			if path := modfile.ModulePath(data); path != "" {
				return path, nil
			}
			// A go.mod without a module line names no module: the go
			// command refuses it, and the directory's name is used.
			return filepath.Base(abs), nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("error reading %s: %w", p, err)
		}
		if parent := filepath.Dir(d); parent == d {
			return filepath.Base(abs), nil
		}
	}
}

// moduleRoot returns the nearest directory, abs or above it, that holds a
// go.mod file, and whether there is one: the module the go command loads
// abs's packages in.
func moduleRoot(abs string) (string, bool) {
	for d := abs; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !st.IsDir() {
			return d, true
		}
		if parent := filepath.Dir(d); parent == d {
			return "", false
		}
	}
}
