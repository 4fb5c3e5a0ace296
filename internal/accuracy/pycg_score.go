package accuracy

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/relay-dev/relay/resolver"
)

// PyCGScore is one layout's score, summed over the cases (micro-averaged:
// precision and recall are of the summed TP, FP and FN).
type PyCGScore struct {
	Layout      PyCGLayout `json:"layout"`
	Description string     `json:"description"`
	Databases   int        `json:"databases"`
	Cases       int        `json:"cases"`
	// Relationships counts relay's CALLS relationships.
	Relationships int `json:"relationships"`
	// Calls compares relay's CALLS, by PyCG names, with the call graphs.
	Calls Counts `json:"calls"`
	// CrossCase counts the relationships whose target is another case's
	// POI: each is a false positive.
	CrossCase int `json:"cross_case"`
	// ReachableRecall is Calls.TP over PyCGReport.Reachable.
	ReachableRecall float64 `json:"reachable_recall"`
	// FailedPOIs counts dead-lettered POIs (failed_pois rows).
	FailedPOIs int `json:"failed_pois"`
	// DifferFromOwn counts the cases whose relationships (by the POI ids of
	// the case's own files) are not exactly those the case has in a
	// database of its own; Differing names them.
	DifferFromOwn int      `json:"differ_from_own_database"`
	Differing     []string `json:"differing_cases,omitempty"`
	// FalsePositives are the false positives of Calls other than
	// cross-case ones, "case: caller -> callee" by PyCG names, sorted.
	FalsePositives []string `json:"false_positives,omitempty"`
}

// PyCGReport is relay's score on the micro-benchmark in every layout.
type PyCGReport struct {
	Dir string `json:"dir"`
	// References says where the POIs and their references come from:
	// PyCGExtractPy, PyCGSCIPReferences or PyCGSCIPLexical.
	References string `json:"references"`
	Cases      int    `json:"cases"`
	Files      int    `json:"files"`
	POIs       int    `json:"pois"`
	// TruthEdges counts the call graphs' edges; Reachable those whose
	// caller and callee are both POIs (PyCGName) relay could link.
	TruthEdges int `json:"truth_edges"`
	Reachable  int `json:"reachable"`
	// Skipped are files that did not parse, "case/file: error".
	Skipped []string    `json:"skipped,omitempty"`
	Layouts []PyCGScore `json:"layouts"`
}

// RunPyCG publishes cases in every layout of PyCGLayouts, works them with
// relay's worker, and scores each layout.
func RunPyCG(ctx context.Context, dir string, cases []*PyCGCase, opts PyCGOptions) (*PyCGReport, error) {
	r := &PyCGReport{Dir: dir, Cases: len(cases)}
	for _, c := range cases {
		r.Files += len(c.Files)
		r.POIs += len(c.POIs)
		r.TruthEdges += len(c.Truth)
		r.Reachable += reachable(c)
		for _, s := range c.Skipped {
			r.Skipped = append(r.Skipped, c.Name+"/"+s)
		}
	}
	var own *pycgRun
	layouts := opts.Layouts
	if len(layouts) == 0 {
		layouts = PyCGLayouts
	}
	for _, layout := range layouts {
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("%s: publishing and working %d cases", layout.Describe(), len(cases)))
		}
		run, err := runPyCGLayout(ctx, cases, layout, opts)
		if err != nil {
			return nil, err
		}
		if own == nil {
			own = run
		}
		s, err := scorePyCG(cases, run, own)
		if err != nil {
			return nil, err
		}
		s.ReachableRecall = ratio(s.Calls.TP, r.Reachable)
		r.Layouts = append(r.Layouts, *s)
	}
	return r, nil
}

// scorePyCG scores run against the cases' call graphs and compares each
// case's relationships with those of own.
func scorePyCG(cases []*PyCGCase, run, own *pycgRun) (*PyCGScore, error) {
	s := &PyCGScore{Layout: run.Layout, Description: run.Layout.Describe(), Databases: run.Databases, Cases: len(cases),
		FailedPOIs: run.Failed}
	for _, c := range cases {
		edges := run.Edges[c.Name]
		s.Relationships += len(edges)
		pairs := map[[2]string]bool{}
		for _, e := range edges {
			if e.TargetCase != "" {
				s.CrossCase++
				s.Calls.FP++
				continue
			}
			src, ok1 := c.POIs[e.Source]
			tgt, ok2 := c.POIs[e.Target]
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("case %s, layout %s: relationship %s names a POI the case does not have", c.Name, run.Layout, e)
			}
			pairs[[2]string{c.pycgName(src), c.pycgName(tgt)}] = true
		}
		for p := range pairs {
			if c.Truth[p] {
				s.Calls.TP++
			} else {
				s.Calls.FP++
				s.FalsePositives = append(s.FalsePositives, c.Name+": "+p[0]+" -> "+p[1])
			}
		}
		for p := range c.Truth {
			if !pairs[p] {
				s.Calls.FN++
			}
		}
		if !sameEdges(run, own, c.Name) {
			s.DifferFromOwn++
			s.Differing = append(s.Differing, c.Name)
		}
	}
	slices.Sort(s.FalsePositives)
	s.Calls.finish()
	return s, nil
}

// reachable counts c's truth edges from a POI to a function or method POI.
func reachable(c *PyCGCase) int {
	callers, callees := map[string]bool{}, map[string]bool{}
	for _, p := range c.POIs {
		if p.Type == resolver.TypeImport {
			continue
		}
		callers[c.pycgName(p)] = true
		if resolver.Accepts(resolver.Calls, p.Type) {
			callees[c.pycgName(p)] = true
		}
	}
	n := 0
	for p := range c.Truth {
		if callers[p[0]] && callees[p[1]] {
			n++
		}
	}
	return n
}

// WritePyCGTable prints one row per layout.
func WritePyCGTable(w io.Writer, r *PyCGReport) error {
	fmt.Fprintf(w, "PyCG micro-benchmark %s, %s: %d cases, %d files, %d POIs; %d call graph edges, %d of them between POIs (reachable)\n\n",
		r.Dir, r.References, r.Cases, r.Files, r.POIs, r.TruthEdges, r.Reachable)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYOUT\tDATABASES\tCASES\tCALLS\tTP\tFP\tFN\tP\tR\tR REACHABLE\tCROSS-CASE\tFAILED POIS\tCASES DIFFERING FROM (a)")
	for _, s := range r.Layouts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d\t%d\n", s.Description, s.Databases, s.Cases,
			s.Relationships, s.Calls.TP, s.Calls.FP, s.Calls.FN, s.Calls.Precision, s.Calls.Recall, s.ReachableRecall,
			s.CrossCase, s.FailedPOIs, s.DifferFromOwn)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Layouts {
		if len(s.Differing) > 0 {
			fmt.Fprintf(w, "\n%s: cases differing from (a): %v\n", s.Description, s.Differing)
		}
	}
	if len(r.Layouts) > 0 && len(r.Layouts[0].FalsePositives) > 0 {
		fmt.Fprintf(w, "\n%s: false positives\n", r.Layouts[0].Description)
		for _, fp := range r.Layouts[0].FalsePositives {
			fmt.Fprintf(w, "  %s\n", fp)
		}
	}
	for _, f := range r.Skipped {
		fmt.Fprintf(w, "not parsed: %s\n", f)
	}
	return nil
}
