// Package logging builds the slog logger of every hookhub program (the
// hub and the subscriber services) from its LOG_LEVEL and LOG_FORMAT
// settings.
package logging

import (
	"io"
	"log/slog"
	"strings"

	"github.com/hookhub/hookhub/internal/redact"
)

// New returns a logger writing to w at level (debug, info, warn, error;
// anything else is info) as text when format is "text" (any case), JSON
// otherwise. Every line goes through redact.Terminal: what a log line
// quotes from outside (a header, a receiver's answer, a provider's error)
// cannot drive the terminal that shows it, in either format.
func New(w io.Writer, level, format string) *slog.Logger {
	w = redact.Terminal(w)
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	if strings.EqualFold(format, "text") {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
