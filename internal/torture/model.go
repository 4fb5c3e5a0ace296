package torture

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The model is what the generator knows of a history without running it:
// for each file, the ids it may own in the database, whether its last
// version is known (definite), and whether the worker has run since. It
// decides which steps are valid (a publish must never hinge on which of two
// unordered operations commits first) and what to expect of them (a
// rejection, a correction that a reprocess applies). The generator builds
// histories through it, and the shrinker replays candidates through it,
// dropping those it finds invalid.
type model struct {
	files map[key]*fileState
	// corrections waiting for a reprocess: Version -1 when none applies.
	corrections []pendingCorrection
	// ignored are the versions whose failed rows an ignore set aside.
	ignored map[int]bool
	// patches are the corrections reprocesses applied.
	patches []Patch
}

type fileState struct {
	// cur is the file's last version when definite (nil: no file).
	cur      *Version
	definite bool
	// possible are the ids the file may own in pois now or once its queued
	// analyses are drained: every id of every version that may be its
	// last.
	possible map[string]bool
	// pendingSQL says an analysis of the file may still be queued.
	pendingSQL bool
	// worked says a worker ran until idle since the file's last publish:
	// its failed rows exist.
	worked bool
	// malformedEver are the ids of POIs that were malformed in some
	// version of the file.
	malformedEver map[string]bool
}

type pendingCorrection struct {
	key     key
	version int // -1: the correction must have no effect
	index   int
	fixed   POI
}

func newModel() *model { return &model{files: map[key]*fileState{}, ignored: map[int]bool{}} }

func (m *model) file(k key) *fileState {
	f, ok := m.files[k]
	if !ok {
		f = &fileState{definite: true, possible: map[string]bool{}, malformedEver: map[string]bool{}}
		m.files[k] = f
	}
	return f
}

// errInvalid marks a step the model cannot predict: the shrinker drops
// candidates that contain one.
var errInvalid = errors.New("step invalid in this history")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// owners returns, for repository repo, the files (other than those in
// except) that may own id.
func (m *model) owners(repo, id string, except map[key]bool) []key {
	var out []key
	for k, f := range m.files {
		if k.repo == repo && !except[k] && f.possible[id] {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b key) int {
		if a.file < b.file {
			return -1
		}
		if a.file > b.file {
			return 1
		}
		return 0
	})
	return out
}

// settledOwner reports whether file k owns id in the database for certain:
// its last version is known, applied, and has id among its valid POIs.
func (m *model) settledOwner(k key, id string) bool {
	f := m.files[k]
	return f != nil && f.definite && !f.pendingSQL && f.cur != nil && slices.Contains(f.cur.validIDs(), id)
}

// checkPublish decides whether a publish outside a window is valid and
// whether it is expected to be rejected.
func (m *model) checkPublish(s *Step) (reject bool, err error) {
	inStep := map[key]int{}
	for i, v := range s.Versions {
		if _, dup := inStep[v.key()]; dup {
			return false, invalid("file %s twice in one publish", v.key())
		}
		inStep[v.key()] = i
	}
	except := map[key]bool{}
	for k := range inStep {
		except[k] = true
	}
	byID := map[string]key{}
	for _, v := range s.Versions {
		for _, id := range v.validIDs() {
			if o, dup := byID[v.Repo+"\x00"+id]; dup {
				return false, invalid("%s and %s both take id %s in one publish", o, v.key(), id)
			}
			byID[v.Repo+"\x00"+id] = v.key()
		}
	}
	for i, v := range s.Versions {
		for _, id := range v.validIDs() {
			for _, o := range m.owners(v.Repo, id, except) {
				if !m.settledOwner(o, id) {
					return false, invalid("%s's id %s may or may not belong to %s", v.key(), id, o)
				}
				reject = true
			}
			// A move within the publish: the file giving the id up must
			// come first, and the path must publish in order.
			for k, j := range inStep {
				if k == v.key() || !m.file(k).possible[id] {
					continue
				}
				if j > i || s.Path == PathGoMany || s.Path == PathGoTx || !m.settledOwner(k, id) ||
					slices.Contains(s.Versions[j].validIDs(), id) {
					return false, invalid("%s's id %s moves from %s out of order", v.key(), id, k)
				}
			}
		}
	}
	if reject && (len(s.Versions) != 1 || (s.Path != PathGoTx && s.Path != PathCLI)) {
		return false, invalid("an expected rejection on %s of %d files", s.Path, len(s.Versions))
	}
	return reject, nil
}

