package email

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"time"
)

// Sender delivers one email.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// LogAddr is the EMAIL_SMTP_ADDR value that logs emails instead of sending
// them (what `hub dev` uses).
const LogAddr = "log"

// NewSender returns an SMTPSender for addr (host:port), or a LogSender when
// addr is LogAddr.
func NewSender(addr string, logger *slog.Logger) Sender {
	if addr == LogAddr {
		return LogSender{Logger: logger}
	}
	return &SMTPSender{Addr: addr}
}

// LogSender writes each email to the log instead of sending it.
type LogSender struct{ Logger *slog.Logger }

// Send logs m.
func (s LogSender) Send(_ context.Context, m Message) error {
	l := cmp.Or(s.Logger, slog.Default())
	l.Info("email (logged, not sent)", "to", m.To, "subject", m.Subject, "message_id", m.MessageID, "event", m.EventRef, "body", m.Body)
	return nil
}

// SMTPSender sends over SMTP with net/smtp: STARTTLS when the server
// offers it, no authentication (a local relay such as Mailpit, or a
// smarthost that trusts the network).
type SMTPSender struct {
	Addr      string        // host:port
	HelloName string        // EHLO name; default "localhost"
	Timeout   time.Duration // for the whole exchange; default 30s
}

// PermanentError is an SMTP rejection that retrying will not change (a 5xx
// reply): the outbox row is marked failed instead of retried.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Send delivers m to s.Addr.
func (s *SMTPSender) Send(ctx context.Context, m Message) (err error) {
	raw, err := m.Bytes()
	if err != nil {
		return &PermanentError{err}
	}
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return &PermanentError{err}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", s.Addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(s.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		_ = conn.Close()
		return classify(s.Addr, err)
	}
	defer c.Close()
	hello := cmp.Or(s.HelloName, "localhost")
	if err := c.Hello(hello); err != nil {
		return classify(s.Addr, err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return classify(s.Addr, err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return classify(s.Addr, err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return classify(s.Addr, err)
	}
	w, err := c.Data()
	if err != nil {
		return classify(s.Addr, err)
	}
	if _, err := w.Write(raw); err != nil {
		return classify(s.Addr, err)
	}
	// Close ends DATA: the server's reply is its acceptance. A crash after
	// this and before the outbox row is marked sent sends it again.
	if err := w.Close(); err != nil {
		return classify(s.Addr, err)
	}
	_ = c.Quit() // accepted already; a failed QUIT changes nothing
	return nil
}

func classify(addr string, err error) error {
	if te, ok := errors.AsType[*textproto.Error](err); ok && te.Code >= 500 {
		return &PermanentError{fmt.Errorf("smtp %s: %w", addr, err)}
	}
	return fmt.Errorf("smtp %s: %w", addr, err)
}
