package backfill

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/internal/buildinfo"
	"github.com/hookhub/hookhub/internal/outbound"
	"github.com/hookhub/hookhub/internal/redact"
)

// maxAPIBody bounds a provider API answer read into memory.
const maxAPIBody = 32 << 20

// maxErrorBody bounds an API's error answer read into memory (only its
// start is shown: maxSnippet).
const maxErrorBody = 64 << 10

// maxSnippet bounds what of an API's error answer an error shows.
const maxSnippet = 300

// api is a provider API's HTTP client: one base URL, one way to
// authenticate, 429 and 5xx retried with Retry-After honoured, and the
// source's own rate-limit answers (limited) retried as it says.
type api struct {
	client  *http.Client
	base    string              // e.g. https://api.stripe.com (no trailing slash)
	auth    func(h http.Header) // sets the credentials; never logged
	secret  string              // the credentials auth sends, hidden in every error text
	keyName string              // the name of the credentials' setting, for errors
	// retries is how many times a 429 or 5xx is retried (default 5);
	// maxWait caps one Retry-After (default 60s).
	retries int
	maxWait time.Duration
	// limited is the source's retry rule (nil: none), asked about every
	// answer that is not a 2xx before the client's own rules: when it
	// says the answer is a rate limit (GitHub's may be 403s), the request
	// is retried after wait (capped by maxWait) like a 429, and is
	// ErrRateLimited once the retries run out.
	limited func(a answer, body []byte) (wait time.Duration, ok bool)
	// sleep waits d or until ctx is done (tests may shorten it).
	sleep func(ctx context.Context, d time.Duration) error
	// onWait is told about each rate-limit wait (metrics, progress).
	onWait func(d time.Duration)
}

// answer is what the client saw of the last answer to a request: its
// status and headers (GitHub pages in the Link header).
type answer struct {
	status int
	header http.Header
}

// do sends method path (path includes the query) with body (nil for none)
// and decodes a 2xx JSON answer into out (nil to discard). It retries what
// the source's rule (limited) says is a rate limit, 429 and 5xx, waiting
// as the rule says, else Retry-After (seconds or an HTTP date) or an
// exponential backoff from 1s; 401/403 are ErrUnauthorized naming keyName;
// other 4xx carry the start of the API's answer (snippet). A redirect off
// the base URL's origin is ErrRedirect, not retried. Every error's text is
// passed through scrub: the API's words never show the credentials.
func (a *api) do(ctx context.Context, method, path string, body any, out any) error {
	_, err := a.call(ctx, method, path, body, out)
	return err
}

// call is do, returning what it saw of the last answer as well (zero when
// none came).
func (a *api) call(ctx context.Context, method, path string, body any, out any) (answer, error) {
	var last answer
	err := a.send(ctx, method, path, body, out, &last)
	return last, a.scrub(err)
}

func (a *api) send(ctx context.Context, method, path string, body any, out any, last *answer) error {
	retries, maxWait := cmp.Or(a.retries, 5), cmp.Or(a.maxWait, time.Minute)
	sleep := a.sleep
	if sleep == nil {
		sleep = backoff.Sleep
	}
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	delays := backoff.New(time.Second, maxWait)
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(payload))
		if err != nil {
			return fmt.Errorf("request %s %s: %w", method, path, err)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", buildinfo.UserAgent("backfill"))
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		a.auth(req.Header)
		resp, err := a.client.Do(req)
		if err != nil {
			if ctx.Err() != nil || attempt >= retries || errors.Is(err, ErrRedirect) {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
			if err := sleep(ctx, delays.Next()); err != nil {
				return err
			}
			continue
		}
		limit := int64(maxErrorBody)
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			limit = maxAPIBody + 1
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
		resp.Body.Close()
		*last = answer{status: resp.StatusCode, header: resp.Header}
		if err != nil {
			return fmt.Errorf("%s %s: read answer: %w", method, path, err)
		}
		ruled, limited := time.Duration(0), false
		if a.limited != nil && (resp.StatusCode < 200 || resp.StatusCode >= 300) {
			ruled, limited = a.limited(*last, data)
		}
		switch code := resp.StatusCode; {
		case code >= 200 && code < 300:
			if len(data) > maxAPIBody {
				return fmt.Errorf("%s %s: answer larger than %d bytes", method, path, maxAPIBody)
			}
			if out == nil || len(data) == 0 {
				return nil
			}
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
			}
			return nil
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			if !limited {
				return fmt.Errorf("%w: %s %s answered %d (check %s): %s", ErrUnauthorized, method, path, code, a.keyName, a.snippet(data))
			}
			fallthrough
		case limited || code == http.StatusTooManyRequests || code >= 500:
			if attempt >= retries {
				if limited || code == http.StatusTooManyRequests {
					return fmt.Errorf("%w: %s %s still %d after %d retries", ErrRateLimited, method, path, code, retries)
				}
				return fmt.Errorf("%s %s answered %d after %d retries: %s", method, path, code, retries, a.snippet(data))
			}
			wait := delays.Next()
			if limited {
				wait = ruled
			} else if ra, ok := outbound.RetryAfter(resp.Header.Get("Retry-After"), time.Now(), maxWait); ok {
				wait = ra
			}
			wait = min(wait, maxWait)
			if a.onWait != nil {
				a.onWait(wait)
			}
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s %s answered %d: %s", method, path, code, a.snippet(data))
		}
	}
}

// snippet is the start of an API's answer for an error message: at most
// maxSnippet bytes of printable text, the credentials hidden
// (redact.Answer). A gateway that echoes the request's headers in its
// error page shows "Bearer [redacted]".
func (a *api) snippet(b []byte) string {
	return redact.Answer(b, maxSnippet, a.secret)
}

// snippet is snippet without a secret to hide: for text an API answered
// that is shown outside a request's error.
func snippet(b []byte) string {
	return redact.Answer(b, maxSnippet)
}

// scrub returns err with its text made printable and the credentials
// hidden (redact), or err itself when there was nothing to change. The
// scrubbed error still matches what err matched (errors.Is), but does not
// unwrap to err's text.
func (a *api) scrub(err error) error {
	if err == nil {
		return nil
	}
	return redact.Hide(err, redact.Answer([]byte(err.Error()), maxErrorText, a.secret))
}

// maxErrorText bounds an error's text.
const maxErrorText = 4 << 10
