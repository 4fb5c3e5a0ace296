package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"

	"github.com/relay-dev/relay/deadletter/failed"
	"github.com/relay-dev/relay/internal/console"
	"github.com/relay-dev/relay/worker"
)

// PageTime is one web console page's server time: the handler's wall
// clock from request to the last byte of the response, median of 5.
type PageTime struct {
	Page string  `json:"page"`
	MS   float64 `json:"ms"`
}

// consolePages times every page of the web console (internal/console) on
// the dead-letter phase's failed_pois table, straight through its handler
// (no network), as `relay ui` serves them.
func (b *bench) consolePages(ctx context.Context, d *DeadLetter) error {
	jobs, err := worker.NewInsertClient(b.pool, worker.ConfigFrom(b.workerConfig()), b.cfg.Logger)
	if err != nil {
		return err
	}
	c, err := console.New(console.Config{Pool: b.pool, Jobs: jobs, HeartbeatTimeout: b.workerConfig().WorkerHeartbeatTimeout,
		Logger: b.cfg.Logger})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.Start(cctx); err != nil {
		return err
	}
	// A page deep in the list: the keyset position of the row in the
	// middle.
	mid, err := failed.NewStore(b.pool).Get(ctx, d.Rows/2)
	if err != nil {
		return fmt.Errorf("error reading the middle row: %w", err)
	}
	midAt, midID := mid.FailedAt.UnixNano(), mid.ID
	ids := url.Values{"mode": {"ids"}, "status": {"new"}}
	for i := range int64(50) {
		ids.Add("id", strconv.FormatInt(d.Rows/3+i, 10))
	}
	pages := []struct{ name, method, path, form string }{
		{"overview", http.MethodGet, "/", ""},
		{"failed list", http.MethodGet, "/failed", ""},
		{"failed list, status new", http.MethodGet, "/failed?status=new", ""},
		{"failed list, oldest first", http.MethodGet, "/failed?order=oldest", ""},
		{"failed list, a page in the middle", http.MethodGet, "/failed?after=" + strconv.FormatInt(midAt, 10) + "." + strconv.FormatInt(midID, 10), ""},
		{"failed list, class", http.MethodGet, "/failed?class=resolver", ""},
		{"failed list, file", http.MethodGet, "/failed?file=bench/f00042.go", ""},
		{"failed list, POI id", http.MethodGet, "/failed?poi=p424242", ""},
		{"failed list, message search", http.MethodGet, "/failed?q=CAUSE+13%29", ""},
		{"failed list, message search, no match", http.MethodGet, "/failed?q=no+such+text", ""},
		{"failed list, message search + status ignored", http.MethodGet, "/failed?status=ignored&q=CAUSE+13%29", ""},
		{"failed list, time range", http.MethodGet, "/failed?since=2000-01-01T00:00&until=2100-01-01T00:00", ""},
		{"failed groups, all rows", http.MethodGet, "/failed/groups", ""},
		{"failed groups, status new", http.MethodGet, "/failed/groups?status=new", ""},
		{"failed groups, one file (reads its rows)", http.MethodGet, "/failed/groups?file=bench/f00042.go", ""},
		{"failed detail", http.MethodGet, "/failed/" + strconv.FormatInt(d.Rows/2, 10), ""},
		{"reprocess dry run, 50 selected rows", http.MethodPost, "/failed/reprocess", ids.Encode()},
		{"reprocess dry run, a file's new rows", http.MethodPost, "/failed/reprocess", url.Values{"mode": {"filter"}, "status": {"new"},
			"file": {"bench/f00042.go"}}.Encode()},
		{"items list", http.MethodGet, "/items", ""},
		{"items groups", http.MethodGet, "/items/groups", ""},
		{"MapReduce jobs", http.MethodGet, "/jobs", ""},
	}
	// Posts carry the page's CSRF token (no authentication: user "").
	token, err := pageToken(c)
	if err != nil {
		return err
	}
	for _, p := range pages {
		ms, err := medianMillis(func() error {
			var body *strings.Reader
			if p.form != "" {
				body = strings.NewReader(p.form + "&csrf=" + url.QueryEscape(token))
			} else {
				body = strings.NewReader("")
			}
			req := httptest.NewRequestWithContext(ctx, p.method, p.path, body)
			if p.method == http.MethodPost {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				return fmt.Errorf("console page %s (%s): status %d: %.300s", p.name, p.path, rec.Code, rec.Body.String())
			}
			return nil
		})
		if err != nil {
			return err
		}
		d.Console = append(d.Console, PageTime{Page: p.name, MS: ms})
		d.ConsoleMaxMS = max(d.ConsoleMaxMS, ms)
		b.progress("  console %-40s %8.2f ms", p.name, ms)
	}
	return nil
}

// pageToken reads the CSRF token the console puts in its forms.
func pageToken(c *console.Console) (string, error) {
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/failed?limit=1", nil))
	_, rest, ok := strings.Cut(rec.Body.String(), `name="csrf" value="`)
	if !ok {
		return "", fmt.Errorf("no CSRF token on the console's list page (status %d)", rec.Code)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok, nil
}
