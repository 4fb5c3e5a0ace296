package embeddedpg

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// debianRoot is where Debian and Ubuntu install each PostgreSQL major
// version's server binaries: debianRoot/<version>/bin.
var debianRoot = "/usr/lib/postgresql"

// InstalledBinDir returns the directory holding an installed PostgreSQL's
// initdb and postgres: the newest version's under /usr/lib/postgresql
// (Debian, Ubuntu), else pg_config --bindir's, else that of initdb on
// PATH. It returns "" when PostgreSQL is not installed.
func InstalledBinDir() string {
	if dir := newestDebianBinDir(debianRoot); dir != "" {
		return dir
	}
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output(); err == nil {
			if dir := strings.TrimSpace(string(out)); hasServerBinaries(dir) {
				return dir
			}
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(initdb); hasServerBinaries(dir) {
			return dir
		}
	}
	return ""
}

// newestDebianBinDir returns root/<version>/bin of the highest version
// that has the server binaries, or "".
func newestDebianBinDir(root string) string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return ""
	}
	var versions []string
	for _, e := range entries {
		if hasServerBinaries(filepath.Join(root, e.Name(), "bin")) {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) == 0 {
		return ""
	}
	return filepath.Join(root, slices.MaxFunc(versions, compareVersions), "bin")
}

// compareVersions orders "9.6" < "13" < "15": by each dot-separated
// number, a name that is not a number sorting first.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		x, y := -1, -1
		if i < len(as) {
			if n, err := strconv.Atoi(as[i]); err == nil {
				x = n
			}
		}
		if i < len(bs) {
			if n, err := strconv.Atoi(bs[i]); err == nil {
				y = n
			}
		}
		if x != y {
			return x - y
		}
	}
	return strings.Compare(a, b)
}

// hasServerBinaries reports whether dir holds initdb and postgres.
func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}
