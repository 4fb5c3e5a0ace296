package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/internal/graph"
)

// GraphWalk is what `relay graph callers|callees --json` prints.
type GraphWalk struct {
	// Direction is "callers" or "callees".
	Direction string `json:"direction"`
	// Type is the relationship type followed: CALLS, EXTENDS, IMPLEMENTS
	// or IMPORTS.
	Type  string `json:"type"`
	Depth int    `json:"depth"`
	// Target is the POI TARGET named; MatchedBy how (id, symbol,
	// file:name, qualified name or name).
	Target    graph.Item `json:"target"`
	MatchedBy string     `json:"matched_by"`
	// Items are the target's direct callers or callees, each with the next
	// level in children ([] at the last level, and for an item repeated).
	Items []*graph.Node `json:"items"`
}

// GraphDependents is what `relay graph dependents --json` prints.
type GraphDependents struct {
	File graph.File `json:"file"`
	// Depth is the --depth asked for; 0 is every level.
	Depth int `json:"depth"`
	// Dependents are the files a change to File may affect, nearest first.
	Dependents []graph.Dependent `json:"dependents"`
}

func newGraphCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Read the graph: callers and callees of a POI, the files that depend on a file",
		Long: `Graph answers "who calls X?", "what does X call?" and "what may a change to
this file break?" from the resolved relationships, as an editor's call
hierarchy does. docs/relationships.md describes the data and the same
questions in SQL (relay_callers, relay_callees, relay_dependents).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("graph needs a subcommand; see relay graph --help")}
		},
	}
	cmd.AddCommand(newGraphWalkCmd(a, graph.Callers), newGraphWalkCmd(a, graph.Callees), newGraphDependentsCmd(a))
	return cmd
}

const targetHelp = `TARGET names a POI, tried in this order: its POI id ("parse/parse.go:467:pipeline",
relay analyze's "<file>:<line>:<name>"), its symbol ("text/template/parse.(*Tree).pipeline"),
"file:name" ("parse/parse.go:pipeline"), a qualified name (the end of a symbol:
"Tree.pipeline", "parse.(*Tree).pipeline") or a name ("pipeline"). The first way
that matches wins. A TARGET matching several POIs lists them with their
locations and exits 2: give one's id or symbol, or --repository. One matching
nothing exits 2 too, naming near names.`

func newGraphWalkCmd(a *app, dir graph.Direction) *cobra.Command {
	var (
		asJSON  bool
		depth   int
		relType string
		repo    repositoryFlag
	)
	what := "the POIs that reference TARGET: its callers, or with --type EXTENDS its subtypes, IMPLEMENTS its implementers, IMPORTS its importers"
	if dir == graph.Callees {
		what = "the POIs TARGET references: its callees, or with --type the types it extends or implements, the names it imports"
	}
	cmd := &cobra.Command{
		Use:   string(dir) + " TARGET",
		Short: "Show " + what,
		Long: "Show " + what + `, one level or --depth levels as an indented
tree, each item with its file:line (and its repository when it is not
TARGET's). An item reached again is not expanded twice: it is marked
"(cycle)" when it is on the path from TARGET to it, else "(see above)".

` + targetHelp + `

--json prints {direction, type, depth, target, matched_by, items}: target and
every item have repository, poi_id, name, type, file_id, line and symbol
("" when none); items also depth, repeated, cycle and children (the next
level, [] when none).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if depth < 1 {
				return usageError{fmt.Errorf("--depth %d: give 1 or more", depth)}
			}
			relType = strings.ToUpper(relType)
			if !slices.Contains(graph.RelTypes, relType) {
				return usageError{fmt.Errorf("--type %q is not one of %s", relType, strings.Join(graph.RelTypes, ", "))}
			}
			return a.withGraph(cmd, func(ctx context.Context, pool *pgxpool.Pool) error {
				if err := a.requireRepository(ctx, pool, repo.value()); err != nil {
					return err
				}
				target, by, err := a.findTarget(ctx, pool, args[0], repo.value())
				if err != nil {
					return err
				}
				items, err := graph.Walk(ctx, pool, target, dir, relType, depth)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(GraphWalk{Direction: string(dir), Type: relType, Depth: depth, Target: target,
						MatchedBy: string(by), Items: items})
				}
				printWalk(a.out(), dir, relType, depth, target, items)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tree as JSON")
	cmd.Flags().IntVar(&depth, "depth", 1, "levels to follow (each item is expanded once, so any depth ends)")
	cmd.Flags().StringVar(&relType, "type", "CALLS", "the relationship type to follow: "+strings.Join(graph.RelTypes, ", "))
	cmd.Flags().Var(&repo, "repository", `look TARGET up in this repository only ("" is the default repository; default: every repository)`)
	return cmd
}

func newGraphDependentsCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		depth  int
		repo   repositoryFlag
	)
	cmd := &cobra.Command{
		Use:   "dependents FILE",
		Short: "Show the files a change to FILE may affect: those that reference its POIs, transitively",
		Long: `Dependents shows the files with a resolved reference (of any type) to one of
FILE's POIs, then the files with one to theirs, and so on (--depth limits the
levels; 0, the default, follows them all), each once, nearest first, with the
file it references one level nearer. A file of another repository is shown
with its repository.

FILE is a file id as published (relay analyze's are relative to the analysed
directory), or a path that ends with one, or one that ends with FILE.

--json prints {file, depth, dependents}: file has repository and file_id;
each dependent repository, file_id, depth and via (repository, file_id).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if depth < 0 {
				return usageError{fmt.Errorf("--depth %d: give 0 (every level) or more", depth)}
			}
			return a.withGraph(cmd, func(ctx context.Context, pool *pgxpool.Pool) error {
				if err := a.requireRepository(ctx, pool, repo.value()); err != nil {
					return err
				}
				f, err := a.findFile(ctx, pool, args[0], repo.value())
				if err != nil {
					return err
				}
				deps, err := graph.Dependents(ctx, pool, f, depth)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(GraphDependents{File: f, Depth: depth, Dependents: deps})
				}
				printDependents(a.out(), f, deps)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the files as JSON")
	cmd.Flags().IntVar(&depth, "depth", 0, "levels to follow (0: every level)")
	cmd.Flags().Var(&repo, "repository", `look FILE up in this repository only ("" is the default repository; default: every repository)`)
	return cmd
}

func (a *app) withGraph(cmd *cobra.Command, fn func(ctx context.Context, pool *pgxpool.Pool) error) error {
	ctx := cmd.Context()
	pool, err := a.open(ctx, "graph")
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(ctx, pool)
}

// findTarget resolves TARGET to one POI, or returns a usage error listing
// the candidates or naming near names.
func (a *app) findTarget(ctx context.Context, pool *pgxpool.Pool, target string, repository *string) (graph.Item, graph.MatchedBy, error) {
	items, by, err := graph.Find(ctx, pool, target, repository)
	if err != nil {
		return graph.Item{}, "", err
	}
	switch {
	case len(items) == 1:
		return items[0], by, nil
	case len(items) > 1:
		var b strings.Builder
		fmt.Fprintf(&b, "%q matches %d POIs by %s; give one's id (or its symbol, where it is the only one)", target, len(items), by)
		if repository == nil && slices.ContainsFunc(items, func(it graph.Item) bool { return it.Repository != items[0].Repository }) {
			b.WriteString(", or --repository")
		}
		b.WriteString(":")
		for _, it := range items {
			fmt.Fprintf(&b, "\n  %s  %s  %s", it.Location(), it.Type, it.Label())
			if repository == nil {
				fmt.Fprintf(&b, "  repository %q", it.Repository)
			}
			fmt.Fprintf(&b, "\n      id %s", it.POIID)
		}
		return graph.Item{}, "", usageError{errors.New(b.String())}
	}
	msg := fmt.Sprintf("no POI matches %q (by id, symbol, file:name, qualified name or name)%s", target, inRepository(repository))
	near, err := graph.Suggest(ctx, pool, target, repository)
	if err != nil {
		return graph.Item{}, "", err
	}
	if len(near) > 0 {
		msg += "; near names: " + strings.Join(near, ", ")
	}
	return graph.Item{}, "", usageError{errors.New(msg)}
}

func (a *app) findFile(ctx context.Context, pool *pgxpool.Pool, path string, repository *string) (graph.File, error) {
	files, err := graph.FindFiles(ctx, pool, path, repository)
	if err != nil {
		return graph.File{}, err
	}
	switch {
	case len(files) == 1:
		return files[0], nil
	case len(files) > 1:
		var b strings.Builder
		fmt.Fprintf(&b, "%q matches %d files; give one's file id exactly, or --repository:", path, len(files))
		for _, f := range files {
			fmt.Fprintf(&b, "\n  %s  repository %q", f.FileID, f.Repository)
		}
		return graph.File{}, usageError{errors.New(b.String())}
	}
	msg := fmt.Sprintf("no file %q%s", path, inRepository(repository))
	near, err := graph.SuggestFiles(ctx, pool, path, repository)
	if err != nil {
		return graph.File{}, err
	}
	if len(near) > 0 {
		var names []string
		for _, f := range near {
			names = append(names, fmt.Sprintf("%s (repository %q)", f.FileID, f.Repository))
		}
		msg += "; files of that name: " + strings.Join(names, ", ")
	}
	return graph.File{}, usageError{errors.New(msg)}
}

func inRepository(repository *string) string {
	if repository == nil {
		return " in any repository"
	}
	return " in " + repositoryName(*repository)
}

// printWalk prints a walk as an indented tree under its target.
func printWalk(w io.Writer, dir graph.Direction, relType string, depth int, target graph.Item, items []*graph.Node) {
	levels := "1 level"
	if depth > 1 {
		levels = fmt.Sprintf("%d levels", depth)
	}
	fmt.Fprintf(w, "%s of %s  %s  (%s, repository %q; %s, %s)\n", dir, target.Label(), target.Location(), target.Type,
		target.Repository, relType, levels)
	if len(items) == 0 {
		fmt.Fprintf(w, "  no %s\n", dir)
		return
	}
	var walk func(nodes []*graph.Node, indent string)
	walk = func(nodes []*graph.Node, indent string) {
		for _, n := range nodes {
			fmt.Fprintf(w, "%s%s  %s", indent, n.Label(), n.Location())
			if n.Repository != target.Repository {
				fmt.Fprintf(w, "  [repository %q]", n.Repository)
			}
			switch {
			case n.Cycle:
				fmt.Fprint(w, "  (cycle)")
			case n.Repeated:
				fmt.Fprint(w, "  (see above)")
			}
			fmt.Fprintln(w)
			walk(n.Children, indent+"  ")
		}
	}
	walk(items, "  ")
}

func printDependents(w io.Writer, f graph.File, deps []graph.Dependent) {
	fmt.Fprintf(w, "files that depend on %s (repository %q): %d\n", f.FileID, f.Repository, len(deps))
	for _, d := range deps {
		fmt.Fprintf(w, "  %d  %s", d.Depth, d.FileID)
		if d.Repository != f.Repository {
			fmt.Fprintf(w, "  [repository %q]", d.Repository)
		}
		if d.Depth > 1 {
			fmt.Fprintf(w, "  (via %s)", d.Via.FileID)
		}
		fmt.Fprintln(w)
	}
}
