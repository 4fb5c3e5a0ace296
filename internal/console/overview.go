package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/liveness"
	"github.com/relay-dev/relay/internal/ops"
)

// chart is a bar chart of failures per hour, drawn by the template as SVG.
type chart struct {
	Title         string
	Width, Height int
	Bars          []bar
	Peak, Total   int64
	From, To      string
	// Ticks label the x axis.
	Ticks []tick
}

type bar struct {
	X, Y, W, H float64
	Label      string
}

type tick struct {
	X     float64
	Label string
}

// The chart's plot area.
const (
	chartWidth  = 720
	chartHeight = 140
)

// hourChart draws one bar per hour from first for hours hours; counts may
// leave hours out.
func hourChart(title string, first time.Time, hours int, counts []deadletter.HourCount, tickEvery int, tickFormat string) chart {
	byHour := make([]int64, hours)
	for _, h := range counts {
		if i := int(h.Hour.Sub(first) / time.Hour); i >= 0 && i < hours {
			byHour[i] += h.Count
		}
	}
	c := chart{Title: title, Width: chartWidth, Height: chartHeight,
		From: first.UTC().Format("2006-01-02 15:00"), To: first.Add(time.Duration(hours) * time.Hour).UTC().Format("2006-01-02 15:00")}
	for _, n := range byHour {
		c.Peak, c.Total = max(c.Peak, n), c.Total+n
	}
	w := float64(chartWidth) / float64(hours)
	for i, n := range byHour {
		hour := first.Add(time.Duration(i) * time.Hour).UTC()
		h := 0.0
		if c.Peak > 0 {
			h = float64(n) / float64(c.Peak) * (chartHeight - 4)
		}
		c.Bars = append(c.Bars, bar{X: float64(i) * w, Y: chartHeight - h, W: max(w-1, 1), H: h,
			Label: hour.Format("2006-01-02 15:00") + " UTC: " + strconv.FormatInt(n, 10) + " failures"})
		if i%tickEvery == 0 {
			c.Ticks = append(c.Ticks, tick{X: float64(i) * w, Label: hour.Format(tickFormat)})
		}
	}
	return c
}

// depth is one status's row count.
type depth struct {
	Status string
	N      int64
}

type overviewData struct {
	// FailedDepth and ItemDepth count each table's rows per status, in
	// life-cycle order.
	FailedDepth, ItemDepth []depth
	State                  *ops.State
	Activity               *ops.Activity
	Workers                []liveness.LiveWorker
	Day                    chart
	Week                   chart
	Database               string
	Stats                  struct{ Minutes, Completed, Discarded, Failed int64 }
}

// overview shows what `relay status` shows, with the failures per hour of
// the last 24 hours and 7 days as charts.
func (c *Console) overview(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := ops.Snapshot(ctx, c.pool)
	if err != nil {
		return err
	}
	act, err := ops.RecentActivity(ctx, c.pool, 10, 10)
	if err != nil {
		return err
	}
	workers, err := liveness.LiveWorkers(ctx, c.pool, c.cfg.HeartbeatTimeout)
	if err != nil {
		return err
	}
	weekStart := st.At.UTC().Truncate(time.Hour).Add(-167 * time.Hour)
	week, err := c.failed.Hourly(ctx, weekStart, "")
	if err != nil {
		return err
	}
	d := overviewData{State: st, Activity: act, Workers: workers, Database: c.cfg.Database}
	for _, s := range failed.Statuses() {
		d.FailedDepth = append(d.FailedDepth, depth{Status: string(s), N: st.FailedPOIs[string(s)]})
	}
	for _, s := range []items.Status{items.StatusDeadLettered, items.StatusReprocessing, items.StatusReprocessed, items.StatusIgnored} {
		d.ItemDepth = append(d.ItemDepth, depth{Status: string(s), N: st.DeadLetteredItems[string(s)]})
	}
	d.Week = hourChart("Failed POIs per hour, last 7 days (UTC)", weekStart, 168, week, 24, "Jan 2")
	d.Day = hourChart("Failed POIs per hour, last 24 hours (UTC)", weekStart.Add(144*time.Hour), 24, week, 3, "15:00")
	d.Stats.Minutes = int64(len(act.PerMinute))
	for _, m := range act.PerMinute {
		d.Stats.Completed += m.JobsCompleted
		d.Stats.Discarded += m.JobsDiscarded
		d.Stats.Failed += m.POIsFailed
	}
	return c.render(w, r, http.StatusOK, "overview", "Overview", "overview", d)
}
