package worker

import (
	"context"
	"log/slog"
	"strings"
)

// cancelQuietHandler lowers River's error lines about a cancelled context
// (logged by its maintenance services while a client stops) to debug, so a
// clean shutdown does not page anyone.
type cancelQuietHandler struct{ slog.Handler }

func (h cancelQuietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		cancelled := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "error" || a.Key == "err" {
				cancelled = strings.Contains(a.Value.String(), "context canceled")
			}
			return !cancelled
		})
		if cancelled {
			if !h.Enabled(ctx, slog.LevelDebug) {
				return nil
			}
			quiet := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
			r.Attrs(func(a slog.Attr) bool { quiet.AddAttrs(a); return true })
			r = quiet
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h cancelQuietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return cancelQuietHandler{h.Handler.WithAttrs(attrs)}
}

func (h cancelQuietHandler) WithGroup(name string) slog.Handler {
	return cancelQuietHandler{h.Handler.WithGroup(name)}
}

// riverLogger is the logger handed to River.
func riverLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(cancelQuietHandler{logger.Handler()})
}
