package accuracy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/relay-dev/relay/outbox"
	"github.com/relay-dev/relay/resolver"
)

// PyCG's micro-benchmark (github.com/vitsalis/PyCG, micro-benchmark/snippets)
// is 119 small Python programs, each a directory <category>/<case>/ of *.py
// files with callgraph.json, the call graph its authors wrote by hand:
// {"module.func": ["module.callee", ...]}. relay-eval --pycg publishes the
// cases through relay's outbox and worker in three layouts (PyCGLayouts)
// and scores the CALLS relationships against those call graphs.
//
// POIs come from testdata/python/extract.py (the Python harness's
// extractor: functions, methods, classes and imports, with ids
// "<file>:<line>:<qualified name>"), run over each case by
// testdata/python/pycg_extract.py. A POI's PyCG name is the module of its
// file (the path relative to the case directory without ".py", "/" as ".",
// a package's __init__.py its directory) and its qualified name: the method
// f of class A in pkg/mod.py is "pkg.mod.A.f", and a class's own body (its
// class-level statements) is "pkg.mod.A", as PyCG names them. That mapping
// is exact for every POI; what it cannot map are the truth's nodes that are
// not POIs:
//
//   - a module's own code ("main" calls what main.py's top level calls):
//     extract.py makes no POI of it, so these edges (204 of the 264 in
//     PyCG's micro-benchmark) are always missed, unless ModulePOIs adds a
//     POI for each module's top-level code (pycg_extract.py --modules);
//   - lambdas ("main.<lambda1>"), builtins ("<builtin>.print") and modules
//     outside the case: no POI either.
//
// A constructor call (A() is a call of "main.A.__init__" in PyCG's graphs)
// is a call of a class for relay, which links CALLS only to functions and
// methods: always missed. PyCGReport.Reachable counts the truth's edges
// whose caller and callee are both POIs, the edges relay could link with
// these POIs.

//go:embed testdata/python/extract.py testdata/python/pycg_extract.py
var pycgScripts embed.FS

// PyCGCase is one case of the micro-benchmark.
type PyCGCase struct {
	// Name is the case's directory relative to the snippets directory,
	// "<category>/<case>".
	Name string
	// Files are the case's analyses, in the default repository, file ids
	// relative to the case's directory.
	Files []outbox.Analysis
	// POIs are the files' POIs by id.
	POIs map[string]resolver.POI
	// Truth is callgraph.json's edges, caller and callee by PyCG's names.
	Truth map[[2]string]bool
	// Skipped are the files Python's ast did not parse, "file: error".
	Skipped []string
	// Names are the PyCG names of POIs whose id does not spell it
	// (LoadPyCGSCIP's: a SCIP POI's id has its simple name), by id; any
	// other POI's is PyCGName's.
	Names map[string]string
}

// pycgName is the PyCG name of c's POI p.
func (c *PyCGCase) pycgName(p resolver.POI) string {
	if n, ok := c.Names[p.ID]; ok {
		return n
	}
	return PyCGName(p)
}

// PyCGExtract says how LoadPyCG extracts POIs.
type PyCGExtract struct {
	// Python runs the extractor (Python 3.8 or later); "" is python3.
	Python string
	// ModulePOIs adds a POI for each module's top-level code
	// (pycg_extract.py --modules).
	ModulePOIs bool
}

