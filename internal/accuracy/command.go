package accuracy

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/internal/goanalyze"
)

// DefaultTrees are the trees relay-eval scores without arguments: packages
// of the Go standard library ($GOROOT/src/…) and modules of the module
// cache ($GOMODCACHE/…), of different styles. A tree that is not there is
// skipped with a note.
var DefaultTrees = []string{
	"goroot:encoding/json",
	"goroot:database/sql",
	"goroot:go/parser",
	"goroot:net/url",
	"goroot:text/template",
	"modcache:github.com/jackc/pgx/v5@v5.12.0",
	"modcache:github.com/spf13/cobra@v1.10.2",
	"modcache:github.com/spf13/viper@v1.21.0",
	"modcache:github.com/stretchr/testify@v1.12.1",
	"modcache:github.com/riverqueue/river@v0.51.0",
}

// Main runs relay-eval with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("relay-eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: relay-eval [--json] [--samples N] [--references lexical|typed] [TREE...]\n"+
			"       relay-eval --pycg DIR [--scip [--scip-python PATH]] [--json] [--database-url URL] [--python PYTHON] [--module-pois] [--parallel N]\n"+
			"       relay-eval --scip [--json] [--samples N] INDEX=DIR...\n\n"+
			"Scores relay's CALLS and EXTENDS on Go trees against go/types. A TREE is a directory,\n"+
			"goroot:PKGDIR ($(go env GOROOT)/src/PKGDIR) or modcache:MODULE@VERSION; default:\n  %s\n\n"+
			"With --pycg, scores relay's Python CALLS on PyCG's micro-benchmark (DIR is micro-benchmark/snippets\n"+
			"of github.com/vitsalis/PyCG) published through relay's outbox and worker into throwaway databases on\n"+
			"--database-url's server in three layouts: (a) a database per case, (b) one database with ids\n"+
			"prefixed by case, (c) one database with a repository per case. Precedence: flag > environment\n"+
			"(RELAY_DATABASE_URL) > default. With --pycg and --scip, the POIs and references are relay analyze --scip's\n"+
			"of each case indexed by scip-python (--scip-python) instead of extract.py's; DIR may then also be a\n"+
			"JavaScript micro-benchmark in the same layout (SWARM-CG's benchmarks/javascript/swarm_js), indexed by\n"+
			"scip-typescript (--scip-typescript).\n\n"+
			"With --scip, scores the CALLS of relay analyze --scip on each SCIP-indexed project (INDEX the index, DIR\n"+
			"the project's root) against the indexer's own call edges, and lexical references on the same POIs.\n\n",
			strings.Join(DefaultTrees, "\n  "))
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print one JSON array of reports (with --pycg, one report; with --pycg --scip, two: --scip's and lexical's on the same POIs)")
	tests := fs.Bool("tests", true, "score test files too (false: only the packages' non-test files are scored; all are analysed)")
	samples := fs.Int("samples", 5, "false positives and false negatives shown per kind (func, method, extends)")
	refs := fs.String("references", goanalyze.ReferencesLexical, "reference mode, as relay analyze's: lexical (relay's resolver reads rawCode) or typed (go/types supplies them)")
	pycg := PyCGCommand{}
	fs.StringVar(&pycg.Dir, "pycg", "", "score Python CALLS on PyCG's micro-benchmark/snippets in DIR instead of Go trees")
	fs.StringVar(&pycg.DatabaseURL, "database-url", "", "with --pycg: PostgreSQL server on which throwaway databases relay_eval_<random>_* are created and dropped (default $RELAY_DATABASE_URL, else "+config.DatabaseURLDefault+")")
	fs.StringVar(&pycg.Extract.Python, "python", "python3", "with --pycg: Python 3.8 or later, to run the POI extractor (internal/accuracy/testdata/python/extract.py, embedded)")
	fs.BoolVar(&pycg.Extract.ModulePOIs, "module-pois", false, "with --pycg: also give each module's top-level code a POI (PyCG's callers named after a module; extract.py makes none)")
	layouts := fs.String("layouts", "", "with --pycg: the layouts measured, comma-separated, the first the one the others are compared with: own-database, prefixed-ids, repositories (default all three, in that order; repositories alone, one database, is the quickest)")
	fs.IntVar(&pycg.Parallel, "parallel", 4, "with --pycg: cases worked at once, each in a database of its own")
	verdictFile := fs.String("verdicts", "", "with --scip INDEX=DIR: a file of hand-read verdicts on --scip's false positives (project, source, target, call or not, reason; tab-separated), scored apart as --scip's precision with the edges read as calls counted true")
	scipMode := fs.Bool("scip", false, "score CALLS of relay analyze --scip on SCIP-indexed projects: each argument is INDEX=DIR (a SCIP index and its project's root); with --pycg, on the cases indexed by scip-python")
	scipPython := fs.String("scip-python", SCIPPythonDefault, "with --pycg --scip: the scip-python that indexes each Python case (default: the pinned one make scip-indexers installs, relative to the repository's root)")
	scipTypeScript := fs.String("scip-typescript", SCIPTypeScriptDefault, "with --pycg --scip: the scip-typescript that indexes each JavaScript case (SWARM-CG's micro-benchmark; default: the pinned one)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *layouts != "" {
		for _, l := range strings.Split(*layouts, ",") {
			if !slices.Contains(PyCGLayouts, PyCGLayout(l)) {
				fmt.Fprintf(stderr, "relay-eval: --layouts: %q is not own-database, prefixed-ids or repositories\n", l)
				return 2
			}
			pycg.Layouts = append(pycg.Layouts, PyCGLayout(l))
		}
	}
	if *scipMode && pycg.Dir == "" {
		return runSCIP(ctx, fs.Args(), *verdictFile, *asJSON, *samples, stdout, stderr)
	}
	if pycg.Dir != "" {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "relay-eval: --pycg takes no TREE arguments\n")
			return 2
		}
		pycg.JSON = *asJSON
		if *scipMode {
			pycg.SCIP = PyCGSCIP{Indexer: *scipPython, TypeScript: *scipTypeScript}
		}
		pycg.DatabaseURL = cmp.Or(pycg.DatabaseURL, os.Getenv("RELAY_DATABASE_URL"), config.DatabaseURLDefault)
		return runPyCGCommand(ctx, pycg, stdout, stderr)
	}
	if *refs != goanalyze.ReferencesLexical && *refs != goanalyze.ReferencesTyped {
		fmt.Fprintf(stderr, "relay-eval: --references %q is not one of lexical, typed\n", *refs)
		return 2
	}
	trees := fs.Args()
	if len(trees) == 0 {
		trees = DefaultTrees
	}
	var reports []*Report
	for _, tree := range trees {
		dir, err := treeDir(tree)
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: %s: %v\n", tree, err)
			if len(fs.Args()) > 0 {
				return 1
			}
			continue
		}
		fmt.Fprintf(stderr, "relay-eval: %s (%s)\n", tree, dir)
		r, err := EvaluateWith(ctx, tree, dir, *tests, *samples, goanalyze.Options{
			References: *refs,
			Warn:       func(w string) { fmt.Fprintf(stderr, "relay-eval: %s: %s\n", tree, w) },
		})
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: %s: %v\n", tree, err)
			return 1
		}
		reports = append(reports, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return 1
		}
		return 0
	}
	if err := WriteTable(stdout, reports, *samples > 0); err != nil {
		return 1
	}
	return 0
}

