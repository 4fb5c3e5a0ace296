package embeddedpg_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/embeddedpg"
)

// childEnv marks a test binary run by runAs: it runs the test's body.
const childEnv = "EMBEDDEDPG_TEST_CHILD"

// requireInstalled returns the installed PostgreSQL's binaries, failing
// t when there are none: these tests run the real server (not with
// -short).
func requireInstalled(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL servers")
	}
	dir := embeddedpg.InstalledBinDir()
	require.NotEmpty(t, dir, "these tests need PostgreSQL's server binaries: apt-get install postgresql")
	return dir
}

// processUID returns the real user id of process pid.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			require.NoError(t, err)
			return uid
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return 0
}

// With PostgreSQL installed, Start runs its binaries: a server on a
// loopback port, password required, its database created, as this user
// or, as root, as nobody; Stop ends it and removes its directory.
func TestStart_RunsTheInstalledPostgreSQLAndStopRemovesIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	binDir := requireInstalled(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := embeddedpg.Config{Database: "demo_db"}
	if os.Geteuid() != 0 {
		cfg.Dir = t.TempDir()
	}
	s, err := embeddedpg.Start(ctx, cfg)
	require.NoError(t, err)
	defer s.Stop()
	require.Equal(t, binDir, s.BinDir)
	require.False(t, s.Downloaded)
	require.Regexp(t, `^\d+\.\d+$`, s.Version)
	require.DirExists(t, filepath.Join(s.Dir, "data"))

	conn, err := pgx.Connect(ctx, s.URL)
	require.NoError(t, err)
	var db, role, listen, sockets string
	var backend int
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_database(), current_user, current_setting('listen_addresses'),
		current_setting('unix_socket_directories'), pg_backend_pid()`).Scan(&db, &role, &listen, &sockets, &backend))
	require.Equal(t, "demo_db", db)
	require.Equal(t, embeddedpg.Superuser, role)
	require.Equal(t, "127.0.0.1", listen)
	require.Empty(t, sockets, "no Unix socket")
	wantUID := os.Geteuid()
	if wantUID == 0 {
		u, err := user.Lookup(embeddedpg.UnprivilegedUser)
		require.NoError(t, err)
		wantUID, _ = strconv.Atoi(u.Uid)
		require.Equal(t, embeddedpg.UnprivilegedUser, s.OSUser)
	}
	require.Equal(t, wantUID, processUID(t, backend), "the server's user")
	require.NoError(t, conn.Close(ctx))

	noPassword := fmt.Sprintf("postgres://%s@127.0.0.1:%d/demo_db?sslmode=disable", embeddedpg.Superuser, s.Port)
	_, err = pgx.Connect(ctx, noPassword)
	require.Error(t, err, "the server wants the password")

	require.NoError(t, s.Stop())
	_, err = net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), 5*time.Second)
	require.Error(t, err, "the server is stopped")
	require.NoDirExists(t, s.Dir)
	_, err = os.Stat(fmt.Sprintf("/proc/%d", backend))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, s.Stop(), "a second Stop is harmless")
}

// As root, the server's user must reach its directory; when it cannot (a
// directory under root's home) Start says what to do.
func TestStart_AsRootSaysWhatToDoWhenNobodyCannotReachTheDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the root case")
	}
	t.Parallel()
	requireInstalled(t)
	private := t.TempDir() // 0700, root's
	require.NoError(t, os.Chmod(private, 0o700))
	_, err := embeddedpg.Start(context.Background(), embeddedpg.Config{Dir: filepath.Join(private, "pg")})
	require.Error(t, err)
	require.Contains(t, err.Error(), "PostgreSQL refuses to run as root, so relay runs it as nobody, who cannot reach")
	require.Contains(t, err.Error(), "set TMPDIR to a directory nobody can reach")
	entries, err := os.ReadDir(filepath.Join(private, "pg"))
	require.NoError(t, err)
	require.Empty(t, entries, "the run directory is removed")
}

// When PostgreSQL is not installed and the download fails, Start says to
// install it.
func TestStart_SaysToInstallPostgreSQLWhenTheDownloadFails(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	repo := "http://" + l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there
	dir := t.TempDir()
	cfg := embeddedpg.Config{CacheDir: dir, Download: true, RepositoryURL: repo}
	if os.Geteuid() != 0 {
		cfg.Dir = dir
	}
	_, err = embeddedpg.Start(context.Background(), cfg)
	require.ErrorContains(t, err, "PostgreSQL is not installed, and downloading it failed (install it: apt-get install postgresql): "+
		"error downloading PostgreSQL from "+repo+"/io/zonky/test/postgres/embedded-postgres-binaries-")
	require.ErrorContains(t, err, "connection refused")
}

// fakeRepository serves, laid out like Maven Central, a jar whose archive
// holds the given entries, and the jar's SHA-256 (sha256, when not empty,
// replaces it). It counts the jars it served.
type fakeRepository struct {
	*httptest.Server
	mu   sync.Mutex
	jars int
}

func newFakeRepository(t *testing.T, entries []*tar.Header, sha256sum string) *fakeRepository {
	t.Helper()
	xz, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("needs xz (xz-utils) to build the test's archive")
	}
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	for _, h := range entries {
		require.NoError(t, tw.WriteHeader(h))
	}
	require.NoError(t, tw.Close())
	cmd := exec.Command(xz, "--format=xz", "--check=crc32", "-c")
	cmd.Stdin = &tarball
	txz, err := cmd.Output()
	require.NoError(t, err)
	var jar bytes.Buffer
	zw := zip.NewWriter(&jar)
	w, err := zw.Create("postgres-linux-x86_64.txz")
	require.NoError(t, err)
	_, err = w.Write(txz)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	if sha256sum == "" {
		sum := sha256.Sum256(jar.Bytes())
		sha256sum = hex.EncodeToString(sum[:])
	}

	r := &fakeRepository{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		const prefix = "/io/zonky/test/postgres/embedded-postgres-binaries-"
		jarName := "-" + embeddedpg.DownloadVersion + ".jar"
		switch p := req.URL.Path; {
		case strings.HasPrefix(p, prefix) && strings.HasSuffix(p, jarName):
			r.mu.Lock()
			r.jars++
			r.mu.Unlock()
			_, _ = w.Write(jar.Bytes())
		case strings.HasPrefix(p, prefix) && strings.HasSuffix(p, jarName+".sha256"):
			_, _ = w.Write([]byte(sha256sum))
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *fakeRepository) served() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jars
}

// binariesLinkingTo is an archive of bin/initdb and bin/postgres linking
// to binDir's.
func binariesLinkingTo(binDir string) []*tar.Header {
	var hs []*tar.Header
	for _, name := range []string{"initdb", "postgres"} {
		hs = append(hs, &tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + name, Linkname: filepath.Join(binDir, name), Mode: 0o777})
	}
	return hs
}

// With no PostgreSQL installed, Start downloads the binaries (here from a
// repository of the test's own laid out like Maven Central, whose archive
// links to the installed binaries), checks their checksum, and runs them;
// the archive is downloaded once. As root they are extracted into the run
// directory, which nobody, who the server runs as, can reach; as another
// user into the cache directory, once. TestStart_DownloadsAsAnotherUser
// runs this test as nobody when the tests run as root.
func TestStart_DownloadsPostgreSQLWhenNoneIsInstalled(t *testing.T) {
	if os.Getenv(childEnv) != "as-user" {
		t.Parallel()
	}
	repo := newFakeRepository(t, binariesLinkingTo(requireInstalled(t)), "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cache := t.TempDir()
	cfg := embeddedpg.Config{CacheDir: cache, Download: true, RepositoryURL: repo.URL}
	if os.Geteuid() != 0 {
		cfg.Dir = cache
	}
	for run := 1; run <= 2; run++ {
		var progress bytes.Buffer
		cfg.Progress = &progress
		start := time.Now()
		s, err := embeddedpg.Start(ctx, cfg)
		require.NoError(t, err, "run %d", run)
		t.Logf("run %d: started in %s", run, time.Since(start))
		require.True(t, s.Downloaded)
		require.Contains(t, progress.String(), "PostgreSQL is not installed: using PostgreSQL "+embeddedpg.DownloadVersion+" from "+repo.URL)
		if os.Geteuid() == 0 {
			require.True(t, strings.HasPrefix(s.BinDir, s.Dir+"/"), "as root, in the run directory: %s", s.BinDir)
			require.Equal(t, embeddedpg.UnprivilegedUser, s.OSUser)
		} else {
			require.True(t, strings.HasPrefix(s.BinDir, filepath.Join(cache, "binaries-")), "in the cache: %s", s.BinDir)
		}
		conn, err := pgx.Connect(ctx, s.URL)
		require.NoError(t, err)
		var db string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
		require.Equal(t, embeddedpg.DatabaseDefault, db)
		require.NoError(t, conn.Close(ctx))
		require.NoError(t, s.Stop())
		require.NoDirExists(t, s.Dir)
	}
	require.Equal(t, 1, repo.served(), "downloaded once, then taken from the cache")
}

// As root, the download test also runs as a user other than root.
func TestStart_DownloadsAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(childEnv) != "" || testing.Short() {
		t.Skip("runs the download test as nobody when the tests run as root (not with -short)")
	}
	runAs(t, "nobody", "TestStart_DownloadsPostgreSQLWhenNoneIsInstalled")
}

// A download that does not match its published checksum, or an archive
// naming a file outside its directory, is refused before anything runs.
func TestStart_RefusesADownloadThatIsNotWhatWasPublished(t *testing.T) {
	t.Parallel()
	binDir := requireInstalled(t)
	for name, tc := range map[string]struct {
		entries []*tar.Header
		sha256  string
		want    string
	}{
		"checksum": {binariesLinkingTo(binDir), strings.Repeat("0", 64), "does not match its checksum"},
		"escaping": {append(binariesLinkingTo(binDir), &tar.Header{Typeflag: tar.TypeReg, Name: "../escaped", Mode: 0o644}), "",
			`names "../escaped", outside its directory`},
	} {
		repo := newFakeRepository(t, tc.entries, tc.sha256)
		dir := t.TempDir()
		cfg := embeddedpg.Config{CacheDir: dir, Download: true, RepositoryURL: repo.URL}
		if os.Geteuid() != 0 {
			cfg.Dir = dir
		}
		_, err := embeddedpg.Start(context.Background(), cfg)
		require.ErrorContains(t, err, tc.want, name)
		require.NoFileExists(t, filepath.Join(filepath.Dir(dir), "escaped"), name)
	}
}

// A throwaway server dies with the process that started it, even one
// killed with SIGKILL, which cleans nothing up: on Linux it gets SIGQUIT
// (its parent-death signal), also when, as root, it runs as nobody.
func TestStart_ServerDiesWithItsStarter(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	if os.Getenv(childEnv) == "serve" {
		serveUntilKilled(t)
		return
	}
	t.Parallel()
	requireInstalled(t)
	dir, err := os.MkdirTemp("", "embeddedpg-kill-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStart_ServerDiesWithItsStarter$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=serve", "TMPDIR="+dir, "XDG_CACHE_HOME="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	var url string
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "URL "); ok {
			url = u
			break
		}
	}
	if url == "" {
		_ = cmd.Wait()
		t.Fatalf("the child printed no URL: %s", stderr.String())
	}

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	var postmaster int
	require.NoError(t, conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'`).Scan(&postmaster))
	_ = conn.Close(ctx)
	// The checkpointer's parent is the postmaster.
	postmaster = parentPID(t, postmaster)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", postmaster)); err != nil {
			break
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", postmaster)); err == nil && strings.Contains(string(st), ") Z ") {
			break // a zombie: it exited, nobody has reaped it yet
		}
		require.True(t, time.Now().Before(deadline), "postgres (pid %d) outlived the process that started it", postmaster)
		time.Sleep(20 * time.Millisecond)
	}
}

// serveUntilKilled is TestStart_ServerDiesWithItsStarter's child: it
// starts a server, prints its URL and waits to be killed.
func serveUntilKilled(t *testing.T) {
	s, err := embeddedpg.Start(context.Background(), embeddedpg.Config{})
	require.NoError(t, err)
	fmt.Printf("URL %s\n", s.URL)
	time.Sleep(2 * time.Minute) // killed long before
	_ = s.Stop()
}

// parentPID returns the parent of process pid.
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	return ppid
}

// runAs runs the test test of a copy of the test binary (where user can
// read it) as user, with a home of its own, and fails t if it fails.
func runAs(t *testing.T, name, test string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("runs itself as another user on Linux only")
	}
	u, err := user.Lookup(name)
	require.NoError(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "embeddedpg-as-"+name+"-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "embeddedpg.test")
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, self, 0o755))
	home := filepath.Join(dir, "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	require.NoError(t, os.Chown(home, uid, gid))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Dir = home
	cmd.Env = []string{childEnv + "=as-user", "PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "TMPDIR=" + home}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s as %s:\n%s", test, name, out)
	require.NoError(t, err)
	require.Contains(t, string(out), "--- PASS: "+test, "the test ran as %s", name)
}
