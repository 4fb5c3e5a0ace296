package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTimeFlag(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"2026-11-20T04:05:06Z", time.Date(2026, 11, 20, 4, 5, 6, 0, time.UTC), false},
		{"2026-11-20T06:05:06+02:00", time.Date(2026, 11, 20, 4, 5, 6, 0, time.UTC), false},
		{"2026-11-20", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), false},
		{"2026-11-20 04:05", time.Date(2026, 11, 20, 4, 5, 0, 0, time.UTC), false},
		{"2026-11-20 04:05:06", time.Date(2026, 11, 20, 4, 5, 6, 0, time.UTC), false},
		{"2026-11-20T04:05", time.Date(2026, 11, 20, 4, 5, 0, 0, time.UTC), false},
		{" 2026-11-20T04:05:06.5Z ", time.Date(2026, 11, 20, 4, 5, 6, 5e8, time.UTC), false},
		{"2026-11-20 25:00", time.Time{}, true},
		{"2026/11/20", time.Time{}, true},
		{"24h", now.Add(-24 * time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"7d", now.Add(-7 * 24 * time.Hour), false},
		{"1.5d", now.Add(-36 * time.Hour), false},
		{"2w", now.Add(-14 * 24 * time.Hour), false},
		{"yesterday", time.Time{}, true},
		{"-3h", time.Time{}, true},
		{"d", time.Time{}, true},
		{"7dd", time.Time{}, true},
		{"36500d", now.Add(-36500 * 24 * time.Hour), false},
		{"36501d", time.Time{}, true},
		{"5214w", now.Add(-5214 * 7 * 24 * time.Hour), false},
		{"5215w", time.Time{}, true},
		{"876000h", now.Add(-876000 * time.Hour), false},
		{"876001h", time.Time{}, true},
		{"1e300d", time.Time{}, true},
		{"NaNd", time.Time{}, true},
		{"Infd", time.Time{}, true},
		{"2562048h", time.Time{}, true},
	} {
		got, err := parseTimeFlag(tc.in, now)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.True(t, tc.want.Equal(got), "%s: got %s want %s", tc.in, got, tc.want)
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"": 0, "500": 500, "500/s": 500, "600/m": 10, "3600/h": 1, "0.5/s": 0.5, "86400/d": 1, "1/d": 1.0 / 86400, "1e7/s": 1e7} {
		got, err := parseRate(in)
		require.NoError(t, err, in)
		require.InDelta(t, want, got, 1e-9, in)
	}
	for _, in := range []string{"fast", "0/s", "-1/s", "10/y", "/s", "NaN", "NaN/s", "Inf", "+Inf/m", "1e-300/s", "0.5/d", "2e7/s"} {
		_, err := parseRate(in)
		require.Error(t, err, in)
	}
}
