package torture

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// GenConfig tunes the generator.
type GenConfig struct {
	// Ops is the number of steps of a history (a window counts as one).
	Ops int
	// Kills lets windows run a `relay worker` process that is killed
	// (SIGKILL) while it waits for a held transaction.
	Kills bool
	// Paths are the publish paths histories use; empty means all. Leaving
	// some out isolates a divergence of the others.
	Paths []Path
}

// The universe of a history: a few files in two repositories, a few POI
// ids per repository (so ids move between files), and a few names (so
// references resolve, go unresolved and are ambiguous).
var (
	repos     = []string{"", "r2"}
	fileNames = []string{"a.js", "b.js", "c.go"}
	poiIDs    = []string{"p1", "p2", "p3", "p4", "p5", "p6"}
	funcNames = []string{"helper", "other", "main", "util"}
	classes   = []string{"Base", "Shape"}
)

type generator struct {
	rng     *rand.Rand
	cfg     GenConfig
	m       *model
	nextVer int
	steps   []*Step
}

// Generate returns the history of seed.
func Generate(seed uint64, cfg GenConfig) *History {
	g := &generator{rng: rand.New(rand.NewPCG(seed, seed^0x5deece66d)), cfg: cfg, m: newModel(), nextVer: 1}
	for len(g.steps) < cfg.Ops {
		g.next()
	}
	return &History{Seed: seed, Steps: g.steps}
}

// emit appends s if the model accepts it.
func (g *generator) emit(s *Step) bool {
	if err := g.m.apply(s); err != nil {
		return false
	}
	g.steps = append(g.steps, s)
	return true
}

func (g *generator) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// path picks one of from that the configuration allows.
func (g *generator) path(from ...Path) (Path, bool) {
	var ok []Path
	for _, p := range from {
		if len(g.cfg.Paths) == 0 || slices.Contains(g.cfg.Paths, p) {
			ok = append(ok, p)
		}
	}
	if len(ok) == 0 {
		return 0, false
	}
	return ok[g.rng.IntN(len(ok))], true
}

func (g *generator) allFiles() []key {
	var ks []key
	for _, r := range repos {
		for _, f := range fileNames {
			ks = append(ks, key{r, f})
		}
	}
	return ks
}

// files picks n distinct files (of any repositories).
func (g *generator) files(n int) []key {
	all := g.allFiles()
	g.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:n]
}

func (g *generator) next() {
	w := g.rng.IntN(100)
	switch {
	case w < 30:
		g.publish()
	case w < 44:
		g.emit(&Step{Kind: KindWork, Workers: 1 + g.rng.IntN(3)})
	case w < 72:
		g.window()
	case w < 77:
		g.emit(&Step{Kind: KindDeleteRepo, Repo: g.pick(repos), Purge: g.rng.IntN(3) == 0})
	case w < 83:
		if g.emit(&Step{Kind: KindReprocess}) {
			g.emit(&Step{Kind: KindWork, Workers: 1 + g.rng.IntN(2)})
		}
	case w < 90:
		g.ignore()
	default:
		g.correct()
	}
}

// poi makes a new POI with id id (a null POI has none).
func (g *generator) poi(id string) POI {
	if g.rng.IntN(100) < 12 {
		if g.rng.IntN(5) == 0 {
			return POI{Bad: "null"}
		}
		return POI{ID: id, Bad: "line"}
	}
	p := POI{ID: id, Line: 1 + g.rng.IntN(9)}
	if g.rng.IntN(5) == 0 {
		p.Type, p.Name = typeClass, g.pick(classes)
		if g.rng.IntN(2) == 0 {
			p.Extends = g.pick(classes)
		}
		return p
	}
	p.Type, p.Name = typeFunc, g.pick(funcNames)
	for range g.rng.IntN(3) {
		if c := g.pick(funcNames); !slices.Contains(p.Calls, c) {
			p.Calls = append(p.Calls, c)
		}
	}
	if g.rng.IntN(4) == 0 {
		p.TargetIDs = []string{g.pick(poiIDs)}
	}
	return p
}

