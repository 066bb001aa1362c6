package email_test

import (
	"bytes"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/email"
)

// Addresses, names and event ids come from provider payloads: whatever
// they hold, a rendered message has exactly its own headers (no injected
// Bcc or second To) and parses as an RFC 5322 message.
func FuzzMessage(f *testing.F) {
	f.Add("ada@example.com", "Welcome!", "Hi Ada,\n", "paddle:evt_1")
	f.Add("ada@example.com\r\nBcc: x@example.com", "s", "b", "p:e")
	f.Add("\"a\r\nb\"@example.com", "Subject\r\nBcc: x@example.com", ".\r\n.\r\n", "p:e\nX-Evil: 1")
	f.Add("a@[127.0.0.1]", "Déjà vu", strings.Repeat("x", 2000), "clerk:msg_2")
	f.Fuzz(func(t *testing.T, to, subject, body, ref string) {
		addr, err := email.ParseRecipient(to)
		if err != nil {
			return
		}
		m := email.Message{
			MessageID: "<p.e.k@hookhub>", EventRef: ref, From: "Hookhub <noreply@hookhub.test>",
			To: addr, Subject: subject, Body: body, Date: time.Unix(0, 0),
		}
		raw, err := m.Bytes()
		if err != nil {
			return
		}
		head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
		lines := strings.Split(string(head), "\r\n")
		if len(lines) != 9 {
			t.Fatalf("%d header lines, want 9:\n%s", len(lines), head)
		}
		if bytes.Contains(head, []byte("\n\n")) || bytes.ContainsAny(bytes.ReplaceAll(head, []byte("\r\n"), nil), "\r\n") {
			t.Fatalf("bare line break in the header:\n%q", head)
		}
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("does not parse: %v\n%q", err, raw)
		}
		got, err := msg.Header.AddressList("To")
		if err != nil || len(got) != 1 || got[0].Address != addr {
			t.Fatalf("To = %v (%v), want %q", got, err, addr)
		}
	})
}

var msgIDRE = regexp.MustCompile(`^<([A-Za-z0-9_=-]+)\.([A-Za-z0-9_=-]+)\.([A-Za-z0-9_=-]+)@hookhub>$`)

// Message-IDs are always well-formed and encode the event without loss,
// so two events never share one.
func FuzzMessageID(f *testing.F) {
	f.Add("paddle", "evt_01hv8x", "welcome")
	f.Add("clerk", "a.b=c <d>@e\r\n", "cancellation")
	f.Add("p", "", "k")
	f.Fuzz(func(t *testing.T, provider, eventID, kind string) {
		id := email.MessageID(provider, eventID, kind)
		m := msgIDRE.FindStringSubmatch(id)
		if m == nil && provider != "" && eventID != "" && kind != "" {
			t.Fatalf("malformed Message-ID %q", id)
		}
		if m == nil {
			return
		}
		for i, want := range []string{provider, eventID, kind} {
			if got := decodeAtom(t, m[i+1]); got != want {
				t.Fatalf("part %d of %q decodes to %q, want %q", i, id, got, want)
			}
		}
	})
}

func decodeAtom(t *testing.T, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
