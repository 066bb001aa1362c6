package email_test

import (
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// smtpServer is a minimal SMTP server on 127.0.0.1:0, the peer the real
// net/smtp client talks to in these tests: EHLO/HELO, MAIL, RCPT, DATA,
// RSET, NOOP, QUIT. Replies to DATA can be scripted (reject) to test
// retries.
type smtpServer struct {
	ln net.Listener

	mu       sync.Mutex
	received []received
	// reject holds the replies to give to the next DATA commands, in
	// order, instead of accepting the message (e.g. "451 try later").
	reject []string
}

type received struct {
	From string
	To   []string
	Msg  *mail.Message
	Raw  string
}

func newSMTPServer(t *testing.T) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &smtpServer{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(conn) })
		}
	})
	return s
}

func (s *smtpServer) Addr() string { return s.ln.Addr().String() }

func (s *smtpServer) rejectNext(replies ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject = append(s.reject, replies...)
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.received...)
}

func (s *smtpServer) serve(conn net.Conn) {
	defer conn.Close()
	tp := textproto.NewConn(conn)
	reply := func(format string, args ...any) bool { return tp.PrintfLine(format, args...) == nil }
	if !reply("220 127.0.0.1 test SMTP ready") {
		return
	}
	var from string
	var to []string
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			if !reply("250-127.0.0.1 hello %s", arg) || !reply("250 8BITMIME") {
				return
			}
		case "HELO", "NOOP":
			reply("250 ok")
		case "RSET":
			from, to = "", nil
			reply("250 ok")
		case "MAIL":
			from = strings.Trim(strings.TrimPrefix(strings.Fields(arg)[0], "FROM:"), "<>")
			reply("250 ok")
		case "RCPT":
			to = append(to, strings.Trim(strings.TrimPrefix(arg, "TO:"), "<>"))
			reply("250 ok")
		case "DATA":
			if !reply("354 end with <CRLF>.<CRLF>") {
				return
			}
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			s.mu.Lock()
			if len(s.reject) > 0 {
				r := s.reject[0]
				s.reject = s.reject[1:]
				s.mu.Unlock()
				reply("%s", r)
				continue
			}
			msg, err := mail.ReadMessage(strings.NewReader(string(data)))
			if err != nil {
				s.mu.Unlock()
				reply("554 unparsable message: %v", err)
				continue
			}
			s.received = append(s.received, received{From: from, To: to, Msg: msg, Raw: string(data)})
			s.mu.Unlock()
			reply("250 queued")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}
