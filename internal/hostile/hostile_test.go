package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/resolver"
)

// hostileCase is one entry of testdata/manifest.json.
type hostileCase struct {
	Name string `json:"name"`
	// File holds the NDJSON input, relative to testdata; Generate names a
	// generator instead, for inputs too large to commit.
	File     string `json:"file"`
	Generate string `json:"generate"`
	Covers   string `json:"covers"`
	// Outcome is rejected, dead-lettered or accepted.
	Outcome  string `json:"outcome"`
	Rejected []struct {
		Line     int    `json:"line"`
		Contains string `json:"contains"`
	} `json:"rejected"`
	// Symbols is how many POIs must end up in the pois symbol table.
	Symbols int `json:"symbols"`
	// DeadLettered counts the failed_pois rows expected, by error class.
	DeadLettered map[string]int `json:"dead_lettered"`
	// Relationships, when set, is the number of relationships expected.
	Relationships *int `json:"relationships"`
	// MinJobs is the least number of resolve_file jobs expected (a file
	// larger than max_job_bytes is split).
	MinJobs int `json:"min_jobs"`
}

func loadManifest(t *testing.T) []hostileCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "manifest.json"))
	require.NoError(t, err)
	var m struct {
		Cases []hostileCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	return m.Cases
}

func TestHostileCorpus_ManifestCoversTheIssue(t *testing.T) {
	t.Parallel()
	cases := loadManifest(t)
	require.GreaterOrEqual(t, len(cases), 40)
	covers := ""
	names := map[string]bool{}
	for _, c := range cases {
		require.False(t, names[c.Name], "duplicate case %s", c.Name)
		names[c.Name] = true
		require.Contains(t, []string{"rejected", "dead-lettered", "accepted"}, c.Outcome, c.Name)
		require.True(t, (c.File == "") != (c.Generate == ""), "%s: exactly one of file and generate", c.Name)
		covers += c.Covers + "\n"
	}
	for _, want := range []string{"invalid JSON", "wrong types", "missing fields", "null POIs", "NUL characters",
		"invalid UTF-8", "10 MB rawCode", "100,000 POIs", "duplicate POI ids within a file", "duplicate POI ids across files",
		"mismatched filePath", "deeply nested context", "SQL metacharacters", "shell metacharacters", "Unicode names",
		"numbers as ids"} {
		require.Contains(t, covers, want, "no case covers %q", want)
	}
}

func TestHostileCorpus_PublishAndWork(t *testing.T) {
	t.Parallel()
	for _, c := range loadManifest(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			var input []byte
			if c.Generate != "" {
				if testing.Short() {
					t.Skipf("generated case %s (%s) is heavy; runs without -short", c.Name, c.Covers)
				}
				input = generate(t, c.Generate)
			} else {
				var err error
				input, err = os.ReadFile(filepath.Join("testdata", c.File))
				require.NoError(t, err)
			}
			runCase(t, c, input)
		})
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func relay(t *testing.T, db *testdb.DB, stdin []byte, args ...string) result {
	t.Helper()
	args = append(args, "--database-url", db.URL, "--database-schema", db.Schema)
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	return result{code, out.String(), errOut.String()}
}

