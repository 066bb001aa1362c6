package ops

import (
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/google/uuid"

	"github.com/hookhub/hookhub/hub"
)

// A listing's cursor is opaque text naming the position right after a
// listed row: its received time (microseconds, as Postgres keeps it) and
// archive id, in URL-safe base64, so it travels in a query string and a
// shell argument as it is.
const (
	cursorBytes = 8 + 16
	cursorLen   = (cursorBytes*8 + 5) / 6 // base64 without padding: 32
)

// FormatCursor returns the cursor of position c.
func FormatCursor(c hub.ArchiveCursor) string {
	var b [cursorBytes]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.ReceivedAt.UnixMicro()))
	copy(b[8:], c.ArchiveID[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ParseCursor reads a cursor given as field (an operator's input).
func ParseCursor(field, s string) (hub.ArchiveCursor, error) {
	if len(s) != cursorLen {
		return hub.ArchiveCursor{}, inputErr(field, "%s is not a cursor (pass the cursor of the last row listed)", quote(s))
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != cursorBytes {
		return hub.ArchiveCursor{}, inputErr(field, "%s is not a cursor (pass the cursor of the last row listed)", quote(s))
	}
	c := hub.ArchiveCursor{ReceivedAt: time.UnixMicro(int64(binary.BigEndian.Uint64(b[:8]))).UTC(), ArchiveID: uuid.UUID(b[8:])}
	if y := c.ReceivedAt.Year(); c.IsZero() || y < 1 || y > 9999 { // beyond: no archive row, and Postgres refuses the time
		return hub.ArchiveCursor{}, inputErr(field, "%s is not a cursor (pass the cursor of the last row listed)", quote(s))
	}
	return c, nil
}
