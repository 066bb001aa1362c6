// Package outbound holds what the hub and the subscribers share when they
// call another party's HTTP server: one client constructor and one
// reading of Retry-After. The backfill's provider API client and the
// destinations' client are built with it.
package outbound

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxHeaderBytes bounds the response headers an outbound client reads.
const MaxHeaderBytes = 64 << 10

// Config configures a client (New). Zero fields take defaults.
type Config struct {
	Timeout        time.Duration  // a whole request; 0: none (the caller's context bounds it)
	ConnectTimeout time.Duration  // the TCP connect, and the TLS handshake on its own (default 10 s)
	RootCAs        *x509.CertPool // nil: the system roots; TLS 1.2 at least
	// MaxConns is how many idle connections are kept, per host and in all
	// (default 100 in all, 2 per host).
	MaxConns int
	// MaxBody cuts every answer's body after that many bytes (0: not cut);
	// what is left unread closes the connection.
	MaxBody int64
	// ProxyFromEnvironment uses HTTP_PROXY, HTTPS_PROXY and NO_PROXY;
	// otherwise the client connects directly.
	ProxyFromEnvironment bool
	// Control is the dialer's hook, to refuse addresses at connect time.
	Control func(network, address string, c syscall.RawConn) error
	// CheckRedirect is the redirect policy (nil: a 3xx is the answer).
	CheckRedirect func(req *http.Request, via []*http.Request) error
	// DisableCompression sends no Accept-Encoding: the bytes are the server's.
	DisableCompression bool
}

// New returns a client with its own connection pool, as c says.
// Client.CloseIdleConnections closes the pool's idle connections.
func New(c Config) *http.Client {
	if c.CheckRedirect == nil {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	c.ConnectTimeout = cmp.Or(max(c.ConnectTimeout, 0), 10*time.Second)
	dialer := &net.Dialer{Timeout: c.ConnectTimeout, KeepAlive: 30 * time.Second, Control: c.Control}
	tr := &http.Transport{
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    c.ConnectTimeout,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		MaxIdleConns:           cmp.Or(c.MaxConns, 100),
		MaxIdleConnsPerHost:    c.MaxConns,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     c.DisableCompression,
		ForceAttemptHTTP2:      true,
	}
	if c.ProxyFromEnvironment {
		tr.Proxy = http.ProxyFromEnvironment
	}
	var rt http.RoundTripper = tr
	if c.MaxBody > 0 {
		rt = cut{tr, c.MaxBody}
	}
	return &http.Client{Transport: rt, Timeout: c.Timeout, CheckRedirect: c.CheckRedirect}
}

// cut is a transport whose answers' bodies end after n bytes.
type cut struct {
	*http.Transport
	n int64
}

func (t cut) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Transport.RoundTrip(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, t.n), resp.Body}
	}
	return resp, err
}

// TransportOf returns the transport under a client New returned (nil for
// another client's), for checks.
func TransportOf(c *http.Client) *http.Transport {
	if t, ok := c.Transport.(cut); ok {
		return t.Transport
	}
	t, _ := c.Transport.(*http.Transport)
	return t
}

// RetryAfter reads a Retry-After value (RFC 9110, 10.2.3): delta-seconds
// or an HTTP-date, as a delay from now within [0, most] (longer ones,
// digits beyond any range included, are most; past dates are 0). ok is
// false for an empty or invalid value, or one over 64 bytes.
func RetryAfter(v string, now time.Time, most time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 64 {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		if strings.Trim(v, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(most/time.Second) { // out of range: many digits
			return most, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), most), true
}
