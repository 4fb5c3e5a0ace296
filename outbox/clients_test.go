package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/internal/testdb"
	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/worker"
)

// clientCorpus is the analyses of a real source tree nobody here wrote
// (Go's encoding/json, lexical references), plus one file whose POIs the
// worker must dead-letter, one line per analysis.
var clientCorpus = sync.OnceValues(func() ([]outbox.Analysis, error) {
	var as []outbox.Analysis
	root := filepath.Join(runtime.GOROOT(), "src", "encoding", "json")
	err := goanalyze.Walk(context.Background(), root, func(f goanalyze.File) error {
		if f.Err == nil {
			as = append(as, f.Analysis)
		}
		return nil
	})
	as = append(as, outbox.Analysis{FileID: "broken.py", POIs: []json.RawMessage{
		json.RawMessage(`{"id":"broken.1","type":"function_definition","name":"f","lineNumber":"one"}`),
		json.RawMessage(`{"id":"broken.2","name":"g"}`),
		json.RawMessage(`42`),
	}})
	return as, err
})

// relationsOf is a database's final relationships and failed POIs, as text
// rows to compare.
func relationsOf(t *testing.T, db *testdb.DB) (rels, failed []string) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT source_poi_id || ' ' || type || ' ' || target_poi_id FROM relationships ORDER BY 1`)
	require.NoError(t, err)
	rels, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	rows, err = db.Pool.Query(ctx, `SELECT file_id || ' ' || coalesce(poi_id, '-') || ' ' || error_class || ' ' || error_message || ' ' || original_poi_data::text
		FROM failed_pois ORDER BY 1`)
	require.NoError(t, err)
	failed, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return rels, failed
}

// resolveAll publishes what the SQL API queued and works every job, as
// relay worker --until-idle does.
func resolveAll(t *testing.T, db *testdb.DB) {
	t.Helper()
	ctx := context.Background()
	cfg := worker.ConfigFrom(db.Config())
	w, err := worker.New(db.Pool, cfg, testdb.Logger(t))
	require.NoError(t, err)
	require.NoError(t, w.RunUntilIdle(ctx, nil))
}

// TestSQLPublish_RealClients publishes a real source tree's analyses
// through the SQL API from psql, Python (psycopg) and Node (node-postgres),
// each inside a transaction that also writes a row of its own, then rolls
// a publish back and sends a rejected analysis; the relationships and
// failed POIs equal the Go publisher's. `make clients` installs the
// clients.
func TestSQLPublish_RealClients(t *testing.T) {
	t.Parallel()
	corpus, err := clientCorpus()
	require.NoError(t, err)
	require.Greater(t, len(corpus), 20)
	var lines bytes.Buffer
	for _, a := range corpus {
		b, err := json.Marshal(a)
		require.NoError(t, err)
		lines.Write(b)
		lines.WriteByte('\n')
	}
	corpusFile := filepath.Join(t.TempDir(), "corpus.jsonl")
	require.NoError(t, os.WriteFile(corpusFile, lines.Bytes(), 0o644))

	// The Go publisher's result.
	goDB := testdb.New(t)
	require.NoError(t, pgx.BeginFunc(context.Background(), goDB.Pool, func(tx pgx.Tx) error {
		client, err := worker.NewInsertClient(goDB.Pool, worker.ConfigFrom(goDB.Config()), testdb.Logger(t))
		if err != nil {
			return err
		}
		_, err = outbox.New(client, nil, testdb.Logger(t)).PublishManyTx(context.Background(), tx, corpus)
		return err
	}))
	resolveAll(t, goDB)
	wantRels, wantFailed := relationsOf(t, goDB)
	require.NotEmpty(t, wantRels)
	require.NotEmpty(t, wantFailed)

	clientsDir, err := filepath.Abs("testdata/clients")
	require.NoError(t, err)
	python, node := "/usr/bin/python3", "node"
	clients := []struct {
		name string
		cmd  func(url, schema string) *exec.Cmd
		// rejection reads the rejected call's SQLSTATE from the output.
		rejection func(stdout, stderr string) string
	}{
		{"psql", func(url, schema string) *exec.Cmd {
			cmd := exec.Command("psql", "-X", "-q", "-v", "schema="+schema, "-f", filepath.Join(clientsDir, "publish.sql"), url)
			cmd.Stdin = bytes.NewReader(lines.Bytes())
			return cmd
		}, func(_, stderr string) string {
			// psql's verbose error: "ERROR:  RL001: file ...".
			_, rest, ok := strings.Cut(stderr, "ERROR:  ")
			if !ok || len(rest) < 5 {
				return ""
			}
			return rest[:5]
		}},
		{"python", func(url, schema string) *exec.Cmd {
			return exec.Command(python, filepath.Join(clientsDir, "publish.py"), url, schema, corpusFile)
		}, jsonRejection},
		{"node", func(url, schema string) *exec.Cmd {
			return exec.Command(node, filepath.Join(clientsDir, "publish.js"), url, schema, corpusFile)
		}, jsonRejection},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			ctx := context.Background()
			_, err := db.Pool.Exec(ctx, `CREATE TABLE callers_own (note text)`)
			require.NoError(t, err)
			cmd := c.cmd(db.URL, db.Schema)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s failed (make clients installs the SQL API's test clients): %v\n%s%s", c.name, err, stdout.String(), stderr.String())
			}
			require.Equal(t, "RL001", c.rejection(stdout.String(), stderr.String()), "the rejected analysis's SQLSTATE\n%s%s", stdout.String(), stderr.String())

			rows, err := db.Pool.Query(ctx, `SELECT note FROM callers_own`)
			require.NoError(t, err)
			notes, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			require.Equal(t, []string{c.name + " committed"}, notes, "the caller's own rows")
			require.Equal(t, len(corpus), testdb.Count(t, db.Pool, `SELECT count(*) FROM publish_queue`))
			require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM publish_queue WHERE file_id IN ('rolled/back.py', 'rejected.py')`))

			resolveAll(t, db)
			rels, failed := relationsOf(t, db)
			require.Equal(t, wantRels, rels, "relationships")
			require.Equal(t, wantFailed, failed, "failed POIs")
			require.Equal(t, 0, testdb.Count(t, db.Pool, `SELECT count(*) FROM rejected_analyses`))
		})
	}
}

func jsonRejection(stdout, _ string) string {
	var out struct {
		Rejected *struct {
			SQLState string `json:"sqlstate"`
		} `json:"rejected"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(stdout)), &out) != nil || out.Rejected == nil {
		return ""
	}
	return out.Rejected.SQLState
}
