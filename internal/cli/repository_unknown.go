package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/internal/nearname"
	"github.com/relay-dev/relay/internal/repositories"
	"github.com/relay-dev/relay/internal/termout"
)

// maxRepositoriesNamed bounds the repositories an unknown repository's
// error lists.
const maxRepositoriesNamed = 10

// requireRepository returns an error (exit 1) when name, a repository a
// command was given (nil: none given), is one relay holds no data of
// (repositories.Store.Exists): the name is most likely mistyped, and
// "nothing matches" would hide it. The error names the closest known
// repository when one is close, and lists the known ones.
func (a *app) requireRepository(ctx context.Context, pool *pgxpool.Pool, name *string) error {
	if name == nil {
		return nil
	}
	return requireRepositoryIn(ctx, repositories.New(pool, nil, a.logger), *name)
}

// requireRepositoryIn is requireRepository with a repositories.Store.
func requireRepositoryIn(ctx context.Context, st *repositories.Store, name string) error {
	ok, err := st.Exists(ctx, name)
	if err != nil || ok {
		return err
	}
	known, err := st.Names(ctx)
	if err != nil {
		return err
	}
	return unknownRepositoryError(name, known)
}

// unknownRepositoryError says that no repository name exists, suggesting
// the closest of known and listing them.
func unknownRepositoryError(name string, known []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "no repository %q: relay holds no files or failed POIs of it", name)
	if c, ok := closest(name, known); ok {
		fmt.Fprintf(&b, "; did you mean %s?", shellWord(c))
	}
	switch {
	case len(known) == 0:
		b.WriteString(" (relay holds no repository yet)")
	default:
		shown := known[:min(len(known), maxRepositoriesNamed)]
		words := make([]string, len(shown))
		for i, k := range shown {
			words[i] = `""`
			if k != "" {
				words[i] = shellWord(termout.String(k))
			}
		}
		fmt.Fprintf(&b, " (repositories: %s", strings.Join(words, ", "))
		if more := len(known) - len(shown); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		b.WriteString("; relay repository list shows them)")
	}
	return exitError{code: ExitRuntime, msg: b.String()}
}

// closest returns the known name nearest to name by edit distance, when it
// is near enough to be what was meant: at most a third of name's length
// away (and at least 2 edits allowed), or name with different case.
func closest(name string, known []string) (string, bool) {
	best, bestD := "", -1
	for _, k := range known {
		if k == "" {
			continue
		}
		d := nearname.Distance(strings.ToLower(name), strings.ToLower(k))
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best, bestD >= 0 && bestD <= max(2, len([]rune(name))/3)
}