// Evaluate analyses and scores one tree, with lexical references.
func Evaluate(ctx context.Context, name, dir string, tests bool, samples int) (*Report, error) {
	return EvaluateWith(ctx, name, dir, tests, samples, goanalyze.Options{References: goanalyze.ReferencesLexical})
}

// EvaluateWith is Evaluate with the reference mode of opts.
func EvaluateWith(ctx context.Context, name, dir string, tests bool, samples int, opts goanalyze.Options) (*Report, error) {
	g, err := AnalyzeWith(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	t, err := ComputeTruth(ctx, dir, g, tests)
	if err != nil {
		return nil, err
	}
	return Score(name, dir, g, t, samples), nil
}

// treeDir resolves a tree argument to a directory.
func treeDir(tree string) (string, error) {
	var dir string
	switch {
	case strings.HasPrefix(tree, "goroot:"):
		root, err := goEnv("GOROOT")
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "src", filepath.FromSlash(strings.TrimPrefix(tree, "goroot:")))
	case strings.HasPrefix(tree, "modcache:"):
		root, err := goEnv("GOMODCACHE")
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(tree, "modcache:")))
	default:
		dir = tree
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("not a directory: %s", dir)
	}
	return dir, nil
}

func goEnv(key string) (string, error) {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return "", fmt.Errorf("error running go env %s: %w", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// WriteTable prints one row per tree and kind, then the examples.
func WriteTable(w io.Writer, reports []*Report, examples bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TREE\tFILES\tPOIS\tKIND\tTP\tFP\tFN\tP\tR\tDYNAMIC\tUNRESOLVED")
	for _, r := range reports {
		for _, row := range []struct {
			kind string
			c    Counts
		}{{"calls", r.Calls}, {"calls func", r.Func}, {"calls method", r.Method}, {"extends", r.Extends}} {
			dyn, unres := "", ""
			if row.kind == "calls" {
				dyn, unres = fmt.Sprint(r.Dynamic), fmt.Sprintf("%d unknown, %d ambiguous", r.Unknown, r.Ambiguous)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%.3f\t%.3f\t%s\t%s\n", r.Tree, r.Files, r.POIs, row.kind,
				row.c.TP, row.c.FP, row.c.FN, row.c.Precision, row.c.Recall, dyn, unres)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reports {
		fmt.Fprintf(w, "\n%s: not in the truth: %d interface calls, %d function-value calls, %d recursive calls\n",
			r.Tree, r.InterfaceCalls, r.FuncValueCalls, r.Recursion)
		for _, e := range r.PackageErrors {
			fmt.Fprintf(w, "  not scored (did not type-check): %s\n", e)
		}
		if !examples {
			continue
		}
		for _, e := range r.Examples {
			fmt.Fprintf(w, "  %s %-7s %s -> %s\n      %s: %s\n", e.Kind, e.Type, e.Source, e.Target, e.Where, e.Text)
		}
	}
	return nil
}

// runSCIP is relay-eval --scip.
func runSCIP(ctx context.Context, args []string, verdictFile string, asJSON bool, samples int, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "relay-eval: --scip needs INDEX=DIR arguments\n")
		return 2
	}
	var verdicts Verdicts
	if verdictFile != "" {
		f, err := os.Open(verdictFile)
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: %v\n", err)
			return 1
		}
		verdicts, err = ReadVerdicts(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: %s: %v\n", verdictFile, err)
			return 1
		}
	}
	var reports []*SCIPReport
	for _, a := range args {
		index, dir, ok := strings.Cut(a, "=")
		if !ok || index == "" || dir == "" {
			fmt.Fprintf(stderr, "relay-eval: %q is not INDEX=DIR\n", a)
			return 2
		}
		fmt.Fprintf(stderr, "relay-eval: %s (%s)\n", dir, index)
		name := filepath.Base(filepath.Clean(dir))
		r, err := EvaluateSCIP(ctx, name, index, dir, samples, verdicts.For(name))
		if err != nil {
			fmt.Fprintf(stderr, "relay-eval: %s: %v\n", a, err)
			return 1
		}
		reports = append(reports, r)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return 1
		}
		return 0
	}
	if err := WriteSCIPTable(stdout, reports, samples > 0); err != nil {
		return 1
	}
	return 0
}
