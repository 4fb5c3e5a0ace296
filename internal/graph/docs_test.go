package graph_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// docBlocks returns the ```sql blocks of docs/relationships.md by their
// first line, a comment naming the question.
func docBlocks(t *testing.T) (map[string]string, []string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/relationships.md")
	require.NoError(t, err)
	byName := map[string]string{}
	var order []string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		first, _, _ := strings.Cut(m[1], "\n")
		name, ok := strings.CutPrefix(first, "-- ")
		require.True(t, ok, "a block's first line names it: %q", first)
		require.NotContains(t, byName, name)
		byName[name] = m[1]
		order = append(order, name)
	}
	return byName, order
}

type row = map[string]any

func query(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string) []row {
	t.Helper()
	rows, err := q.Query(context.Background(), sql)
	require.NoError(t, err, sql)
	out, err := pgx.CollectRows(rows, pgx.RowToMap)
	require.NoError(t, err, sql)
	return out
}

func column(rows []row, col string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r[col]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// id returns the one id the truth has for name in file.
func (tr *truth) id(t *testing.T, file, name string) string {
	t.Helper()
	var found []string
	for id := range tr.funcs {
		if strings.HasPrefix(id, file+":") && strings.HasSuffix(id, ":"+name) {
			found = append(found, id)
		}
	}
	require.Len(t, found, 1, "%s in %s", name, file)
	return found[0]
}

// fileGraph is the truth's calls between files: file -> the files that call
// into it.
func (tr *truth) fileDependents() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for caller, callees := range tr.calls {
		for c := range callees {
			if from, to := tr.fileOf[caller], tr.fileOf[c]; from != to {
				add(out, to, from)
			}
		}
	}
	return out
}

// checkWalk checks a relay_callers or relay_callees result against the
// truth: the items not repeated are those breadth-first search reaches, at
// its distances; every edge of an expanded item within the depth is a
// row; every row is an edge; cycle is set exactly on an item that is on
// its path.
func checkWalk(t *testing.T, tr *truth, root string, depth int, up bool, rows []row) {
	t.Helper()
	want := tr.levels(root, depth, up)
	got := map[string]int{}
	parent := map[string]string{}
	type edge struct{ item, via string }
	edges := map[edge]bool{}
	for _, r := range rows {
		item, via := r["poi_id"].(string), r["via_poi_id"].(string)
		edges[edge{item, via}] = true
		if up {
			require.True(t, tr.calls[item][via], "%s calls %s", item, via)
		} else {
			require.True(t, tr.calls[via][item], "%s calls %s", via, item)
		}
		onPath := false
		for a := via; ; a = parent[a] {
			require.NotEmpty(t, a, "%s's path reaches the root", via)
			if a == item {
				onPath = true
			}
			if a == root {
				break
			}
		}
		require.Equal(t, onPath, r["cycle"], "cycle of %s via %s", item, via)
		if !r["repeated"].(bool) {
			require.NotContains(t, got, item, "an item is expanded once")
			got[item], parent[item] = int(r["level"].(int32)), via
		}
	}
	require.Equal(t, want, got)
	expanded := append([]string{root}, func() []string {
		var ids []string
		for id, l := range got {
			if l < depth {
				ids = append(ids, id)
			}
		}
		return ids
	}()...)
	for _, e := range expanded {
		next := tr.calleesOf(e)
		if up {
			next = tr.callersOf(e)
		}
		for _, n := range next {
			require.True(t, edges[edge{n, e}], "the edge %s-%s is a row", e, n)
		}
	}
}

