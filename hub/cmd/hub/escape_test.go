package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

// What the CLI prints of archived data cannot drive the terminal: a
// replayed signature header's OSC and CSI sequences, a payload's C1 and
// bidi controls, an error's CR are printed escaped, in every command's
// text and JSON output, and the JSON still decodes to the archived text.
func TestCLIEscapesArchivedText(t *testing.T) {
	pool := dbEnv(t, "nats://127.0.0.1:1") // nothing there: these commands work without NATS
	sig := "t=1,v1=\x1b]0;pwned\x07\x1b[2J\x1b[H\rok\b\u009b31m\u202e"
	body := "{\"note\":\"\u009b2J \u202eevil \u2066x\",\"n\":1}"
	_, err := store.New(pool).Ingest(context.Background(), []hub.Delivery{
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "stripe", EventID: "evt_esc", EventType: "x.y", Body: []byte(body), ReceivedAt: time.Now(), Signature: sig},
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "stripe", EventID: "evt_esc", EventType: "x.y", Body: []byte(body), ReceivedAt: time.Now(), Signature: sig},
	})
	require.NoError(t, err)

	for _, args := range [][]string{
		{"events", "show", "stripe:evt_esc"},
		{"events", "list"},
		{"events", "list", "--status", "SKIPPED"},
		{"events", "show", "stripe:ev\x1b]0;t\x07"},
	} {
		_, stdout, stderr := runCmd(t, args...)
		requirePrintable(t, stdout)
		requirePrintable(t, stderr)
		if args[1] == "show" && args[2] == "stripe:evt_esc" {
			require.Contains(t, stdout, `\x1b]0;pwned\x07`)
			require.Contains(t, stdout, `\u202eevil`)
		}
	}
	code, stdout, stderr := runCmd(t, "events", "show", "--json", "stripe:evt_esc")
	require.Equal(t, 0, code, stderr)
	requirePrintable(t, stdout)
	var d struct {
		Deliveries []struct {
			Signature string `json:"signature"`
		} `json:"deliveries"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	require.NotEmpty(t, d.Deliveries)
	require.Equal(t, sig, d.Deliveries[0].Signature)
}

// requirePrintable fails when s holds a character that drives a
// terminal or hides text: a control (newline and tab aside), a bidi
// control, a line separator, invalid UTF-8.
func requirePrintable(t *testing.T, s string) {
	t.Helper()
	require.True(t, utf8.ValidString(s), "%q", s)
	for i, r := range s {
		if r != '\n' && r != '\t' {
			require.False(t, unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029', "%U at %d in %q", r, i, s)
		}
	}
}