// published records v as its file's last version, as a publish outside a
// window leaves it.
func (m *model) published(v *Version, path Path) {
	f := m.file(v.key())
	f.cur, f.definite, f.worked = v, true, false
	if path.queued() {
		f.pendingSQL = true
		for _, id := range v.validIDs() {
			f.possible[id] = true
		}
	} else {
		f.pendingSQL = false
		f.possible = setOf(v.validIDs())
	}
	for _, p := range v.POIs {
		if p.Bad == "line" {
			f.malformedEver[p.ID] = true
		}
	}
	m.dropCorrections(func(k key) bool { return k == v.key() })
}

func (m *model) dropCorrections(match func(key) bool) {
	m.corrections = slices.DeleteFunc(m.corrections, func(c pendingCorrection) bool { return match(c.key) })
}

// apply checks step s against the model, annotates it, and moves the model
// past it.
func (m *model) apply(s *Step) error {
	switch s.Kind {
	case KindPublish:
		reject, err := m.checkPublish(s)
		if err != nil {
			return err
		}
		s.Reject = reject
		if !reject {
			for _, v := range s.Versions {
				m.published(v, s.Path)
			}
		}
	case KindWindow:
		return m.applyWindow(s)
	case KindWork:
		if s.Subprocess {
			return invalid("a worker process outside a window")
		}
		for _, f := range m.files {
			f.pendingSQL, f.worked = false, true
			if f.definite {
				f.possible = map[string]bool{}
				if f.cur != nil {
					f.possible = setOf(f.cur.validIDs())
				}
				for _, p := range m.patches {
					if f.cur != nil && p.Version == f.cur.ID {
						f.possible[p.Fixed.ID] = true
					}
				}
			}
		}
	case KindDeleteRepo:
		for k, f := range m.files {
			if k.repo == s.Repo {
				f.cur, f.definite, f.possible, f.pendingSQL, f.worked = nil, true, map[string]bool{}, false, true
			}
		}
		m.dropCorrections(func(k key) bool { return k.repo == s.Repo })
	case KindReprocess:
		s.Applies = nil
		for _, c := range m.corrections {
			f := m.file(c.key)
			if c.version < 0 || f.cur == nil || f.cur.ID != c.version || !f.definite || f.pendingSQL {
				continue
			}
			if owned, err := m.ownedElsewhere(c.key, c.fixed.ID); err != nil {
				return err
			} else if owned {
				continue
			}
			p := Patch{Version: c.version, Index: c.index, Fixed: c.fixed}
			s.Applies = append(s.Applies, p)
			m.patches = append(m.patches, p)
			f.possible[c.fixed.ID] = true
		}
		m.corrections = nil
	case KindIgnore:
		f := m.file(key{s.Repo, s.File})
		if !f.definite || !f.worked || f.cur == nil || f.pendingSQL {
			return invalid("ignore of %s before its rows are known", key{s.Repo, s.File})
		}
		m.ignored[f.cur.ID] = true
		s.Ignored = f.cur.ID
		m.dropCorrections(func(k key) bool { return k == key{s.Repo, s.File} })
	case KindCorrect:
		k := key{s.Repo, s.File}
		f := m.file(k)
		c := pendingCorrection{key: k, version: -1, fixed: *s.Fixed}
		if f.definite && f.worked && !f.pendingSQL && f.cur != nil && !m.ignored[f.cur.ID] {
			for i, p := range f.cur.POIs {
				if p.Bad == "line" && p.ID == s.POIID && !m.patched(f.cur.ID, i) {
					c.version, c.index = f.cur.ID, i
				}
			}
		}
		if c.version >= 0 {
			if _, err := m.ownedElsewhere(k, s.POIID); err != nil {
				return err
			}
		}
		if c.version < 0 && f.definite && f.worked && f.cur == nil {
			// A deleted file's kept rows: a reprocess must not recreate it.
			c.version = -1
		} else if c.version < 0 && !(f.definite && f.worked) {
			return invalid("correction of %s before its rows are known", k)
		}
		m.corrections = append(m.corrections, c)
	}
	return nil
}

