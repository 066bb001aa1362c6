package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []hub.ArchiveCursor{
		{ReceivedAt: time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC), ArchiveID: uuid.Must(uuid.NewV7())},
		{ReceivedAt: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), ArchiveID: uuid.Max},
		{ReceivedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), ArchiveID: uuid.Nil},
		{ReceivedAt: time.Unix(0, 0).UTC(), ArchiveID: uuid.New()},
	} {
		s := ops.FormatCursor(c)
		require.Len(t, s, 32)
		got, err := ops.ParseCursor("before", s)
		require.NoError(t, err, s)
		require.True(t, c.ReceivedAt.Equal(got.ReceivedAt), "%s: %s != %s", s, got.ReceivedAt, c.ReceivedAt)
		require.Equal(t, c.ArchiveID, got.ArchiveID)
	}
	good := ops.FormatCursor(hub.ArchiveCursor{ReceivedAt: time.Now(), ArchiveID: uuid.New()})
	for _, bad := range []string{
		"", "x", good[:31], good + "A", strings.Repeat("=", 32), strings.ToUpper(good[:30]) + "+/",
		good[:31] + "\x00",
		"f_________wAAAAAAAAAAAAAAAAAAAAA", // year 294247: beyond any archive row
		"gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", // before year 1
		"2026-11-30T12:00:00Z",
	} {
		_, err := ops.ParseCursor("before", bad)
		var input *ops.InputError
		require.ErrorAs(t, err, &input, "%q", bad)
		require.Equal(t, "before", input.Field)
		require.True(t, errors.Is(err, ops.ErrInvalid))
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(ops.FormatCursor(hub.ArchiveCursor{ReceivedAt: time.Now(), ArchiveID: uuid.New()}))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("f_________wAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ops.ParseCursor("before", s)
		if err != nil {
			if !errors.Is(err, ops.ErrInvalid) {
				t.Fatalf("%q: %v is not an input error", s, err)
			}
			if len(err.Error()) > 400 { // the bound every operation keeps (TestOperationsRefuseInputsOutOfBounds)
				t.Fatalf("%q: the message echoes the input whole: %d bytes", s, len(err.Error()))
			}
			return
		}
		if y := c.ReceivedAt.Year(); y < 1 || y > 9999 {
			t.Fatalf("%q: year %d accepted", s, y)
		}
		// A cursor that parses is one FormatCursor writes.
		if again := ops.FormatCursor(c); again != s {
			t.Fatalf("%q parsed, but formats as %q", s, again)
		}
	})
}
