package accuracy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/relay-dev/relay/internal/scipindex"
	"github.com/relay-dev/relay/resolver"
)

// SCIPReport scores relay's CALLS on one project indexed by a SCIP indexer
// (relay-eval --scip), against the indexer's own call edges: every call
// site the index resolves, from the innermost definition holding it to
// the definition it names, both POIs of relay analyze --scip, without
// self edges (relay makes none).
type SCIPReport struct {
	Name  string `json:"name"`
	Files int    `json:"files"`
	POIs  int    `json:"pois"`
	// Truth is the number of the indexer's call edges.
	Truth int `json:"truth"`
	// Fallbacks is the call sites the index resolved nothing at, left to
	// the lexical rule.
	Fallbacks int `json:"fallbacks"`
	// Fidelity: relay analyze --scip's edges from the references by
	// symbol only (the path from the index to the stored edge).
	Fidelity Counts `json:"fidelity"`
	// SCIP: every edge of relay analyze --scip, the lexical rule's at the
	// unresolved call sites included.
	SCIP Counts `json:"scip"`
	// Lexical: the same POIs with no references, relay's resolver reading
	// their rawCode.
	Lexical Counts `json:"lexical"`
	// Judged is SCIP with its false positives read by hand (Verdicts):
	// an edge judged a call is a true positive, any other false
	// positive stays one. Unjudged counts the false positives no verdict
	// names (counted as false). Zero without verdicts for the project.
	Judged   Counts `json:"judged"`
	Unjudged int    `json:"unjudged"`
	// FalsePositives are samples of SCIP's false positives (source ->
	// target), FalseNegatives of its false negatives.
	FalsePositives []Edge `json:"false_positives,omitempty"`
	FalseNegatives []Edge `json:"false_negatives,omitempty"`
}