// LoadPyCG extracts the POIs of every case under dir (a directory holding
// callgraph.json is a case) with extract.py and reads the cases' call
// graphs. Cases are sorted by name.
func LoadPyCG(ctx context.Context, dir string, opts PyCGExtract) ([]*PyCGCase, error) {
	python := cmp.Or(opts.Python, "python3")
	tmp, err := os.MkdirTemp("", "relay-eval-pycg-")
	if err != nil {
		return nil, fmt.Errorf("error creating a directory for the extractor: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"extract.py", "pycg_extract.py"} {
		src, err := pycgScripts.ReadFile("testdata/python/" + name)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), src, 0o644); err != nil {
			return nil, fmt.Errorf("error writing the extractor: %w", err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	args := []string{"-B", filepath.Join(tmp, "pycg_extract.py")}
	if opts.ModulePOIs {
		args = append(args, "--modules")
	}
	cmd := exec.CommandContext(ctx, python, append(args, abs)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("error running %s pycg_extract.py %s: %w: %s", python, dir, err, strings.TrimSpace(stderr.String()))
	}
	return decodePyCG(dir, out)
}

// decodePyCG reads pycg_extract.py's output and each case's callgraph.json.
func decodePyCG(dir string, out []byte) ([]*PyCGCase, error) {
	byName := map[string]*PyCGCase{}
	var cases []*PyCGCase
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			Case   string            `json:"case"`
			FileID string            `json:"fileId"`
			POIs   []json.RawMessage `json:"pois"`
			Error  string            `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("error decoding the extractor's output: %w", err)
		}
		c := byName[rec.Case]
		if c == nil {
			c = &PyCGCase{Name: rec.Case, POIs: map[string]resolver.POI{}}
			byName[rec.Case] = c
			cases = append(cases, c)
		}
		if rec.Error != "" {
			c.Skipped = append(c.Skipped, rec.FileID+": "+rec.Error)
			continue
		}
		if rec.POIs == nil {
			rec.POIs = []json.RawMessage{}
		}
		for _, raw := range rec.POIs {
			p, err := resolver.DecodePOI(raw)
			if err != nil {
				return nil, fmt.Errorf("error decoding a POI of %s/%s: %w", rec.Case, rec.FileID, err)
			}
			c.POIs[p.ID] = p
		}
		c.Files = append(c.Files, outbox.Analysis{FileID: rec.FileID, POIs: rec.POIs})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case under %s: a case is a directory with callgraph.json and *.py files (PyCG's micro-benchmark/snippets)", dir)
	}
	for _, c := range cases {
		t, err := readPyCGTruth(filepath.Join(dir, filepath.FromSlash(c.Name), "callgraph.json"))
		if err != nil {
			return nil, err
		}
		c.Truth = t
	}
	slices.SortFunc(cases, func(a, b *PyCGCase) int { return cmpString(a.Name, b.Name) })
	return cases, nil
}

func readPyCGTruth(file string) (map[[2]string]bool, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("error reading the call graph: %w", err)
	}
	var cg map[string][]string
	if err := json.Unmarshal(raw, &cg); err != nil {
		return nil, fmt.Errorf("error decoding %s: %w", file, err)
	}
	t := map[[2]string]bool{}
	for caller, callees := range cg {
		for _, callee := range callees {
			t[[2]string{caller, callee}] = true
		}
	}
	return t, nil
}

// PyCGName is the name PyCG's call graphs give the POI p: its file's
// module and its qualified name, which extract.py puts in the id after the
// file and the line ("pkg/mod.py:3:A.f" is "pkg.mod.A.f"); a module's own
// POI ("pkg/mod.py:1:", an empty qualified name) is the module.
func PyCGName(p resolver.POI) string {
	qual := p.ID
	if rest, ok := strings.CutPrefix(p.ID, p.FilePath+":"); ok {
		if _, q, ok := strings.Cut(rest, ":"); ok {
			qual = q
		}
	}
	mod := pythonModule(p.FilePath)
	switch {
	case qual == "":
		return mod
	case mod == "":
		return qual
	}
	return mod + "." + qual
}

// pythonModule is the module of a file relative to the case's directory:
// "pkg/mod.py" is "pkg.mod", "pkg/__init__.py" is "pkg", a top-level
// "__init__.py" is "". A JavaScript or TypeScript file's is named the same
// way, as SWARM-CG's call graphs name it ("nest/imported.js" is
// "nest.imported"), a directory's index.js after the directory, as
// Python's __init__.py ("nested/index.js" is "nested": the module
// `import … from './nested'` loads, and SWARM-CG's name for it in every
// case that has one, such as imports/init_func_import's "nested.func").
func pythonModule(file string) string {
	init := "__init__"
	if resolver.IsPython(file) {
		file = strings.TrimSuffix(file, ".py")
	} else {
		file = strings.TrimSuffix(file, path.Ext(file))
		init = "index"
	}
	if path.Base(file) == init {
		file = path.Dir(file)
		if file == "." {
			return ""
		}
	}
	return strings.ReplaceAll(file, "/", ".")
}
