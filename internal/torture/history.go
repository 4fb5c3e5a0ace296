// Package torture is relay's differential torture test. It generates random
// histories of operations (publishes over every path, some held open while
// others run, re-publishes with renames, deleted POIs and POI ids moving
// between files, repository deletes, reprocess, ignore and correction of
// failed rows, one to three workers, worker kills), runs each against a
// database of its own, and compares the result with an oracle: a fresh
// database given only each file's last committed version. relay promises
// that the two hold the same pois, relationships and actionable failed_pois
// rows, whatever the interleaving; a history where they differ is a
// divergence, shrunk to the smallest history that still diverges and
// printed with the seed that replays it.
//
// Interleavings are forced, not hoped for: a held transaction is the step
// boundary, and the executor knows another operation is waiting for it by
// reading pg_stat_activity and pg_blocking_pids, never by sleeping.
package torture

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Path is how a publish reaches relay.
type Path int

// The publish paths.
const (
	// PathGoTx is outbox.Publisher.PublishTx, one file per transaction.
	PathGoTx Path = iota
	// PathGoMany is outbox.Publisher.PublishManyTx, several files in one.
	PathGoMany
	// PathCLI is `relay publish` reading the files' analyses as NDJSON
	// (run in-process through cli.Main).
	PathCLI
	// PathSQL is one `SELECT relay_publish(...)` per file, all in one
	// transaction.
	PathSQL
	// PathSQLMany is one `SELECT relay_publish_many(...)` of every file.
	PathSQLMany
)

var pathNames = [...]string{"PublishTx", "PublishManyTx", "relay publish", "relay_publish", "relay_publish_many"}

func (p Path) String() string { return pathNames[p] }

// queued reports whether the path queues analyses for the SQL API's drain
// (the publish happens at the next worker run) rather than publishing them
// in the caller's transaction.
func (p Path) queued() bool { return p == PathSQL || p == PathSQLMany }

// Kind is what a step does.
type Kind int

// The step kinds.
const (
	// KindPublish publishes Versions over Path.
	KindPublish Kind = iota
	// KindWork runs Workers worker processes until the queues are idle.
	KindWork
	// KindWindow opens Holds (publishes whose transactions stay open), runs
	// Concurrent while they are open, then closes the holds in CloseOrder,
	// each committing or rolling back (Step.Commit).
	KindWindow
	// KindDeleteRepo runs `relay repository delete Repo --yes`.
	KindDeleteRepo
	// KindReprocess runs `relay reprocess --status new --yes`.
	KindReprocess
	// KindIgnore runs `relay failed ignore` on every new row of Repo/File.
	KindIgnore
	// KindCorrect rewrites the original_poi_data of the new rows of
	// Repo/File/POIID to Fixed, as docs/failed_pois.md invites an operator
	// to do before a reprocess.
	KindCorrect
)

// Step is one operation of a history.
type Step struct {
	Kind Kind `json:"kind"`

	// KindPublish (also a hold or a concurrent publish of a window).
	Path     Path       `json:"path,omitempty"`
	Versions []*Version `json:"versions,omitempty"`
	// Reject says the model expects the publish to be rejected (a POI id
	// owned by another file).
	Reject bool `json:"reject,omitempty"`
	// Commit says how a hold closes: commit, or roll back.
	Commit bool `json:"commit,omitempty"`

	// KindWork (also a concurrent step of a window).
	Workers int `json:"workers,omitempty"`
	// Subprocess runs the first worker as a `relay worker` process, which a
	// window kills with SIGKILL while it waits for a held transaction.
	Subprocess bool `json:"subprocess,omitempty"`

	// KindWindow.
	Holds      []*Step `json:"holds,omitempty"`
	Concurrent []*Step `json:"concurrent,omitempty"`
	CloseOrder []int   `json:"closeOrder,omitempty"`

	// KindDeleteRepo, KindIgnore, KindCorrect.
	Repo  string `json:"repo,omitempty"`
	File  string `json:"file,omitempty"`
	POIID string `json:"poiId,omitempty"`
	Purge bool   `json:"purge,omitempty"`
	Fixed *POI   `json:"fixed,omitempty"`

	// Set by the model (annotate), not chosen: the version a correction
	// or an ignore applies to, and the corrections a reprocess applies.
	Applies []Patch `json:"-"`
	Ignored int     `json:"-"`
}

