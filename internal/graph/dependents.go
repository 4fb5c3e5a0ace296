package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// File is a file of a repository.
type File struct {
	Repository string `json:"repository"`
	FileID     string `json:"file_id"`
}

// FindFiles returns the files path names: the file whose id is path, or
// else those whose id ends with "/"+path or that path ends with "/"+id (a
// path given from another directory than the analysed one). repository nil
// searches every repository.
func FindFiles(ctx context.Context, q Querier, path string, repository *string) ([]File, error) {
	repos, args, err := repositories(ctx, q, repository)
	if err != nil {
		return nil, err
	}
	args = append(args, path)
	p := len(args)
	files, err := queryFiles(ctx, q, fmt.Sprintf(`SELECT repository, file_id FROM files
		WHERE repository = ANY(%s) AND file_id = $%d ORDER BY repository`, repos, p), args...)
	if err != nil || len(files) > 0 {
		return files, err
	}
	files, err = queryFiles(ctx, q, fmt.Sprintf(`SELECT repository, file_id FROM files
		WHERE repository = ANY(%s)
		  AND (right(file_id, length($%d) + 1) = '/' || $%d OR right($%d, length(file_id) + 1) = '/' || file_id)
		ORDER BY repository, file_id LIMIT 100`, repos, p, p, p), args...)
	return files, err
}

// SuggestFiles returns up to five files whose base name is path's.
func SuggestFiles(ctx context.Context, q Querier, path string, repository *string) ([]File, error) {
	base := path[strings.LastIndexByte(path, '/')+1:]
	repos, args, err := repositories(ctx, q, repository)
	if err != nil {
		return nil, err
	}
	args = append(args, base)
	p := len(args)
	return queryFiles(ctx, q, fmt.Sprintf(`SELECT repository, file_id FROM files
		WHERE repository = ANY(%s) AND (file_id = $%d OR right(file_id, length($%d) + 1) = '/' || $%d)
		ORDER BY repository, file_id LIMIT 5`, repos, p, p, p), args...)
}

func queryFiles(ctx context.Context, q Querier, sql string, args ...any) ([]File, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("error finding files: %w", err)
	}
	files, err := pgx.CollectRows(rows, pgx.RowToStructByPos[File])
	if err != nil {
		return nil, fmt.Errorf("error finding files: %w", err)
	}
	return files, nil
}

// Dependent is a file a change to another file may affect.
type Dependent struct {
	File
	// Depth is 1 for a file with a reference to one of the changed file's
	// POIs, 2 for one with a reference to a depth-1 file's, and so on.
	Depth int `json:"depth"`
	// Via is the file, one level nearer, that it references.
	Via File `json:"via"`
}

// Dependents returns the files that depend on f, transitively, to depth
// levels (0: every level), each once at the level it is first reached,
// through relay_dependents.
func Dependents(ctx context.Context, q Querier, f File, depth int) ([]Dependent, error) {
	var d *int
	if depth > 0 {
		d = &depth
	}
	rows, err := q.Query(ctx, `SELECT level, repository, file_id, via_repository, via_file_id
		FROM relay_dependents($1, depth => $2, repo => $3)`, f.FileID, d, f.Repository)
	if err != nil {
		return nil, fmt.Errorf("error reading the dependents of %q: %w", f.FileID, err)
	}
	deps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dependent, error) {
		var d Dependent
		err := row.Scan(&d.Depth, &d.Repository, &d.FileID, &d.Via.Repository, &d.Via.FileID)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the dependents of %q: %w", f.FileID, err)
	}
	return deps, nil
}