// ownedElsewhere reports whether a file other than k owns id for certain;
// an id another file may or may not own (after a window) makes the step
// unpredictable: a reprocess writes the corrected POI only if no other
// file holds its id.
func (m *model) ownedElsewhere(k key, id string) (bool, error) {
	for _, o := range m.owners(k.repo, id, map[key]bool{k: true}) {
		if !m.settledOwner(o, id) {
			return false, invalid("%s's corrected id %s may or may not belong to %s", k, id, o)
		}
		return true, nil
	}
	return false, nil
}

func (m *model) patched(version, index int) bool {
	return slices.ContainsFunc(m.patches, func(p Patch) bool { return p.Version == version && p.Index == index })
}

// applyWindow checks a window: its holds and concurrent publishes touch
// files no other of its publishes touches (holds may share files with
// concurrent publishes: that is the point), and no id of theirs may belong
// to another file before, during or after. Every file it touches ends
// indefinite: which of its versions is last depends on the schedule.
func (m *model) applyWindow(s *Step) error {
	if len(s.Holds) == 0 || len(s.CloseOrder) != len(s.Holds) {
		return invalid("a window without holds or close order")
	}
	seen := map[int]bool{}
	for _, i := range s.CloseOrder {
		if i < 0 || i >= len(s.Holds) || seen[i] {
			return invalid("bad close order")
		}
		seen[i] = true
	}
	holdFiles, concFiles := map[key]bool{}, map[key]bool{}
	var versions []*Version
	for _, h := range s.Holds {
		if h.Kind != KindPublish || h.Path == PathCLI || h.Path == PathSQLMany {
			return invalid("a hold that is not a Go or relay_publish publish")
		}
		for _, v := range h.Versions {
			if holdFiles[v.key()] {
				return invalid("two holds of %s", v.key())
			}
			holdFiles[v.key()] = true
			versions = append(versions, v)
		}
	}
	workers := 0
	for _, c := range s.Concurrent {
		switch c.Kind {
		case KindPublish:
			for _, v := range c.Versions {
				if concFiles[v.key()] {
					return invalid("two concurrent publishes of %s", v.key())
				}
				concFiles[v.key()] = true
				versions = append(versions, v)
			}
		case KindWork:
			workers++
		default:
			return invalid("a concurrent step that is neither a publish nor a worker run")
		}
	}
	if workers > 1 {
		return invalid("two worker runs in one window")
	}
	// Each version's ids: its own file's, or free of every other file,
	// before and in the window.
	use := map[string]key{} // repo/id -> the file using it in the window
	for _, v := range versions {
		for _, id := range v.validIDs() {
			if o := m.owners(v.Repo, id, map[key]bool{v.key(): true}); len(o) > 0 {
				return invalid("%s's id %s may belong to %s", v.key(), id, o[0])
			}
			if u, ok := use[v.Repo+"\x00"+id]; ok && u != v.key() {
				return invalid("%s and %s both use id %s in one window", u, v.key(), id)
			}
			use[v.Repo+"\x00"+id] = v.key()
		}
	}
	for _, v := range versions {
		f := m.file(v.key())
		f.cur, f.definite, f.worked = nil, false, false
		for _, id := range v.validIDs() {
			f.possible[id] = true
		}
		for _, p := range v.POIs {
			if p.Bad == "line" {
				f.malformedEver[p.ID] = true
			}
		}
	}
	for _, c := range slices.Concat(s.Holds, s.Concurrent) {
		for _, v := range c.Versions {
			if c.Path.queued() {
				m.file(v.key()).pendingSQL = true
			}
		}
	}
	touched := maps.Clone(holdFiles)
	maps.Copy(touched, concFiles)
	m.dropCorrections(func(k key) bool { return touched[k] })
	return nil
}

func setOf(ids []string) map[string]bool {
	s := make(map[string]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}

// Annotate replays h through a fresh model, setting what each step is
// expected to do; it returns an error wrapping errInvalid if a step is not
// valid where it stands (a shrunk history that lost a step another needed).
func Annotate(h *History) error {
	m := newModel()
	for i, s := range h.Steps {
		if err := m.apply(s); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}
