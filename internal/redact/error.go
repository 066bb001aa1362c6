package redact

import (
	"errors"
	"io"
)

// Hide returns err with text as its text (what Text or Answer left of
// err.Error()), or err itself when text is its text already. errors.Is
// still sees err's chain; errors.As does not, so that no caller can reach
// the original's words (and the secret in them) through the result.
func Hide(err error, text string) error {
	if err == nil || text == err.Error() {
		return err
	}
	return &hidden{text: text, err: err}
}

// hidden is an error whose text was passed through Text or Answer.
type hidden struct {
	text string
	err  error
}

func (e *hidden) Error() string { return e.text }

// Is reports whether the original error matches target (a sentinel such
// as context.Canceled).
func (e *hidden) Is(target error) bool { return errors.Is(e.err, target) }

// Writer returns a writer that passes the text of each Write through Text
// with secrets before writing it to w: for a command's output that prints
// what outside parties wrote (ids, errors) while it holds credentials.
// Each Write is redacted alone, so a caller writes whole lines.
func Writer(w io.Writer, secrets ...string) io.Writer {
	return &writer{w: w, secrets: secrets}
}

type writer struct {
	w       io.Writer
	secrets []string
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, Text(string(p), w.secrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}
