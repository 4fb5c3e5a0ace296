package ops_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/relay-dev/relay/internal/ops"
)

var metricRE = regexp.MustCompile(`\brelay_[a-z0-9_]+`)

// metricsIn returns the relay metric names an expression uses, with
// histogram series suffixes folded into their metric.
func metricsIn(expr string) []string {
	var out []string
	for _, m := range metricRE.FindAllString(expr, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && slices.Contains(ops.Names(), base) {
				m = base
			}
		}
		out = append(out, m)
	}
	return out
}

func TestDeployAssets_UseOnlyMetricsRelayExports(t *testing.T) {
	t.Parallel()
	var exprs []string

	raw, err := os.ReadFile("../../deploy/grafana/relay-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Panels)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}

	raw, err = os.ReadFile("../../deploy/prometheus/alerts.yml")
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	require.NotEmpty(t, rules.Groups)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Expr, "alert %q has no expression", r.Alert)
			exprs = append(exprs, r.Expr)
		}
	}

	used := map[string]bool{}
	for _, e := range exprs {
		names := metricsIn(e)
		require.NotEmpty(t, names, "expression uses no relay metric: %s", e)
		for _, n := range names {
			require.Contains(t, ops.Names(), n, "expression %q uses %s, which relay does not export", e, n)
			used[n] = true
		}
	}
	require.Greater(t, len(used), 6, "the dashboard and alerts should cover most metrics")
}