func runCase(t *testing.T, c hostileCase, input []byte) {
	db := testdb.New(t)

	pub := relay(t, db, input, "publish", "-")
	wantCode := cli.ExitOK
	if len(c.Rejected) > 0 {
		wantCode = cli.ExitRuntime
	}
	require.Equal(t, wantCode, pub.code, "publish exit code; stdout %s\nstderr %s", pub.stdout, clip(pub.stderr))
	require.Equal(t, len(c.Rejected), strings.Count(pub.stderr, ": rejected: "), "rejections: %s", clip(pub.stderr))
	for _, r := range c.Rejected {
		require.Contains(t, pub.stderr, fmt.Sprintf("line %d: rejected: ", r.Line), clip(pub.stderr))
		line := lineOf(pub.stderr, fmt.Sprintf("line %d: rejected: ", r.Line))
		require.Contains(t, line, r.Contains, "line %d's rejection", r.Line)
	}

	// The corpus asserts what becomes of hostile input, not how fast it is
	// resolved: its poi_timeout is far above what its slowest case (the 10
	// MB rawCode, about 0.5 s alone) takes on a loaded machine, which the 5 s
	// default is not.
	work := relay(t, db, nil, "worker", "--until-idle", "--poi-timeout", "2m", "--job-timeout", "5m")
	require.Equal(t, cli.ExitOK, work.code, "worker: %s", clip(work.stderr))
	require.Contains(t, work.stdout, "idle after")
	for _, out := range []string{pub.stderr, work.stderr} {
		require.NotContains(t, out, "panic", "a panic was logged")
		require.NotContains(t, out, "goroutine ", "a stack was logged")
	}

	// No crash loop: every batch completed on its first attempt, nothing
	// left running, nothing discarded.
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file' AND (state <> 'completed' OR attempt > 1)`),
		"a batch did not complete first time: %s", clip(work.stderr))
	require.Zero(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM dead_lettered_items`))

	require.Equal(t, c.Symbols, testdb.Count(t, db.Pool, `SELECT count(*) FROM pois`), "symbols")
	total := 0
	for class, n := range c.DeadLettered {
		require.Equal(t, n, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE error_class = $1`, class), "class %s", class)
		total += n
	}
	require.Equal(t, total, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois`), "failed_pois rows")
	require.GreaterOrEqual(t, testdb.Count(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'resolve_file'`), c.MinJobs)
	if c.Relationships != nil {
		require.Equal(t, *c.Relationships, testdb.Count(t, db.Pool, `SELECT count(*) FROM relationships`), "relationships")
	}

	// Nothing accepted is lost: of the last accepted analysis of each file,
	// every valid POI is in pois under its exact id and not in failed_pois,
	// and every invalid one has exactly one failed_pois row at its index.
	rejected := map[int]bool{}
	for _, r := range c.Rejected {
		rejected[r.Line] = true
	}
	latest := map[string][]json.RawMessage{}
	for i, line := range bytes.Split(input, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 || rejected[i+1] {
			continue
		}
		var a struct {
			FileID string            `json:"fileId"`
			POIs   []json.RawMessage `json:"pois"`
		}
		require.NoError(t, json.Unmarshal(line, &a), "line %d was accepted, so it decodes", i+1)
		latest[a.FileID] = a.POIs
	}
	// The valid POIs are checked in two statements, not two per POI (a case
	// has 100,000 of them).
	var validIDs, validFiles []string
	seen := map[[2]string]bool{}
	for fileID, pois := range latest {
		for i, raw := range pois {
			if p, err := resolver.DecodePOI(raw); err == nil {
				if k := [2]string{p.ID, fileID}; !seen[k] {
					seen[k] = true
					validIDs, validFiles = append(validIDs, p.ID), append(validFiles, fileID)
				}
				continue
			}
			if len(pois) > 10_000 {
				continue // split files: indexes are per part
			}
			require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE file_id = $1 AND poi_index = $2`, fileID, i),
				"invalid POI #%d of %q", i, fileID)
			require.Equal(t, 1, testdb.Count(t, db.Pool, `SELECT count(*) FROM failed_pois WHERE file_id = $1 AND poi_index = $2 AND original_poi_data = $3::jsonb`,
				fileID, i, string(raw)), "invalid POI #%d of %q is stored as received", i, fileID)
		}
	}
	require.Empty(t, queryPairs(t, db, `
		SELECT u.id, u.file FROM unnest($1::text[], $2::text[]) AS u(id, file)
		WHERE NOT EXISTS (SELECT 1 FROM pois p WHERE p.poi_id = u.id AND p.file_id = u.file)
		ORDER BY u.file, u.id LIMIT 10`, validIDs, validFiles), "valid POIs missing from pois (id, file)")
	require.Empty(t, queryPairs(t, db, `
		SELECT poi_id, file_id FROM failed_pois WHERE poi_id = ANY($1) ORDER BY file_id, poi_id LIMIT 10`, validIDs),
		"valid POIs in failed_pois (id, file)")
}

// queryPairs returns the (id, file) rows sql selects.
func queryPairs(t *testing.T, db *testdb.DB, sql string, args ...any) [][2]string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), sql, args...)
	require.NoError(t, err)
	var out [][2]string
	for rows.Next() {
		var p [2]string
		require.NoError(t, rows.Scan(&p[0], &p[1]))
		out = append(out, p)
	}
	require.NoError(t, rows.Err())
	return out
}

// lineOf returns the line of s that contains prefix.
func lineOf(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, prefix) {
			return l
		}
	}
	return ""
}

// clip shortens output for failure messages.
func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}

// generate builds the inputs too large to commit.
func generate(t *testing.T, name string) []byte {
	t.Helper()
	const f = "h/big.js"
	line := func(pois ...any) []byte {
		b, err := json.Marshal(map[string]any{"fileId": f, "pois": pois})
		require.NoError(t, err)
		return append(b, '\n')
	}
	poi := func(id, name, code string) map[string]any {
		return map[string]any{"id": id, "type": "function_definition", "name": name, "filePath": f, "lineNumber": 1, "rawCode": code}
	}
	filler := func(n int) string {
		var sb strings.Builder
		sb.Grow(n + 64)
		sb.WriteString("function alpha(x) {\n")
		for sb.Len() < n {
			sb.WriteString("  x = x * 31 + 7; // arithmetic, no calls here\n")
		}
		sb.WriteString("  return beta(x);\n}")
		return sb.String()
	}
	switch name {
	case "rawcode-10mb":
		return line(poi("a1", "alpha", filler(10<<20)), poi("a2", "beta", "function beta(x) { return x; }"))
	case "poi-17mb":
		return line(poi("a1", "alpha", filler(17<<20)))
	case "pois-100k":
		pois := make([]any, 100_000)
		for i := range pois {
			pois[i] = poi(fmt.Sprintf("p%06d", i), fmt.Sprintf("f%06d", i),
				fmt.Sprintf("function f%06d() { return f%06d(); }", i, (i+1)%len(pois)))
		}
		return line(pois...)
	}
	t.Fatalf("no generator %q", name)
	return nil
}
