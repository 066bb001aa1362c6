package email

import (
	"bytes"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
)

// Message is one email to send.
type Message struct {
	MessageID string // with angle brackets, e.g. <paddle.evt_1.cancellation@hookhub>
	EventRef  string // "<provider>:<event_id>", sent as X-Hub-Event-Id
	From      string // RFC 5322 address, e.g. "hookhub <noreply@example.com>"
	To        string // bare address
	Subject   string
	Body      string // plain text
	Date      time.Time
}

// HeaderEventID is the header that names the event an email is for.
const HeaderEventID = "X-Hub-Event-Id"

// MessageID returns the deterministic Message-ID of the email of kind for
// an event: <provider.event_id.kind@hookhub>. Bytes of the event id outside
// [A-Za-z0-9_-] are written =XX (hex), so distinct events never share an
// id and the result is always a valid msg-id.
func MessageID(provider, eventID, kind string) string {
	return "<" + idAtom(provider) + "." + idAtom(eventID) + "." + idAtom(kind) + "@hookhub>"
}

func idAtom(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// ParseRecipient checks an address taken from an event payload: a single
// bare address (no display name, no control characters). It returns the
// address.
func ParseRecipient(s string) (string, error) {
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("address contains a line break")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", err
	}
	if a.Address != strings.TrimSpace(s) {
		return "", fmt.Errorf("%q is not a bare address", s)
	}
	return a.Address, nil
}

// Bytes renders m as an RFC 5322 message: headers, then the body in
// quoted-printable UTF-8, with CRLF line ends.
func (m Message) Bytes() ([]byte, error) {
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return nil, fmt.Errorf("from %q: %w", m.From, err)
	}
	to, err := ParseRecipient(m.To)
	if err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	var b bytes.Buffer
	h := func(name, value string) {
		// Values never carry line breaks: they would start new headers.
		value = strings.NewReplacer("\r", " ", "\n", " ").Replace(value)
		fmt.Fprintf(&b, "%s: %s\r\n", name, value)
	}
	h("From", from.String())
	h("To", (&mail.Address{Address: to}).String())
	h("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	h("Date", m.Date.UTC().Format(time.RFC1123Z))
	h("Message-ID", m.MessageID)
	h(HeaderEventID, m.EventRef)
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	body := strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := qp.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n")
	}
	return b.Bytes(), nil
}
