package redact

import (
	"io"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Terminal returns a writer that passes everything written to w with
// every character that could drive a terminal or hide what it shows
// escaped, visibly: a C0 control but newline and tab (ESC, CR, BS, NUL,
// ...), DEL and a byte that is not UTF-8 as \xHH; a C1 control
// (U+0080..U+009F), a bidirectional control (U+202E, ...) and the line
// and paragraph separators as \uHHHH. Everything else, newlines and tabs
// included, passes unchanged.
//
// It is the one owner of what the hub's programs print: the CLI's stdout
// and stderr and every log line go through it, so a field that came from
// outside (a replayed signature header, a payload, a receiver's answer, a
// provider's error) cannot be forgotten. JSON text stays valid and means
// the same: encoding/json and slog escape C0 controls and bad UTF-8
// themselves, and \uHHHH is the JSON escape of the other characters.
//
// A rune split across two writes is escaped once whole; Flush writes the
// bytes of an incomplete one left at the end. Safe for concurrent use.
func Terminal(w io.Writer) *TerminalWriter { return &TerminalWriter{w: w} }

// TerminalWriter is the writer Terminal returns.
type TerminalWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // the start of a rune the next write completes
	buf     []byte
}

// Write escapes p (see Terminal) and writes it. It reports len(p) when
// the underlying write succeeded.
func (t *TerminalWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := p
	if len(t.pending) > 0 {
		in = append(t.pending, p...)
		t.pending = nil
	}
	out, rest := AppendTerminal(t.buf[:0], in, false)
	t.pending = append(t.pending[:0:0], rest...)
	t.buf = out[:0]
	if len(t.buf) > 64<<10 {
		t.buf = nil // do not keep a large body's buffer
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is left of an incomplete rune, escaped.
func (t *TerminalWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	out, _ := AppendTerminal(nil, t.pending, true)
	t.pending = nil
	_, err := t.w.Write(out)
	return err
}

// AppendTerminal appends p escaped (see Terminal) to dst. Unless final,
// an incomplete rune at the end of p is not appended but returned as
// rest, for the next call.
func AppendTerminal(dst, p []byte, final bool) (out, rest []byte) {
	start := 0 // p[start:i] passes unchanged
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if (c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t' {
				i++
				continue
			}
			dst = append(append(dst, p[start:i]...), `\x`...)
			dst = append(dst, hex[c>>4], hex[c&0xf])
			i++
			start = i
			continue
		}
		if !final && !utf8.FullRune(p[i:]) {
			return append(dst, p[start:i]...), p[i:]
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, p[start:i]...), `\x`...)
			dst = append(dst, hex[c>>4], hex[c&0xf])
		case Unsafe(r):
			dst = append(append(dst, p[start:i]...), `\u`...)
			q := strconv.FormatInt(int64(r)|0x10000, 16) // 4 digits after the 1
			dst = append(dst, q[1:]...)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, p[start:]...), nil
}

const hex = "0123456789abcdef"

// Unsafe reports whether r is a character the hub never prints as is
// (Terminal escapes it, Clean makes it a space): a control character (C0,
// DEL, C1), a bidirectional control, or a line or paragraph separator.
// Newline and tab, which are controls too, are the callers' to keep.
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// Raw returns the writer t escapes for: for text the program writes
// itself that must drive the terminal (a progress bar's carriage return).
func (t *TerminalWriter) Raw() io.Writer { return t.w }
