package accuracy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/scip-code/scip/bindings/go/scip"

	"github.com/relay-dev/relay/internal/scipindex"
	"github.com/relay-dev/relay/resolver"
)

// SCIPPythonDefault and SCIPTypeScriptDefault are the pinned indexers that
// make scip-indexers installs, relative to the repository's root.
const (
	SCIPPythonDefault     = "internal/scipindex/testdata/indexers/node_modules/.bin/scip-python"
	SCIPTypeScriptDefault = "internal/scipindex/testdata/indexers/node_modules/.bin/scip-typescript"
)

// PyCGSCIP says how LoadPyCGSCIP indexes and maps the cases.
type PyCGSCIP struct {
	// Indexer is scip-python's path, for cases of *.py files.
	Indexer string
	// TypeScript is scip-typescript's path, for cases of JavaScript or
	// TypeScript files (SWARM-CG's JavaScript micro-benchmark, in PyCG's
	// layout and call graph format).
	TypeScript string
	// ModulePOIs adds a POI for each module's top-level code
	// (scipindex.Config.ModulePOIs), as PyCGExtract.ModulePOIs does for
	// extract.py.
	ModulePOIs bool
	// Parallel is how many cases are indexed at once (1 or less: one).
	Parallel int
}

// LoadPyCGSCIP indexes every case under dir (a directory holding
// callgraph.json is a case) with scip-python, run in a copy of the case's
// directory as a project of its own, and reads each index as relay
// analyze --scip does (scipindex.Read): the case's POIs are relay analyze
// --scip's, with their references by symbol and the lexical rule's at the
// call sites the index resolves nothing at. A POI's PyCG name (Names) is
// read from its symbol: the module, then each descriptor's name
// (`main`/A#f(). is main.A.f, a package's `pkg.__init__` is pkg); the
// module's own POI is named after its file, as PyCGName names it. Cases
// are sorted by name.
func LoadPyCGSCIP(ctx context.Context, dir string, opts PyCGSCIP) ([]*PyCGCase, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "callgraph.json" {
			rel, err := filepath.Rel(dir, filepath.Dir(p))
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error listing the cases under %s: %w", dir, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no case under %s: a case is a directory with callgraph.json and *.py files (PyCG's micro-benchmark/snippets)", dir)
	}
	slices.Sort(names)
	indexers := map[bool]string{} // by whether the case is JavaScript or TypeScript
	for js, p := range map[bool]string{false: opts.Indexer, true: opts.TypeScript} {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		indexers[js] = abs
	}
	tmp, err := os.MkdirTemp("", "relay-eval-pycg-scip-")
	if err != nil {
		return nil, fmt.Errorf("error creating a directory for the indexes: %w", err)
	}
	defer os.RemoveAll(tmp)

	cases := make([]*PyCGCase, len(names))
	errs := make([]error, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(opts.Parallel, 1) {
		wg.Go(func() {
			for i := range next {
				cases[i], errs[i] = loadSCIPCase(ctx, dir, names[i], filepath.Join(tmp, fmt.Sprint(i)), indexers, opts.ModulePOIs)
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return cases, nil
}

// loadSCIPCase indexes case name of dir in work and maps its index. A
// case with no *.py file and some *.js or *.ts file is JavaScript or
// TypeScript.
func loadSCIPCase(ctx context.Context, dir, name, work string, indexers map[bool]string, modulePOIs bool) (*PyCGCase, error) {
	caseDir := filepath.Join(dir, filepath.FromSlash(name))
	root := filepath.Join(work, "src")
	// A copy: the indexer must see the case's files only, and write nothing
	// in the checkout.
	if err := os.CopyFS(root, os.DirFS(caseDir)); err != nil {
		return nil, fmt.Errorf("error copying case %s: %w", name, err)
	}
	js, err := isJSCase(root)
	if err != nil {
		return nil, err
	}
	indexer := indexers[js]
	if indexer == "" {
		return nil, fmt.Errorf("case %s: no indexer for its language (scip-python for *.py, scip-typescript for *.js and *.ts)", name)
	}
	if _, err := os.Stat(indexer); err != nil {
		return nil, fmt.Errorf("case %s: no indexer at %s (run make scip-indexers): %w", name, indexer, err)
	}
	index := filepath.Join(work, "index.scip")
	var out bytes.Buffer
	// A project name per case: the cases' symbols stay apart in one
	// repository too (the prefixed-ids layout), as two packages' would.
	project := "pycg-" + strings.ReplaceAll(name, "/", "-")
	args := []string{"index", "--project-name", project, "--project-version", "0", "--output", index}
	if js {
		// scip-typescript names the package from package.json and needs a
		// tsconfig.json, which it infers for JavaScript.
		pkg := fmt.Sprintf(`{"name":%q,"version":"0"}`, project)
		if err := os.WriteFile(filepath.Join(root, "package.json"), []byte(pkg), 0o644); err != nil {
			return nil, err
		}
		args = []string{"index", "--infer-tsconfig", "--output", index}
	}
	cmd := exec.CommandContext(ctx, indexer, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("error indexing case %s with %s: %w: %s", name, indexer, err, strings.TrimSpace(out.String()))
	}
	f, err := os.Open(index)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &PyCGCase{Name: name, POIs: map[string]resolver.POI{}, Names: map[string]string{}}
	err = scipindex.Read(ctx, f, scipindex.Config{Source: os.DirFS(root), ModulePOIs: modulePOIs}, func(file scipindex.File) error {
		for _, raw := range file.Analysis.POIs {
			p, err := resolver.DecodePOI(raw)
			if err != nil {
				return fmt.Errorf("error decoding a POI of %s: %w", file.Analysis.FileID, err)
			}
			c.POIs[p.ID] = p
			if n := pycgSymbolName(p.Symbol); n != "" {
				c.Names[p.ID] = n
			}
		}
		if file.Analysis.POIs == nil {
			file.Analysis.POIs = []json.RawMessage{}
		}
		c.Files = append(c.Files, file.Analysis)
		return nil
	})
	readErr := err
	if c.Truth, err = readPyCGTruth(filepath.Join(caseDir, "callgraph.json")); err != nil {
		return nil, err
	}
	var ie *scipindex.Error
	if errors.As(readErr, &ie) {
		// relay analyze --scip publishes nothing of an index it rejects:
		// the case keeps its call graph and has no POI.
		c.Files, c.POIs, c.Names = nil, map[string]resolver.POI{}, map[string]string{}
		c.Skipped = append(c.Skipped, "index rejected: "+ie.Error())
		return c, nil
	}
	if readErr != nil {
		return nil, fmt.Errorf("error reading case %s's index: %w", name, readErr)
	}
	if err := nameByScope(c, root); err != nil {
		return nil, err
	}
	return c, nil
}

// What a PyCGReport's POIs and references are.
const (
	// PyCGExtractPy: extract.py's POIs, resolved by relay's lexical rule.
	PyCGExtractPy = "extract.py, lexical"
	// PyCGSCIPReferences: relay analyze --scip's POIs and references.
	PyCGSCIPReferences = "relay analyze --scip"
	// PyCGSCIPLexical: relay analyze --scip's POIs without references or
	// symbols, resolved by relay's lexical rule.
	PyCGSCIPLexical = "--scip's POIs, lexical"
)

// withoutReferences returns cases with every POI's references and symbol
// dropped (PyCGSCIPLexical); Names stay, so the POIs are named as before.
func withoutReferences(cases []*PyCGCase) ([]*PyCGCase, error) {
	out := make([]*PyCGCase, 0, len(cases))
	for _, c := range cases {
		l := &PyCGCase{Name: c.Name, POIs: map[string]resolver.POI{}, Truth: c.Truth, Skipped: c.Skipped, Names: c.Names}
		for _, a := range c.Files {
			la := a
			la.POIs = make([]json.RawMessage, 0, len(a.POIs))
			for _, raw := range a.POIs {
				var fields map[string]json.RawMessage
				if err := json.Unmarshal(raw, &fields); err != nil {
					return nil, fmt.Errorf("error decoding a POI of %s/%s: %w", c.Name, a.FileID, err)
				}
				delete(fields, "references")
				delete(fields, "symbol")
				b, err := json.Marshal(fields)
				if err != nil {
					return nil, err
				}
				p, err := resolver.DecodePOI(b)
				if err != nil {
					return nil, fmt.Errorf("error decoding a POI of %s/%s: %w", c.Name, a.FileID, err)
				}
				l.POIs[p.ID] = p
				la.POIs = append(la.POIs, b)
			}
			l.Files = append(l.Files, la)
		}
		out = append(out, l)
	}
	return out, nil
}

// isJSCase reports whether the case in root has no *.py file and some
// *.js or *.ts file.
func isJSCase(root string) (bool, error) {
	py, js := false, false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".py":
			py = true
		case ".js", ".mjs", ".cjs", ".ts":
			js = true
		}
		return nil
	})
	return js && !py, err
}

// pycgSymbolName is the PyCG name of a symbol of scip-python or
// scip-typescript: its module (scip-python's namespace, "pkg.__init__"
// read as "pkg"; scip-typescript's path namespaces, "nest"/"imported.js"
// read as "nest.imported", a directory's index.js as the directory) and
// each further descriptor's name, joined by dots (a JavaScript constructor
// is "constructor"); "" for a local symbol or one without descriptors.
func pycgSymbolName(symbol string) string {
	if symbol == "" || scip.IsLocalSymbol(symbol) {
		return ""
	}
	s, err := scip.ParseSymbol(symbol)
	if err != nil || len(s.Descriptors) == 0 {
		return ""
	}
	js := s.Scheme == "scip-typescript"
	parts := make([]string, 0, len(s.Descriptors))
	for i, d := range s.Descriptors {
		name := d.Name
		switch {
		case js && d.Suffix == scip.Descriptor_Namespace && isIndexFile(name) &&
			(i+1 == len(s.Descriptors) || s.Descriptors[i+1].Suffix != scip.Descriptor_Namespace):
			name = "" // a directory's index.js is the directory's module (pythonModule)
		case js && d.Suffix == scip.Descriptor_Namespace:
			name = strings.TrimSuffix(name, path.Ext(name))
		case i == 0 && d.Suffix == scip.Descriptor_Namespace && name == "__init__":
			name = ""
		case i == 0 && d.Suffix == scip.Descriptor_Namespace:
			name = strings.TrimSuffix(name, ".__init__")
		case js && name == "<constructor>":
			name = "constructor"
		}
		if name != "" {
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, ".")
}

// isIndexFile reports whether a file's name is a directory's index module
// (index.js, index.ts, ...).
func isIndexFile(name string) bool {
	return strings.TrimSuffix(name, path.Ext(name)) == "index" && path.Ext(name) != ""
}