// EvaluateSCIP reads the SCIP index at index of the project rooted at dir
// as relay analyze --scip does, resolves its POIs in process three ways
// (Resolve: the worker's lookup over every POI) and scores each against
// the index's call edges.
//
// verdicts, when not nil, are the hand-read verdicts on the false
// positives of project name (Verdicts.For): the report's Judged.
func EvaluateSCIP(ctx context.Context, name, index, dir string, samples int, verdicts map[Edge]Verdict) (*SCIPReport, error) {
	f, err := os.Open(index)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &SCIPReport{Name: name}
	var pois []resolver.POI
	err = scipindex.Read(ctx, f, scipindex.Config{Source: os.DirFS(dir)}, func(file scipindex.File) error {
		r.Files++
		r.Fallbacks += file.Fallbacks
		for _, raw := range file.Analysis.POIs {
			p, err := resolver.DecodePOI(raw)
			if err != nil {
				return fmt.Errorf("error decoding a POI of %s: %w", file.Analysis.FileID, err)
			}
			pois = append(pois, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.POIs = len(pois)

	// The truth: each reference by symbol to the one POI of that symbol.
	bySymbol := map[string][]string{}
	for _, p := range pois {
		if p.Symbol != "" {
			bySymbol[p.Symbol] = append(bySymbol[p.Symbol], p.ID)
		}
	}
	truth := map[Edge]bool{}
	for _, p := range pois {
		for _, ref := range p.References {
			if ref.Type != resolver.Calls || ref.Symbol == "" {
				continue
			}
			if ids := bySymbol[ref.Symbol]; len(ids) == 1 && ids[0] != p.ID {
				truth[Edge{Source: p.ID, Target: ids[0], Type: resolver.Calls}] = true
			}
		}
	}
	r.Truth = len(truth)

	score := func(pois []resolver.POI, fp, fn *[]Edge) (Counts, error) {
		g, err := Resolve(ctx, pois)
		if err != nil {
			return Counts{}, err
		}
		var c Counts
		got := map[Edge]bool{}
		for _, e := range g.Edges {
			if e.Type != resolver.Calls {
				continue
			}
			got[e] = true
			if truth[e] {
				c.TP++
			} else {
				c.FP++
				if fp != nil {
					*fp = append(*fp, e)
				}
			}
		}
		for e := range truth {
			if !got[e] {
				c.FN++
				if fn != nil {
					*fn = append(*fn, e)
				}
			}
		}
		c.finish()
		return c, nil
	}
	symbolOnly := make([]resolver.POI, len(pois))
	lexical := make([]resolver.POI, len(pois))
	for i, p := range pois {
		s := p
		s.References = slices.DeleteFunc(slices.Clone(p.References), func(r resolver.SuppliedReference) bool { return r.RefName != "" })
		symbolOnly[i] = s
		l := p
		l.References, l.Symbol = nil, ""
		lexical[i] = l
	}
	if r.Fidelity, err = score(symbolOnly, nil, nil); err != nil {
		return nil, err
	}
	var fps, fns []Edge
	if r.SCIP, err = score(pois, &fps, &fns); err != nil {
		return nil, err
	}
	if r.Lexical, err = score(lexical, nil, nil); err != nil {
		return nil, err
	}
	if verdicts != nil {
		r.Judged = r.SCIP
		for _, e := range fps {
			switch v, ok := verdicts[e]; {
			case !ok:
				r.Unjudged++
			case v.Call:
				r.Judged.TP++
				r.Judged.FP--
			}
		}
		r.Judged.finish()
	}
	slices.SortFunc(fps, compareEdges)
	slices.SortFunc(fns, compareEdges)
	r.FalsePositives = fps[:min(samples, len(fps))]
	r.FalseNegatives = fns[:min(samples, len(fns))]
	return r, nil
}

// WriteSCIPTable prints the reports as docs/accuracy.md's table.
func WriteSCIPTable(w io.Writer, reports []*SCIPReport, examples bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "project\tfiles\tPOIs\tindexer's call edges\tfallback sites\tfidelity P / R\t--scip TP / FP / FN\t--scip P / R\tlexical P / R\t--scip FPs read by hand: calls / not / unread\t--scip P, read FPs counted")
	for _, r := range reports {
		judged := "-\t-"
		if r.Judged != (Counts{}) {
			judged = fmt.Sprintf("%d / %d / %d\t%.3f", r.Judged.TP-r.SCIP.TP, r.SCIP.FP-(r.Judged.TP-r.SCIP.TP)-r.Unjudged, r.Unjudged,
				r.Judged.Precision)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f / %.3f\t%d / %d / %d\t%.3f / %.3f\t%.3f / %.3f\t%s\n", r.Name, r.Files, r.POIs, r.Truth,
			r.Fallbacks, r.Fidelity.Precision, r.Fidelity.Recall, r.SCIP.TP, r.SCIP.FP, r.SCIP.FN, r.SCIP.Precision, r.SCIP.Recall,
			r.Lexical.Precision, r.Lexical.Recall, judged)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !examples {
		return nil
	}
	for _, r := range reports {
		for _, e := range r.FalsePositives {
			fmt.Fprintf(w, "%s: FP %s -> %s\n", r.Name, e.Source, e.Target)
		}
		for _, e := range r.FalseNegatives {
			fmt.Fprintf(w, "%s: FN %s -> %s\n", r.Name, e.Source, e.Target)
		}
	}
	return nil
}

// Verdict is a hand reading of one edge of relay analyze --scip that the
// indexer's edges do not hold (a false positive against them): whether
// the call site really calls the target, and the site and reason.
type Verdict struct {
	Call   bool
	Reason string
}

// Verdicts are hand-read verdicts by project (a report's Name) and edge.
type Verdicts map[string]map[Edge]Verdict

// For returns the verdicts on project name's edges, nil when none.
func (v Verdicts) For(name string) map[Edge]Verdict {
	return v[name]
}

// ReadVerdicts reads a verdict file: one edge per line, tab-separated
// project (a report's name: its directory's base name), source POI id,
// target POI id, "call" or "not", and the reason (the call site as
// written, and why); blank lines and lines starting with "#" are
// comments. An edge twice, or a verdict other than call or not, is an
// error naming the line.
func ReadVerdicts(r io.Reader) (Verdicts, error) {
	out := Verdicts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 5)
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want project, source, target, verdict and reason separated by tabs", n)
		}
		var call bool
		switch f[3] {
		case "call":
			call = true
		case "not":
		default:
			return nil, fmt.Errorf("line %d: verdict %q is neither call nor not", n, f[3])
		}
		e := Edge{Source: f[1], Target: f[2], Type: resolver.Calls}
		if out[f[0]] == nil {
			out[f[0]] = map[Edge]Verdict{}
		}
		if _, dup := out[f[0]][e]; dup {
			return nil, fmt.Errorf("line %d: %s -> %s of %s has a verdict already", n, e.Source, e.Target, f[0])
		}
		v := Verdict{Call: call}
		if len(f) == 5 {
			v.Reason = f[4]
		}
		out[f[0]][e] = v
	}
	return out, sc.Err()
}
