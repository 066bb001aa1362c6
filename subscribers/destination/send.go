package destination

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hookhub/hookhub/internal/outbound"
	"github.com/hookhub/hookhub/internal/redact"
)

// Limits of one attempt.
const (
	DefaultMaxBody         = 64 << 10 // bytes of a response body read
	MaxResponseSnippet     = 1 << 10  // bytes of it kept in Result.Response
	MaxResponseHeaderBytes = outbound.MaxHeaderBytes
	MaxRetryAfter          = 24 * time.Hour
)

// ErrTimeout is wrapped by Result.Err when the attempt's Timeout ended it.
var ErrTimeout = errors.New("attempt timed out")

// ClientConfig configures a Client. Zero fields take defaults.
type ClientConfig struct {
	// Timeout bounds a whole attempt: connecting, TLS, sending, the
	// response headers and reading the body. Default DefaultTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds the TCP connect, and the TLS handshake on its
	// own. Default DefaultConnectTimeout, at most Timeout.
	ConnectTimeout time.Duration
	// RootCAs verifies servers; nil means the system roots.
	RootCAs *x509.CertPool
	// MaxBody is how much of a response body is read (default
	// DefaultMaxBody); a longer body is cut and its connection closed.
	MaxBody int64
	// MaxConns is how many idle keep-alive connections are kept: the
	// destination's concurrency. Default DefaultConcurrency.
	MaxConns int
	// Redact hides the destination's credentials in Result.Response and
	// Result.Err (Destination.Redactor); nil hides what redact.Text and
	// the redact.Redactor rules hide.
	Redact *redact.Redactor
	// AllowLinkLocal lets the client connect to link-local and cloud
	// metadata addresses (Forbidden), refused otherwise at connect time.
	AllowLinkLocal bool
}

// Client POSTs to one destination. It is safe for concurrent use.
type Client struct {
	hc      *http.Client
	timeout time.Duration
	redact  *redact.Redactor
}

// NewClient returns a Client with its own connection pool. It connects
// directly: HTTP_PROXY, HTTPS_PROXY and NO_PROXY are ignored, so that a
// proxy meant for the process's other traffic never sees signed events.
// TLS is verified (TLS 1.2 at least) against c.RootCAs. Redirects are not
// followed: a 3xx is the answer (Result.Status), and not a delivery.
// Responses are not decompressed (no Accept-Encoding is sent).
func NewClient(c ClientConfig) *Client {
	c.Timeout = cmp.Or(max(c.Timeout, 0), DefaultTimeout)
	c.ConnectTimeout = min(cmp.Or(max(c.ConnectTimeout, 0), DefaultConnectTimeout), c.Timeout)
	c.MaxBody, c.MaxConns = cmp.Or(max(c.MaxBody, 0), DefaultMaxBody), cmp.Or(max(c.MaxConns, 0), DefaultConcurrency)
	return &Client{
		hc: outbound.New(outbound.Config{ConnectTimeout: c.ConnectTimeout, RootCAs: c.RootCAs, MaxConns: c.MaxConns,
			MaxBody: c.MaxBody, Control: dialControl(c.AllowLinkLocal), DisableCompression: true}),
		timeout: c.Timeout,
		redact:  c.Redact,
	}
}

// Close closes the idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Result is the outcome of one attempt.
type Result struct {
	// Status is the HTTP status, or 0 when no answer came.
	Status int
	// Latency runs from the start of the attempt to the end of the
	// response body (or of the read MaxBody bytes, or the error).
	Latency time.Duration
	// Response is the start of the response body, printable and with the
	// destination's credentials hidden (redact.Redactor.Answer), at most
	// MaxResponseSnippet bytes.
	Response string
	// RetryAfter is the server's Retry-After (delta-seconds or HTTP-date)
	// on a 429 or 503, within [0, MaxRetryAfter]; 0 when absent or
	// invalid.
	RetryAfter time.Duration
	// Err is why no answer came (Status 0): the connection, TLS, or the
	// Timeout (wrapping ErrTimeout). With a Status it says that the body
	// could not be read to its end; the status stands. It never contains
	// the URL (its query may hold a credential), and its text is
	// redacted as Response is.
	Err error
}

// OK reports a 2xx answer.
func (r Result) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Gone reports a 410 answer: the receiver asks not to be sent anything.
func (r Result) Gone() bool { return r.Status == http.StatusGone }

// Class is the metric label of the result: "2xx", "3xx", "4xx", "5xx", or
// "error" when there was no answer (or a status outside 200-599).
func (r Result) Class() string {
	switch {
	case r.Status >= 200 && r.Status <= 599:
		return strconv.Itoa(r.Status/100) + "xx"
	}
	return "error"
}

// Do POSTs body with the headers h to url, within the Client's Timeout
// (and ctx). It never returns before the response body has been read (up
// to MaxBody bytes) or abandoned.
func (c *Client) Do(ctx context.Context, url string, h http.Header, body []byte) Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Latency: time.Since(start), Err: c.redact.Error(fmt.Errorf("build request: %w", stripURL(err)))}
	}
	if h != nil {
		req.Header = h.Clone()
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return Result{Latency: time.Since(start), Err: c.redact.Error(attemptError(ctx, "post", err))}
	}
	defer resp.Body.Close() // unread bytes left: the connection is closed, not reused
	r := Result{Status: resp.StatusCode}
	buf, err := io.ReadAll(resp.Body) // cut at MaxBody by the client
	r.Latency = time.Since(start)
	if err != nil {
		r.Err = c.redact.Error(attemptError(ctx, "read response body", err))
	}
	// Redacted before the cut, so that no part of a secret survives it.
	r.Response = c.redact.Answer(buf[:min(len(buf), 4*MaxResponseSnippet)], MaxResponseSnippet-len("…"))
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		if d, ok := outbound.RetryAfter(resp.Header.Get("Retry-After"), time.Now(), MaxRetryAfter); ok {
			r.RetryAfter = d
		}
	}
	return r
}

// attemptError words err without the URL, wrapping ErrTimeout when the
// attempt's deadline ended it.
func attemptError(ctx context.Context, what string, err error) error {
	err = stripURL(err)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %w", what, ErrTimeout, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// stripURL unwraps a *url.Error, whose text holds the URL.
func stripURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != nil {
		return ue.Err
	}
	return err
}
