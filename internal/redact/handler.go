package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a slog.Handler that passes every record to next with
// its message and its attributes' text (strings, errors, Stringers and
// the other values as they print, in groups too) hidden by Text with
// secrets: a logger for a component that logs what outside parties wrote
// (a provider API's ids and errors) next to the credentials it holds.
func Handler(next slog.Handler, secrets ...string) slog.Handler {
	return &handler{next: next, secrets: secrets}
}

type handler struct {
	next    slog.Handler
	secrets []string
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message, h.secrets...), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean), secrets: h.secrets}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), secrets: h.secrets}
}

// attr returns a with its text hidden: a string, an error or a Stringer
// becomes the string Text leaves of it; numbers, times and booleans stay.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindString:
		return slog.String(a.Key, Text(v.String(), h.secrets...))
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Text(x.Error(), h.secrets...))
		case fmt.Stringer:
			return slog.String(a.Key, Text(x.String(), h.secrets...))
		case []byte:
			return slog.String(a.Key, Text(string(x), h.secrets...))
		default:
			return slog.String(a.Key, Text(fmt.Sprint(x), h.secrets...))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
