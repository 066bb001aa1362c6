package email_test

import (
	"bytes"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/email"
)

func TestMessageID(t *testing.T) {
	cases := []struct {
		provider, eventID, kind, want string
	}{
		{"paddle", "evt_01hv8x", "cancellation", "<paddle.evt_01hv8x.cancellation@hookhub>"},
		{"clerk", "msg_2abc", "welcome", "<clerk.msg_2abc.welcome@hookhub>"},
		{"paddle", "a.b", "welcome", "<paddle.a=2Eb.welcome@hookhub>"},
		{"paddle", "a=2Eb", "welcome", "<paddle.a=3D2Eb.welcome@hookhub>"},
		{"paddle", "x>y@z <w>", "welcome", "<paddle.x=3Ey=40z=20=3Cw=3E.welcome@hookhub>"},
	}
	for _, c := range cases {
		got := email.MessageID(c.provider, c.eventID, c.kind)
		require.Equal(t, c.want, got)
		_, err := mail.ParseAddress("x " + got) // a msg-id is addr-spec shaped
		require.NoError(t, err, got)
	}
}

func TestParseRecipient(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"ada@example.com", "ada@example.com", true},
		{" ada@example.com ", "ada@example.com", true},
		{"Ada <ada@example.com>", "", false},
		{"ada@example.com\r\nBcc: x@example.com", "", false},
		{"a@example.com, b@example.com", "", false},
		{"not an address", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, err := email.ParseRecipient(c.in)
		if !c.ok {
			require.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got)
	}
}

func TestMessageBytes(t *testing.T) {
	m := email.Message{
		MessageID: "<paddle.evt_1.cancellation@hookhub>",
		EventRef:  "paddle:evt_1\r\nBcc: evil@example.com",
		From:      "Hookhub <noreply@hookhub.test>",
		To:        "ada@example.com",
		Subject:   "Déjà vu: your subscription",
		Body:      "Hi Zoë,\nline two\n.\nend",
		Date:      time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	}
	raw, err := m.Bytes()
	require.NoError(t, err)
	require.NotContains(t, string(raw), "\nBcc:", "no header injection")
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\r\n"), "\r\n") {
		require.LessOrEqual(t, len(line), 998)
		require.NotContains(t, line, "\n")
	}
	parsed, err := mail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, "<paddle.evt_1.cancellation@hookhub>", parsed.Header.Get("Message-Id"))
	require.Equal(t, "paddle:evt_1  Bcc: evil@example.com", parsed.Header.Get(email.HeaderEventID))
	require.Equal(t, "Fri, 01 May 2026 12:00:00 +0000", parsed.Header.Get("Date"))
	subject, err := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Déjà vu: your subscription", subject)
	b, err := io.ReadAll(quotedprintable.NewReader(parsed.Body))
	require.NoError(t, err)
	require.Equal(t, "Hi Zoë,\r\nline two\r\n.\r\nend\r\n", string(b))

	m.To = "Ada <ada@example.com>"
	_, err = m.Bytes()
	require.Error(t, err)
}

// syncWriter serialises writes to w (a logger in another goroutine) and
// reads of what was written.
type syncWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
