package bench

import (
	"context"
)

// RepositoriesDefault is how many repositories the repositories phase
// splits the corpus into when --repositories is left at one.
const RepositoriesDefault = 20

// Repositories is the repositories phase: the relay phase's concurrent run
// of the main corpus in one repository against the same corpus split into
// N repositories (consecutive files, each calling only within itself: the
// same POIs, calls and relationships), in the same rounds. Each round does
// one run of each, the order alternating from round to round (one then
// many, many then one, ...), so that a machine getting slower or faster
// during the phase weighs on both alike.
type Repositories struct {
	// N is the number of repositories of the split runs.
	N      int                  `json:"n"`
	Rounds []*RepositoriesRound `json:"rounds"`
	// One and Many are the runs of median e2e POIs/s of each layout.
	One  *RunResult `json:"one"`
	Many *RunResult `json:"many"`
	// ManyVsOne is Many's e2e POIs/s over One's (the medians).
	ManyVsOne float64 `json:"many_vs_one"`
}

// RepositoriesRound is one round of the repositories phase.
type RepositoriesRound struct {
	// First is the layout run first in the round: "one" or "many".
	First string     `json:"first"`
	One   *RunResult `json:"one"`
	Many  *RunResult `json:"many"`
	// ManyVsOne is this round's split e2e POIs/s over its one-repository
	// e2e POIs/s.
	ManyVsOne float64 `json:"many_vs_one"`
}

// repositories is the repositories phase (see Repositories).
func (b *bench) repositories(ctx context.Context, res *Result) error {
	one := b.mainCorpus()
	one.repositories = 1
	many := b.mainCorpus()
	if many.repositories <= 1 {
		many.repositories = min(RepositoriesDefault, many.files)
	}
	srcOne, err := pregenerated(corpusSource(one))
	if err != nil {
		return err
	}
	srcMany, err := pregenerated(corpusSource(many))
	if err != nil {
		return err
	}
	s := &Repositories{N: many.repositories}
	var ones, manys []*RunResult
	err = b.alternate([2]string{"one", "many"}, [2]func() (*RunResult, error){
		func() (*RunResult, error) { return b.runCorpus(ctx, srcOne, false, true) },
		func() (*RunResult, error) { return b.runCorpus(ctx, srcMany, false, true) },
	}, func(round int, first string, runs [2]*RunResult) {
		r := &RepositoriesRound{First: first, One: runs[0], Many: runs[1]}
		r.One.Malformed, r.Many.Malformed = one.malformedCount(), many.malformedCount()
		r.ManyVsOne = ratio(r.Many.E2EPOIsPerSec, r.One.E2EPOIsPerSec)
		b.progress("  round %d: one %.0f, %d repositories %.0f e2e POIs/s: %.2f", round+1, r.One.E2EPOIsPerSec,
			many.repositories, r.Many.E2EPOIsPerSec, r.ManyVsOne)
		s.Rounds = append(s.Rounds, r)
		ones, manys = append(ones, r.One), append(manys, r.Many)
	})
	if err != nil {
		return err
	}
	s.One, s.Many = medianRound(ones), medianRound(manys)
	s.ManyVsOne = ratio(s.Many.E2EPOIsPerSec, s.One.E2EPOIsPerSec)
	res.Repositories = s
	return nil
}