// Patch is a correction a reprocess applies: POI Index of version Version
// becomes Fixed.
type Patch struct {
	Version int
	Index   int
	Fixed   POI
}

// History is a generated sequence of steps.
type History struct {
	Seed  uint64  `json:"seed"`
	Steps []*Step `json:"steps"`
}

// Version is one analysis of one file: what a publish sends.
type Version struct {
	// ID is unique within the history.
	ID   int    `json:"id"`
	Repo string `json:"repo"`
	File string `json:"file"`
	POIs []POI  `json:"pois"`
}

// POI is one POI of a version.
type POI struct {
	// ID is "" for a malformed POI that has none.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	Type string `json:"type,omitempty"`
	Line int    `json:"line,omitempty"`
	// Calls are the names the POI's code calls (a JavaScript file's
	// rawCode) or the symbols it references (a Go file's supplied
	// references by symbol); Extends is the class a class extends.
	Calls   []string `json:"calls,omitempty"`
	Extends string   `json:"extends,omitempty"`
	// TargetIDs are supplied references by target id (Go files).
	TargetIDs []string `json:"targetIds,omitempty"`
	// Bad is how the POI is malformed: "" (valid), "line" (a lineNumber
	// that is not a number), "null" (a JSON null).
	Bad string `json:"bad,omitempty"`
}

// key identifies a file: its repository and id.
type key struct{ repo, file string }

func (k key) String() string {
	if k.repo == "" {
		return k.file
	}
	return k.repo + ":" + k.file
}

func (v *Version) key() key { return key{v.Repo, v.File} }

// supplied reports whether the file's POIs carry supplied symbols and
// references (the Go files) rather than code the resolver reads.
func supplied(file string) bool { return strings.HasSuffix(file, ".go") }

// validIDs are the ids of v's valid POIs: those that enter the symbol table.
func (v *Version) validIDs() []string {
	var ids []string
	for _, p := range v.POIs {
		if p.Bad == "" {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// Analysis renders v as the JSON analysis a publish sends, with patches
// (corrections a reprocess applied) in place of the POIs they fix.
func (v *Version) Analysis(patches []Patch) json.RawMessage {
	pois := make([]json.RawMessage, len(v.POIs))
	for i, p := range v.POIs {
		for _, pt := range patches {
			if pt.Version == v.ID && pt.Index == i {
				p = pt.Fixed
			}
		}
		pois[i] = p.render(v.File)
	}
	a := map[string]any{"fileId": v.File, "pois": pois}
	if v.Repo != "" {
		a["repository"] = v.Repo
	}
	b, err := json.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("torture: encoding version %d: %v", v.ID, err)) // only maps of strings and raw JSON
	}
	return b
}

// render is the POI's JSON in a file.
func (p POI) render(file string) json.RawMessage {
	if p.Bad == "null" {
		return json.RawMessage("null")
	}
	m := map[string]any{"id": p.ID, "type": p.Type, "name": p.Name, "filePath": file, "lineNumber": p.Line}
	if p.Bad == "line" {
		m["lineNumber"] = "x"
	}
	if supplied(file) {
		m["symbol"] = "m/" + p.Name
		refs := []map[string]string{}
		for _, c := range p.Calls {
			refs = append(refs, map[string]string{"type": "CALLS", "symbol": "m/" + c})
		}
		if p.Extends != "" {
			refs = append(refs, map[string]string{"type": "EXTENDS", "symbol": "m/" + p.Extends})
		}
		for _, t := range p.TargetIDs {
			refs = append(refs, map[string]string{"type": "CALLS", "targetId": t})
		}
		m["references"] = refs
		m["rawCode"] = "func " + p.Name + "() {}"
	} else {
		var code strings.Builder
		if p.Type == typeClass {
			code.WriteString("class " + p.Name)
			if p.Extends != "" {
				code.WriteString(" extends " + p.Extends)
			}
			code.WriteString(" {}")
		} else {
			code.WriteString("function " + p.Name + "() {")
			for _, c := range p.Calls {
				code.WriteString(" " + c + "();")
			}
			code.WriteString(" }")
		}
		m["rawCode"] = code.String()
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("torture: encoding POI %q: %v", p.ID, err)) // only strings and ints
	}
	return b
}

