package torture

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// clone deep-copies h (versions included).
func (h *History) clone() *History {
	b, err := json.Marshal(h)
	if err != nil {
		panic("torture: encoding a history: " + err.Error()) // plain data
	}
	var c History
	if err := json.Unmarshal(b, &c); err != nil {
		panic("torture: decoding a history: " + err.Error())
	}
	return &c
}

// candidates are the histories one removal smaller than h: without a step;
// without a hold or a concurrent operation of a window; without a file of
// a publish of several; without a POI of a version; with one worker fewer.
// Larger removals come first.
func candidates(h *History) []*History {
	var out []*History
	edit := func(fn func(c *History) bool) {
		c := h.clone()
		if fn(c) {
			out = append(out, c)
		}
	}
	// Halves, then single steps.
	if n := len(h.Steps); n >= 4 {
		edit(func(c *History) bool { c.Steps = c.Steps[n/2:]; return true })
		edit(func(c *History) bool { c.Steps = c.Steps[:n/2]; return true })
	}
	for i := range h.Steps {
		edit(func(c *History) bool { c.Steps = slices.Delete(c.Steps, i, i+1); return true })
	}
	for i, s := range h.Steps {
		switch s.Kind {
		case KindWindow:
			for j := range s.Concurrent {
				edit(func(c *History) bool {
					w := c.Steps[i]
					w.Concurrent = slices.Delete(w.Concurrent, j, j+1)
					return len(w.Concurrent) > 0
				})
			}
			for j := range s.Holds {
				edit(func(c *History) bool {
					w := c.Steps[i]
					if len(w.Holds) < 2 {
						return false
					}
					w.Holds = slices.Delete(w.Holds, j, j+1)
					w.CloseOrder = slices.DeleteFunc(w.CloseOrder, func(k int) bool { return k == j })
					for k := range w.CloseOrder {
						if w.CloseOrder[k] > j {
							w.CloseOrder[k]--
						}
					}
					return true
				})
			}
			for j, c := range slices.Concat(s.Holds, s.Concurrent) {
				if c.Kind == KindWork && c.Workers > 1 {
					edit(func(h *History) bool {
						slices.Concat(h.Steps[i].Holds, h.Steps[i].Concurrent)[j].Workers--
						return true
					})
				}
				for k := range c.Versions {
					edit(func(h *History) bool {
						st := slices.Concat(h.Steps[i].Holds, h.Steps[i].Concurrent)[j]
						if len(st.Versions) < 2 {
							return false
						}
						st.Versions = slices.Delete(st.Versions, k, k+1)
						return true
					})
				}
			}
		case KindWork:
			if s.Workers > 1 {
				edit(func(c *History) bool { c.Steps[i].Workers--; return true })
			}
		case KindPublish:
			for k := range s.Versions {
				edit(func(c *History) bool {
					st := c.Steps[i]
					if len(st.Versions) < 2 {
						return false
					}
					st.Versions = slices.Delete(st.Versions, k, k+1)
					return true
				})
			}
		}
	}
	// POIs, last.
	for i, s := range h.Steps {
		for j, c := range append([]*Step{s}, slices.Concat(s.Holds, s.Concurrent)...) {
			for k, v := range c.Versions {
				for p := range v.POIs {
					edit(func(h *History) bool {
						st := h.Steps[i]
						if j > 0 {
							st = slices.Concat(st.Holds, st.Concurrent)[j-1]
						}
						st.Versions[k].POIs = slices.Delete(st.Versions[k].POIs, p, p+1)
						return true
					})
				}
			}
		}
	}
	return out
}

// shrink returns the smallest history it finds that still fails as h did
// (a diff if h diverged, an error if h failed to run), with its diff or
// error, rerunning at most cfg.ShrinkRuns candidates.
func (cfg *Config) shrink(ctx context.Context, l *lane, h *History, d *Diff, herr error) (*History, *Diff, error) {
	best, bestDiff, bestErr := h, d, herr
	runs := 0
	limit := cfg.ShrinkRuns
	if limit <= 0 {
		limit = 200
	}
	for improved := true; improved && runs < limit; {
		improved = false
		for _, c := range candidates(best) {
			if runs >= limit || ctx.Err() != nil {
				break
			}
			if err := Annotate(c); err != nil {
				if !errors.Is(err, errInvalid) {
					return best, bestDiff, bestErr
				}
				continue
			}
			runs++
			_, cd, cerr := cfg.runOne(ctx, l, c)
			fails := (herr == nil && cerr == nil && !cd.Empty()) || (herr != nil && cerr != nil)
			if fails {
				best, bestDiff, bestErr, improved = c, cd, cerr, true
				break
			}
		}
	}
	return best, bestDiff, bestErr
}
