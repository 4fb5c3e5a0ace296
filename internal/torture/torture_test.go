package torture

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/testdb"
)

// ciSeeds is the fixed set of histories CI runs: about a minute on a busy
// two-core machine (`make torture` runs any number).
const (
	ciFirstSeed = 1
	ciSeeds     = 40
	ciOps       = 8
)

// ciCheckFailed compares the actionable failed_pois rows in CI too; set
// TORTURE_CHECK_FAILED=0 to leave them out.
func ciCheckFailed() bool { return os.Getenv("TORTURE_CHECK_FAILED") != "0" }

// TestTorture_FixedSeedsMatchTheOracle runs CI's fixed histories and fails
// with each divergence's seed, shrunk history and diff.
func TestTorture_FixedSeedsMatchTheOracle(t *testing.T) {
	n := ciSeeds
	if testing.Short() {
		n = 8
	}
	bin, err := os.Executable()
	require.NoError(t, err)
	res, err := Run(context.Background(), Config{
		ServerURL: testdb.ServerURL(t), Seeds: Seeds(ciFirstSeed, n), Parallel: 2,
		Gen: GenConfig{Ops: ciOps, Kills: true}, CheckFailed: ciCheckFailed(),
		Shrink: true, ShrinkRuns: 40, RelayBin: bin,
	})
	require.NoError(t, err)
	t.Log(res.Summary())
	for _, f := range res.Failures {
		t.Error(f.Report())
	}
	require.Equal(t, n, res.Counts.Histories)
	require.Positive(t, res.Counts.Interleavings)
	require.Positive(t, res.Counts.LockWaits, "no operation was ever seen waiting for a held transaction")
}

// TestGenerate_SeedReplays checks that a seed gives the same history every
// time, and that every generated history is valid in the model.
func TestGenerate_SeedReplays(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 300; seed++ {
		a, b := Generate(seed, GenConfig{Ops: 10, Kills: true}), Generate(seed, GenConfig{Ops: 10, Kills: true})
		require.Equal(t, a.Describe(), b.Describe(), "seed %d", seed)
		require.True(t, reflect.DeepEqual(a.clone(), b.clone()), "seed %d", seed)
		require.NoError(t, Annotate(a.clone()), "seed %d:\n%s", seed, a.Describe())
	}
}

// TestGenerate_CoversEveryOperation checks that a few hundred histories
// use every path, windows with one and two holds, commits and rollbacks,
// moves, expected rejections, deletes, reprocess, ignore, corrections and
// worker processes.
func TestGenerate_CoversEveryOperation(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		h := Generate(seed, GenConfig{Ops: 8, Kills: true})
		var visit func(s *Step, inWindow bool)
		visit = func(s *Step, inWindow bool) {
			switch s.Kind {
			case KindPublish:
				seen[s.Path.String()]++
				if s.Reject {
					seen["reject"]++
				}
				if len(s.Versions) > 1 {
					seen["several files"]++
				}
			case KindWork:
				seen["work"]++
				if s.Subprocess {
					seen["worker process"]++
				}
			case KindWindow:
				seen["window"]++
				if len(s.Holds) == 2 {
					seen["two holds"]++
				}
				for _, c := range s.Holds {
					visit(c, true)
					if c.Commit {
						seen["commit"]++
					} else {
						seen["rollback"]++
					}
				}
				for _, c := range s.Concurrent {
					visit(c, true)
				}
			case KindDeleteRepo:
				seen["delete"]++
			case KindReprocess:
				seen["reprocess"]++
				if len(s.Applies) > 0 {
					seen["correction applied"]++
				}
			case KindIgnore:
				seen["ignore"]++
			case KindCorrect:
				seen["correct"]++
			}
		}
		for _, s := range h.Steps {
			visit(s, false)
		}
	}
	for _, want := range []string{"PublishTx", "PublishManyTx", "relay publish", "relay_publish", "relay_publish_many",
		"reject", "several files", "work", "worker process", "window", "two holds", "commit", "rollback", "delete",
		"reprocess", "correction applied", "ignore", "correct"} {
		require.Positive(t, seen[want], "no %s in 300 histories", want)
	}
}

// TestAnnotate_RejectsWhatTheModelCannotPredict checks the model's rules on
// hand-made histories: an id two files of one publish take, an id that may
// or may not belong to another file after a window, a move on a path that
// publishes all files at once.
func TestAnnotate_RejectsWhatTheModelCannotPredict(t *testing.T) {
	t.Parallel()
	v := func(id int, file string, ids ...string) *Version {
		out := &Version{ID: id, File: file}
		for _, i := range ids {
			out.POIs = append(out.POIs, POI{ID: i, Type: typeFunc, Name: "f", Line: 1})
		}
		return out
	}
	pub := func(p Path, vs ...*Version) *Step { return &Step{Kind: KindPublish, Path: p, Versions: vs} }
	cases := []struct {
		name  string
		steps []*Step
		ok    bool
	}{
		{"two files of a publish take one id", []*Step{pub(PathCLI, v(1, "a.js", "p1"), v(2, "b.js", "p1"))}, false},
		{"a move in publish order", []*Step{pub(PathGoTx, v(1, "a.js", "p1")), pub(PathSQLMany, v(2, "a.js"), v(3, "b.js", "p1"))}, true},
		{"a move out of order", []*Step{pub(PathGoTx, v(1, "a.js", "p1")), pub(PathSQLMany, v(3, "b.js", "p1"), v(2, "a.js"))}, false},
		{"a move in one PublishManyTx", []*Step{pub(PathGoTx, v(1, "a.js", "p1")), pub(PathGoMany, v(2, "a.js"), v(3, "b.js", "p1"))}, false},
		{"an expected rejection", []*Step{pub(PathGoTx, v(1, "a.js", "p1")), pub(PathGoTx, v(2, "b.js", "p1"))}, true},
		{"an id a window left undecided", []*Step{
			{Kind: KindWindow, Holds: []*Step{{Kind: KindPublish, Path: PathGoTx, Commit: true, Versions: []*Version{v(1, "a.js", "p1")}}},
				Concurrent: []*Step{pub(PathSQL, v(2, "a.js"))}, CloseOrder: []int{0}},
			pub(PathGoTx, v(3, "b.js", "p1"))}, false},
	}
	for _, c := range cases {
		err := Annotate(&History{Steps: c.steps})
		if c.ok {
			require.NoError(t, err, c.name)
		} else {
			require.True(t, errors.Is(err, errInvalid), "%s: %v", c.name, err)
		}
	}
}

func TestDiffLines(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"- a", "+ c", "- d"}, diffLines([]string{"a", "b", "d", "d"}, []string{"b", "c", "d"}))
	require.Empty(t, diffLines([]string{"x", "x"}, []string{"x", "x"}))
}