const (
	typeFunc  = "function_definition"
	typeClass = "class_declaration"
)

// describe is the POI in a history's printout.
func (p POI) describe() string {
	switch p.Bad {
	case "null":
		return "null"
	case "line":
		return p.ID + "!bad"
	}
	s := p.ID + "=" + p.Name + "@" + fmt.Sprint(p.Line)
	if len(p.Calls) > 0 {
		s += "→" + strings.Join(p.Calls, ",")
	}
	if p.Extends != "" {
		s += "⊂" + p.Extends
	}
	if len(p.TargetIDs) > 0 {
		s += "→#" + strings.Join(p.TargetIDs, ",#")
	}
	return s
}

func (v *Version) describe() string {
	ps := make([]string, len(v.POIs))
	for i, p := range v.POIs {
		ps[i] = p.describe()
	}
	return fmt.Sprintf("%s v%d {%s}", key{v.Repo, v.File}, v.ID, strings.Join(ps, " "))
}

// Describe writes the step as one or more readable lines, each prefixed
// with indent.
func (s *Step) Describe(indent string) []string {
	switch s.Kind {
	case KindPublish:
		vs := make([]string, len(s.Versions))
		for i, v := range s.Versions {
			vs[i] = v.describe()
		}
		line := indent + s.Path.String() + " " + strings.Join(vs, " + ")
		if s.Reject {
			line += "  (expected rejected)"
		}
		return []string{line}
	case KindWork:
		line := fmt.Sprintf("%swork: %d worker(s) until idle", indent, s.Workers)
		if s.Subprocess {
			line += ", the first a `relay worker` process"
		}
		return []string{line}
	case KindWindow:
		out := []string{indent + "window:"}
		for i, h := range s.Holds {
			out = append(out, h.Describe(fmt.Sprintf("%s  hold #%d: ", indent, i))...)
		}
		for _, c := range s.Concurrent {
			out = append(out, c.Describe(indent+"  while held: ")...)
		}
		var closes []string
		for _, i := range s.CloseOrder {
			verb := "rollback"
			if s.Holds[i].Commit {
				verb = "commit"
			}
			closes = append(closes, fmt.Sprintf("%s #%d", verb, i))
		}
		return append(out, indent+"  then "+strings.Join(closes, ", then "))
	case KindDeleteRepo:
		line := fmt.Sprintf("%srelay repository delete %q --yes", indent, s.Repo)
		if s.Purge {
			line += " --purge-failed"
		}
		return []string{line}
	case KindReprocess:
		return []string{indent + "relay reprocess --status new --yes"}
	case KindIgnore:
		return []string{fmt.Sprintf("%srelay failed ignore <every new row of %s>", indent, key{s.Repo, s.File})}
	case KindCorrect:
		return []string{fmt.Sprintf("%scorrect the new failed_pois rows of %s POI %s to %s", indent, key{s.Repo, s.File}, s.POIID, s.Fixed.describe())}
	}
	return []string{indent + "?"}
}

// Describe writes the history as numbered steps.
func (h *History) Describe() string {
	var b strings.Builder
	for i, s := range h.Steps {
		for j, l := range s.Describe("") {
			if j == 0 {
				fmt.Fprintf(&b, "%3d. %s\n", i+1, l)
			} else {
				fmt.Fprintf(&b, "     %s\n", l)
			}
		}
	}
	return b.String()
}

// Ops counts the history's operations: every publish, hold, worker run,
// delete, reprocess, ignore and correction.
func (h *History) Ops() int {
	n := 0
	var count func(s *Step)
	count = func(s *Step) {
		if s.Kind == KindWindow {
			for _, c := range slices.Concat(s.Holds, s.Concurrent) {
				count(c)
			}
			return
		}
		n++
	}
	for _, s := range h.Steps {
		count(s)
	}
	return n
}
