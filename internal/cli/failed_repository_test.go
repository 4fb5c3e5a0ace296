package cli_test

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

func TestFailed_StatsListAndInspectOfRepositories(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	seedFailed(t, db)

	// Only the default repository: the list has no REPOSITORY column and
	// inspect no repository line (TestFailed_ListInspectStatsAnalyzeWithJSON
	// checks the rest).
	r := run(t, db, "", nil, "failed", "list")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "REPOSITORY")
	r = run(t, db, "", nil, "failed", "inspect", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "repository")

	// Rows 2 and 4 move to repository "alpha team", row 4 needing manual
	// review.
	_, err := db.Pool.Exec(t.Context(), `UPDATE failed_pois SET repository = 'alpha team' WHERE id IN (2, 4)`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(t.Context(), `UPDATE failed_pois SET manual_review_required = true WHERE id = 4`)
	require.NoError(t, err)

	r = run(t, db, "", nil, "failed", "list")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^ID +FAILED_AT +STATUS +ATTEMPTS +CLASS +REPOSITORY +FILE +POI +ERROR$`, r.stdout)
	require.Regexp(t, `(?m)^1 +\S+ +new +1 +validation +\(default\) +src/x\.js +x1 +poi "x1": lineNumber`, r.stdout)
	require.Regexp(t, `(?m)^2 +\S+ +new +1 +validation +alpha team +src/x\.js +x2 +poi "x2": lineNumber`, r.stdout)
	r = run(t, db, "", nil, "failed", "list", "--repository", "")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "REPOSITORY", "the rows shown are all of the default repository")
	require.Regexp(t, `(?m)^1 +\S+ +new +1 +validation +src/x\.js +x1 `, r.stdout)

	r = run(t, db, "", nil, "failed", "inspect", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "repository       alpha team\nfile             src/x.js\n")

	// stats --repository counts one repository's rows; without it, all.
	r = run(t, db, "", nil, "failed", "stats", "--repository", "alpha team")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `failed_pois of repository "alpha team": 2 rows`)
	require.Contains(t, r.stdout, "by error class:     validation 1, panic 1, timeout 0")
	require.Contains(t, r.stdout, "manual review:      1 (relay failed list --manual-review --repository 'alpha team')")
	r = run(t, db, "", nil, "failed", "stats", "--repository", "")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "failed_pois of the default repository: 2 rows")
	require.Contains(t, r.stdout, "by error class:     validation 2, panic 0,")
	r = run(t, db, "", nil, "failed", "stats")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "failed_pois: 4 rows\n")
	require.Contains(t, r.stdout, "manual review:      1 (relay failed list --manual-review)\n")

	r = run(t, db, "", nil, "failed", "stats", "--repository", "alpha team", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var st struct {
		Repository *string `json:"repository"`
		Total      int     `json:"total"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	require.Equal(t, "alpha team", *st.Repository)
	require.Equal(t, 2, st.Total)
	r = run(t, db, "", nil, "failed", "stats", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, `"repository"`)

	// A CSV export carries the repository, as JSON does.
	r = run(t, db, "", nil, "failed", "export", "-", "--format", "csv", "--repository", "alpha team")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, "repository", recs[0][len(recs[0])-1])
	require.Equal(t, "alpha team", recs[1][len(recs[1])-1])

	r = run(t, nil, "", nil, "failed", "stats", "--help")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "--repository name")
}