// freeIDs are the ids of k's repository that no file but k may own.
func (g *generator) freeIDs(k key) []string {
	var ids []string
	for _, id := range poiIDs {
		if len(g.m.owners(k.repo, id, map[key]bool{k: true})) == 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// version makes a new version of k: a mutation of its last one (a rename,
// a POI dropped, a line moved, a POI added) or a fresh one, its ids taken
// from ids.
func (g *generator) version(k key, ids []string) *Version {
	v := &Version{ID: g.nextVer, Repo: k.repo, File: k.file}
	g.nextVer++
	g.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	used := map[string]bool{}
	take := func() (string, bool) {
		for _, id := range ids {
			if !used[id] {
				used[id] = true
				return id, true
			}
		}
		return "", false
	}
	if f := g.m.files[k]; f != nil && f.cur != nil && g.rng.IntN(2) == 0 {
		for _, p := range f.cur.POIs {
			if p.ID != "" && !slices.Contains(ids, p.ID) {
				continue
			}
			if p.ID != "" {
				used[p.ID] = true
			}
			v.POIs = append(v.POIs, p)
		}
		for range 1 + g.rng.IntN(2) {
			switch g.rng.IntN(5) {
			case 0: // rename
				if i := g.validIndex(v); i >= 0 {
					v.POIs[i].Name = g.pick(append(slices.Clone(funcNames), classes...))
				}
			case 1: // drop
				if len(v.POIs) > 0 {
					i := g.rng.IntN(len(v.POIs))
					v.POIs = slices.Delete(v.POIs, i, i+1)
				}
			case 2: // move a line
				if i := g.validIndex(v); i >= 0 {
					v.POIs[i].Line = 1 + g.rng.IntN(9)
				}
			case 3: // fix or break one
				if len(v.POIs) > 0 {
					i := g.rng.IntN(len(v.POIs))
					if v.POIs[i].Bad == "line" {
						v.POIs[i] = g.poi(v.POIs[i].ID)
						v.POIs[i].Bad = ""
						if v.POIs[i].Name == "" {
							v.POIs[i] = POI{ID: v.POIs[i].ID, Type: typeFunc, Name: g.pick(funcNames), Line: 1}
						}
					} else if v.POIs[i].ID != "" {
						v.POIs[i] = POI{ID: v.POIs[i].ID, Bad: "line"}
					}
				}
			default: // add
				if id, ok := take(); ok {
					v.POIs = append(v.POIs, g.poi(id))
				}
			}
		}
		v.POIs = slices.Clone(v.POIs)
		return v
	}
	for range g.rng.IntN(4) {
		id, ok := take()
		if !ok {
			break
		}
		v.POIs = append(v.POIs, g.poi(id))
	}
	return v
}

func (g *generator) validIndex(v *Version) int {
	var is []int
	for i, p := range v.POIs {
		if p.Bad == "" {
			is = append(is, i)
		}
	}
	if len(is) == 0 {
		return -1
	}
	return is[g.rng.IntN(len(is))]
}

var allPaths = []Path{PathGoTx, PathGoMany, PathCLI, PathSQL, PathSQLMany}

func (g *generator) publish() {
	path, ok := g.path(allPaths...)
	if !ok {
		return
	}
	switch r := g.rng.IntN(100); {
	case r < 12 && g.move():
		return
	case r < 20 && g.conflict():
		return
	}
	n := 1
	if path != PathGoTx {
		n = 1 + g.rng.IntN(3)
	}
	s := &Step{Kind: KindPublish, Path: path}
	taken := map[string]bool{}
	for _, k := range g.files(n) {
		ids := slices.DeleteFunc(g.freeIDs(k), func(id string) bool { return taken[k.repo+"\x00"+id] })
		v := g.version(k, ids)
		for _, id := range v.validIDs() {
			taken[k.repo+"\x00"+id] = true
		}
		s.Versions = append(s.Versions, v)
	}
	g.emit(s)
}

// settledIDs returns the files with a settled id and the ids.
func (g *generator) settled() []struct {
	k  key
	id string
} {
	var out []struct {
		k  key
		id string
	}
	for _, k := range g.allFiles() {
		for _, id := range poiIDs {
			if g.m.settledOwner(k, id) {
				out = append(out, struct {
					k  key
					id string
				}{k, id})
			}
		}
	}
	return out
}

// move publishes, on a path that publishes in order, a file giving up a
// POI id and then another file of its repository taking it.
func (g *generator) move() bool {
	cands := g.settled()
	if len(cands) == 0 {
		return false
	}
	c := cands[g.rng.IntN(len(cands))]
	var others []key
	for _, f := range fileNames {
		if f != c.k.file {
			others = append(others, key{c.k.repo, f})
		}
	}
	to := others[g.rng.IntN(len(others))]
	from := &Version{ID: g.nextVer, Repo: c.k.repo, File: c.k.file}
	for _, p := range g.m.files[c.k].cur.POIs {
		if p.ID != c.id {
			from.POIs = append(from.POIs, p)
		}
	}
	g.nextVer++
	ids := append(g.freeIDs(to), c.id)
	tv := g.version(to, slices.DeleteFunc(ids, func(id string) bool { return id == c.id }))
	p := g.poi(c.id)
	p.Bad = ""
	if p.Name == "" {
		p = POI{ID: c.id, Type: typeFunc, Name: g.pick(funcNames), Line: 2}
	}
	tv.POIs = append(tv.POIs, p)
	path, ok := g.path(PathCLI, PathSQL, PathSQLMany)
	return ok && g.emit(&Step{Kind: KindPublish, Path: path, Versions: []*Version{from, tv}})
}

// conflict publishes a file with a POI id another file holds: the model
// expects the publish to be rejected and to change nothing.
func (g *generator) conflict() bool {
	cands := g.settled()
	if len(cands) == 0 {
		return false
	}
	c := cands[g.rng.IntN(len(cands))]
	to := key{c.k.repo, g.pick(fileNames)}
	if to == c.k {
		return false
	}
	v := g.version(to, g.freeIDs(to))
	v.POIs = append(v.POIs, POI{ID: c.id, Type: typeFunc, Name: g.pick(funcNames), Line: 3})
	path, ok := g.path(PathGoTx, PathCLI)
	return ok && g.emit(&Step{Kind: KindPublish, Path: path, Versions: []*Version{v}})
}

// window opens one or two holds, runs one to three operations while they
// are open, some on the held files, then closes the holds in a random
// order, most committing.
func (g *generator) window() {
	nh := 1 + g.rng.IntN(2)
	holdPaths := []Path{PathGoTx, PathGoTx, PathGoMany, PathSQL}
	s := &Step{Kind: KindWindow}
	// Ids free of every file outside the window, per file, handed out so
	// that no two files of the window share one.
	taken := map[string]bool{}
	idsFor := func(k key) []string {
		var out []string
		for _, id := range poiIDs {
			if taken[k.repo+"\x00"+id] {
				continue
			}
			if len(g.m.owners(k.repo, id, map[key]bool{k: true})) == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	mark := func(v *Version) {
		for _, id := range v.validIDs() {
			taken[v.Repo+"\x00"+id] = true
		}
	}
	// Each file gets its ids once, so its versions in the window share
	// them and no other file takes them.
	fileIDs := map[key][]string{}
	versionOf := func(k key) *Version {
		ids, ok := fileIDs[k]
		if !ok {
			ids = idsFor(k)
			if len(ids) > 3 {
				g.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				ids = ids[:3]
			}
			for _, id := range ids {
				taken[k.repo+"\x00"+id] = true
			}
			fileIDs[k] = ids
		}
		v := g.version(k, slices.Clone(ids))
		mark(v)
		return v
	}
	picked := g.files(len(g.allFiles()))
	var held []key
	for i := range nh {
		path, ok := g.path(holdPaths...)
		if !ok {
			return
		}
		n := 1
		if path != PathGoTx {
			n = 1 + g.rng.IntN(2)
		}
		h := &Step{Kind: KindPublish, Path: path, Commit: g.rng.IntN(4) != 0}
		for range n {
			if len(picked) == 0 {
				break
			}
			k := picked[0]
			picked = picked[1:]
			h.Versions = append(h.Versions, versionOf(k))
			held = append(held, k)
		}
		s.Holds = append(s.Holds, h)
		s.CloseOrder = append(s.CloseOrder, i)
	}
	g.rng.Shuffle(len(s.CloseOrder), func(i, j int) { s.CloseOrder[i], s.CloseOrder[j] = s.CloseOrder[j], s.CloseOrder[i] })
	worked := false
	concFiles := map[key]bool{}
	for range 1 + g.rng.IntN(3) {
		if !worked && g.rng.IntN(4) == 0 {
			worked = true
			s.Concurrent = append(s.Concurrent, &Step{Kind: KindWork, Workers: 1 + g.rng.IntN(3),
				Subprocess: g.cfg.Kills && g.rng.IntN(6) == 0})
			continue
		}
		path, ok := g.path(allPaths...)
		if !ok {
			continue
		}
		n := 1
		if path != PathGoTx {
			n = 1 + g.rng.IntN(2)
		}
		c := &Step{Kind: KindPublish, Path: path}
		for range n {
			var k key
			if g.rng.IntN(3) != 0 {
				k = held[g.rng.IntN(len(held))] // the interesting case
			} else if len(picked) > 0 {
				k = picked[0]
				picked = picked[1:]
			} else {
				continue
			}
			if concFiles[k] || slices.ContainsFunc(c.Versions, func(v *Version) bool { return v.key() == k }) {
				continue
			}
			concFiles[k] = true
			c.Versions = append(c.Versions, versionOf(k))
		}
		if len(c.Versions) > 0 {
			s.Concurrent = append(s.Concurrent, c)
		}
	}
	if len(s.Concurrent) == 0 {
		s.Concurrent = append(s.Concurrent, &Step{Kind: KindWork, Workers: 1})
	}
	g.emit(s)
}

// ready makes sure the worker has run since the last publish, so that the
// failed rows an ignore or a correction acts on exist.
func (g *generator) ready() {
	for _, f := range g.m.files {
		if !f.worked || f.pendingSQL {
			g.emit(&Step{Kind: KindWork, Workers: 1 + g.rng.IntN(2)})
			return
		}
	}
}

func (g *generator) ignore() {
	var cands []key
	for _, k := range g.allFiles() {
		if f := g.m.files[k]; f != nil && f.definite && f.cur != nil && slices.ContainsFunc(f.cur.POIs, func(p POI) bool { return p.Bad != "" }) {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return
	}
	k := cands[g.rng.IntN(len(cands))]
	g.ready()
	g.emit(&Step{Kind: KindIgnore, Repo: k.repo, File: k.file})
}

// correct rewrites the failed rows of a POI id once malformed in a file
// (in its current version, an older one, or a deleted file) to a valid POI
// at a line no publish uses, then reprocesses.
func (g *generator) correct() {
	type cand struct {
		k  key
		id string
	}
	var cands []cand
	for _, k := range g.allFiles() {
		if f := g.m.files[k]; f != nil {
			for _, id := range poiIDs {
				if f.malformedEver[id] {
					cands = append(cands, cand{k, id})
				}
			}
		}
	}
	if len(cands) == 0 {
		return
	}
	c := cands[g.rng.IntN(len(cands))]
	g.ready()
	fixed := POI{ID: c.id, Type: typeFunc, Name: g.pick(funcNames), Line: 90 + g.rng.IntN(9)}
	if g.rng.IntN(2) == 0 {
		fixed.Calls = []string{g.pick(funcNames)}
	}
	if g.emit(&Step{Kind: KindCorrect, Repo: c.k.repo, File: c.k.file, POIID: c.id, Fixed: &fixed}) {
		if g.emit(&Step{Kind: KindReprocess}) {
			g.emit(&Step{Kind: KindWork, Workers: 1 + g.rng.IntN(2)})
		}
	}
}

// String names a key for messages.
func (s *Step) String() string { return fmt.Sprint(s.Describe("")) }