// TestDocs_RelationshipsQueriesAnswerWhatGoTypesSays runs every query of
// docs/relationships.md against Go's text/template, go/token and go/ast,
// and checks each answer against go/types or the source; then the analyst
// role runs them, and psql the functions.
func TestDocs_RelationshipsQueriesAnswerWhatGoTypesSays(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	blocks, order := docBlocks(t)
	require.GreaterOrEqual(t, len(blocks), 10, "the document promises ten questions")
	tmpl := f.template
	pipeline := tmpl.id(t, "parse/parse.go", "pipeline")
	checks := map[string]func(t *testing.T, rows []row){
		"the POIs named errorf": func(t *testing.T, rows []row) {
			var want, got []string
			for repo, tr := range map[string]*truth{"std": tmpl, "go/ast": f.ast} {
				for id := range tr.funcs {
					if strings.HasSuffix(id, ":errorf") {
						want = append(want, repo+" "+id)
					}
				}
			}
			require.Empty(t, methodHolders(t, goSrc("go/token"), "errorf"), "go/token has none")
			for _, r := range rows {
				got = append(got, r["repository"].(string)+" "+r["poi_id"].(string))
			}
			slices.Sort(want)
			slices.Sort(got)
			require.Len(t, want, 4)
			require.Equal(t, want, got)
		},
		"callers by name": func(t *testing.T, rows []row) {
			require.Equal(t, tmpl.callersOf(pipeline), column(rows, "poi_id"))
		},
		"callees by file:name": func(t *testing.T, rows []row) {
			require.Equal(t, tmpl.calleesOf(tmpl.id(t, "parse/parse.go", "term")), column(rows, "poi_id"))
		},
		"callers by symbol": func(t *testing.T, rows []row) {
			require.Equal(t, tmpl.callersOf(tmpl.id(t, "parse/parse.go", "errorf")), column(rows, "source_poi_id"))
		},
		"transitive callers with relay_callers": func(t *testing.T, rows []row) {
			checkWalk(t, tmpl, pipeline, 4, true, rows)
			require.True(t, slices.ContainsFunc(rows, func(r row) bool { return r["poi_id"] == pipeline && r["cycle"] == true }),
				"pipeline is reached again through term, operand and command")
		},
		"transitive callers in plain SQL": func(t *testing.T, rows []row) {
			got := map[string]int{}
			for _, r := range rows {
				got[r["poi_id"].(string)] = int(r["depth"].(int32))
			}
			require.Equal(t, tmpl.levels(pipeline, 3, true), got)
		},
		"callees with relay_callees": func(t *testing.T, rows []row) {
			checkWalk(t, tmpl, tmpl.id(t, "exec.go", "walk"), 2, false, rows)
		},
		"subtypes": func(t *testing.T, rows []row) {
			require.Equal(t, embedders(t, goSrc("text/template/parse"), "NodeType"), column(rows, "name"))
		},
		"implementers": func(t *testing.T, rows []row) {
			require.Equal(t, methodHolders(t, goSrc("go/ast"), "exprNode"), column(rows, "name"))
		},
		"dependents of a file": func(t *testing.T, rows []row) {
			want := closure(tmpl.fileDependents(), "parse/lex.go")
			var got []string
			for _, r := range rows {
				require.Equal(t, "std", r["repository"])
				got = append(got, r["file_id"].(string))
			}
			require.Equal(t, sortedKeys(want), got)
		},
		"dependents with relay_dependents": func(t *testing.T, rows []row) {
			want := closure(tmpl.fileDependents(), "parse/lex.go")
			got := map[string]int{}
			for _, r := range rows {
				got[r["file_id"].(string)] = int(r["level"].(int32))
				via := r["via_file_id"].(string)
				require.True(t, via == "parse/lex.go" || got[via] == got[r["file_id"].(string)]-1, "%v", r)
			}
			require.Equal(t, want, got)
		},
		"functions nobody calls": func(t *testing.T, rows []row) {
			var want []string
			for id := range tmpl.funcs {
				if tmpl.fileOf[id] == "parse/parse.go" && len(tmpl.callersOf(id)) == 0 {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			require.NotEmpty(t, want)
			require.Equal(t, want, column(rows, "poi_id"))
		},
		"most called": func(t *testing.T, rows []row) {
			most := 0
			for id := range tmpl.funcs {
				most = max(most, len(tmpl.callersOf(id)))
			}
			require.Len(t, rows, 10)
			require.EqualValues(t, most, rows[0]["callers"])
			for _, r := range rows {
				require.EqualValues(t, len(tmpl.callersOf(r["poi_id"].(string))), r["callers"], r["poi_id"])
			}
		},
		"references into another repository": func(t *testing.T, rows []row) {
			want := map[string]int64{}
			for _, symbols := range f.ast.outside {
				for s := range symbols {
					want[s]++
				}
			}
			got := map[string]int64{}
			for _, r := range rows {
				require.Equal(t, "go/ast", r["repository"])
				require.Equal(t, "go/token", r["target_repository"])
				got[r["symbol"].(string)] = r["callers"].(int64)
			}
			require.Greater(t, len(want), 5)
			require.Equal(t, want, got)
		},
	}
	for _, name := range order {
		t.Run(name, func(t *testing.T) {
			check, ok := checks[name]
			require.True(t, ok, "every query in the document is checked")
			rows := query(t, f.db.Pool, blocks[name])
			require.NotEmpty(t, rows)
			check(t, rows)
		})
	}
	require.Len(t, checks, len(order), "every check has its query")

	t.Run("analyst role", func(t *testing.T) {
		script, err := os.ReadFile("../../docs/sql/analyst_role.sql")
		require.NoError(t, err)
		// Roles are cluster-wide: test binaries running at once must not
		// create and grant the same role concurrently (the lock is
		// deadletter/failed's docs test's).
		require.NoError(t, pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7238041)`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, string(script))
			return err
		}))
		require.NoError(t, pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE relay_analyst`); err != nil {
				return err
			}
			for _, name := range order {
				rows := query(t, tx, blocks[name])
				require.NotEmpty(t, rows, name)
				checks[name](t, rows)
			}
			return nil
		}))
		err = pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE relay_analyst`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM poi_references`)
			return err
		})
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%v", err)
		require.Equal(t, "42501", pgErr.Code) // insufficient_privilege
	})

	t.Run("functions from psql", func(t *testing.T) {
		psql := func(sql string) (string, string, error) {
			cmd := exec.Command("psql", "-X", "-q", "-At", "-F", "|", "-v", "VERBOSITY=verbose",
				"-c", "SET search_path = "+f.db.Schema, "-c", sql, f.db.URL)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			return out.String(), errOut.String(), err
		}
		out, stderr, err := psql(`SELECT level, poi_id, via_poi_id, cycle FROM relay_callers('` + pipeline + `', depth => 1, repo => 'std')`)
		require.NoError(t, err, stderr)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			cols := strings.Split(line, "|")
			require.Equal(t, []string{"1", pipeline, "f"}, []string{cols[0], cols[2], cols[3]}, line)
			got = append(got, cols[1])
		}
		slices.Sort(got)
		require.Equal(t, tmpl.callersOf(pipeline), got)

		out, stderr, err = psql(`SELECT count(*) FROM relay_callees('` + pipeline + `', 2, 'std')`)
		require.NoError(t, err, stderr)
		require.NotEqual(t, "0\n", out)

		for q, code := range map[string]string{
			`SELECT * FROM relay_callers('nope', repo => 'std')`:                        "P0002",
			`SELECT * FROM relay_callers('` + pipeline + `', 0, 'std')`:                 "22023",
			`SELECT * FROM relay_callees('` + pipeline + `', 1, 'std', 'CALLZ')`:        "22023",
			`SELECT * FROM relay_dependents('parse/nope.go', repo => 'std')`:            "P0002",
			`SELECT * FROM relay_callers('` + pipeline + `', repo => 'elsewhere')`:      "P0002",
			`SELECT * FROM relay_dependents('parse/lex.go', depth => 0, repo => 'std')`: "22023",
		} {
			_, stderr, err := psql(q)
			require.Error(t, err, q)
			require.Contains(t, stderr, "ERROR:  "+code+":", q)
		}
	})
}

// embedders returns the struct types of the Go files in dir (tests left
// out) that embed a type named name, read with go/parser.
func embedders(t *testing.T, dir, name string) []string {
	t.Helper()
	var out []string
	forFiles(t, dir, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				typ := field.Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok && len(field.Names) == 0 && id.Name == name {
					out = append(out, ts.Name.Name)
				}
			}
			return true
		})
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// methodHolders returns the receiver types of the methods named method in
// dir's Go files (tests left out), read from the source text.
func methodHolders(t *testing.T, dir, method string) []string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func \((?:\w+ )?\*?(\w+)\) ` + method + `\(`)
	var out []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func forFiles(t *testing.T, dir string, fn func(*ast.File)) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		fn(f)
	}
}

// closure returns every node that reaches from (following g), with its
// distance, from itself left out.
func closure(g map[string]map[string]bool, from string) map[string]int {
	dist := map[string]int{from: 0}
	frontier := []string{from}
	for d := 1; len(frontier) > 0; d++ {
		var next []string
		for _, n := range frontier {
			for m := range g[n] {
				if _, ok := dist[m]; !ok {
					dist[m] = d
					next = append(next, m)
				}
			}
		}
		frontier = next
	}
	delete(dist, from)
	return dist
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
