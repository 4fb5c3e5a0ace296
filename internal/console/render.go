package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// view is what every page's template gets.
type view struct {
	Title    string
	Nav      string // the menu entry to highlight
	Prefix   string
	ReadOnly bool
	CSRF     string
	User     string
	Data     any
}

// httpError is an error shown to the user with its status code.
type httpError struct {
	code int
	msg  string
}

func (e httpError) Error() string { return e.msg }

// fieldError is an invalid input, named by its form field.
type fieldError struct {
	Field string
	Msg   string
}

// invalidInput is a request with invalid fields: answered 400, with each
// field named on the page.
type invalidInput []fieldError

func (e invalidInput) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Field + ": " + f.Msg
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// pageHandler runs h and renders its error, if any, as a page: 400 with
// the fields named for invalid input, 404 for what does not exist, 500
// (logged, with a generic message) for anything else.
func (c *Console) pageHandler(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		err := h(w, r)
		if err == nil {
			return
		}
		var (
			he  httpError
			bad invalidInput
		)
		data := struct {
			Status int
			Msg    string
			Fields []fieldError
		}{}
		switch {
		case errors.As(err, &bad):
			data.Status, data.Msg, data.Fields = http.StatusBadRequest, "Some input is invalid.", bad
		case errors.As(err, &he):
			data.Status, data.Msg = he.code, he.msg
		case errors.Is(err, context.Canceled):
			return
		default:
			c.cfg.Logger.ErrorContext(r.Context(), "console request failed", slog.String("path", r.URL.Path),
				slog.String("error", err.Error()), slog.Duration("duration", time.Since(start)))
			data.Status, data.Msg = http.StatusInternalServerError, "The request failed; the console's log says why."
		}
		_ = c.render(w, r, data.Status, "error", http.StatusText(data.Status), "", data)
	})
}

// render executes page with data as a whole page, buffered, so that a
// template error becomes a 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page, title, nav string, data any) error {
	t, ok := c.pages[page]
	if !ok {
		return fmt.Errorf("no page template %q", page)
	}
	v := view{Title: title, Nav: nav, Prefix: c.cfg.Prefix, ReadOnly: c.cfg.ReadOnly, User: user(r),
		CSRF: c.csrf.token(user(r)), Data: data}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("error rendering page %s: %w", page, err)
	}
	h := w.Header()
	securityHeaders(h, pageCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// checkCSRF parses the form and checks its token; invalid or missing is
// 403.
func (c *Console) checkCSRF(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return httpError{code: http.StatusBadRequest, msg: "the form could not be read: " + err.Error()}
	}
	if !c.csrf.valid(user(r), r.PostForm.Get("csrf")) {
		return httpError{code: http.StatusForbidden, msg: "the form's CSRF token is missing or invalid: reload the page and try again"}
	}
	return nil
}

// parsePages parses each page template with the layout and the partials
// (templates/_*.html).
func parsePages() (map[string]*template.Template, error) {
	names, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(n.Name(), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", "templates/"+n.Name())
		if err != nil {
			return nil, fmt.Errorf("error parsing template %s: %w", n.Name(), err)
		}
		out[name] = t
	}
	return out, nil
}

// timeLayout is how the console shows times (UTC).
const timeLayout = "2006-01-02 15:04:05Z"

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format(timeLayout)
	},
	"timep": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "—"
		}
		return t.UTC().Format(timeLayout)
	},
	"pretty": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return string(raw)
		}
		return b.String()
	},
	"pct": func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
	"query": func(kv ...any) template.URL {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if s := fmt.Sprint(kv[i+1]); s != "" {
				q.Set(fmt.Sprint(kv[i]), s)
			}
		}
		return template.URL(q.Encode())
	},
	"add": func(a, b int) int { return a + b },
	"dict": func(kv ...any) map[string]any {
		m := make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}
