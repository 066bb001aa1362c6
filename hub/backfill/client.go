package backfill

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hookhub/hookhub/internal/loopback"
	"github.com/hookhub/hookhub/internal/outbound"
	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/schema"
)

// ErrRedirect: the API answered with a redirect off its configured origin
// (scheme, host and port of the base URL). It is not followed: the
// credentials are never sent there and its answer is never read.
var ErrRedirect = errors.New("provider api redirected off its configured origin")

// maxRedirects bounds the redirects followed within the origin.
const maxRedirects = 10

// clientOr returns c, or the outbound client of the sources: a 30 s
// timeout, the proxy environment honoured, redirects followed (newAPI
// keeps them within the API's origin).
func clientOr(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return outbound.New(outbound.Config{Timeout: 30 * time.Second, ProxyFromEnvironment: true,
		CheckRedirect: func(*http.Request, []*http.Request) error { return nil }})
}

// CheckAPIURL checks a configured API base URL (a source's SettingAPIURL)
// as the sources do, naming it as the caller calls it (variable): an absolute https URL without credentials, query or fragment;
// http only to a loopback host (localhost, 127.0.0.0/8, ::1), for local
// tests, since the key would otherwise cross the network in clear.
func CheckAPIURL(raw, variable string) error {
	_, err := baseURL(raw, "https://api.example.com", variable, "")
	return err
}

// baseURL checks an API base URL (def when empty, see CheckAPIURL) and
// drops a trailing slash, and then the trailing path segment appended when
// the source appends it itself to every path (Stripe's "/v1": a base URL
// copied from Stripe's documentation, https://api.stripe.com/v1, would
// otherwise request /v1/v1/events). A mistake names the variable (and
// never shows a password).
func baseURL(raw, def, variable, appended string) (string, error) {
	raw = cmp.Or(raw, def)
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s must be an absolute https URL without credentials or query, e.g. %s: %w", variable, def, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("%s must be an absolute https URL without credentials or query, e.g. %s, got %q", variable, def, u.Redacted())
	}
	if u.Scheme == "http" && !loopback.Host(u.Hostname()) {
		return "", fmt.Errorf("%s is %q: plain http would send the API key in clear; use https (http is allowed to localhost only, for local tests)", variable, u.Redacted())
	}
	base := strings.TrimRight(raw, "/")
	if appended != "" && strings.HasSuffix(strings.TrimRight(u.Path, "/"), appended) {
		base = strings.TrimRight(strings.TrimSuffix(base, appended), "/")
	}
	return base, nil
}

// origin is a URL's scheme, host and port (the scheme's default when
// absent), lowercased: what a redirect must keep.
func origin(u *url.URL) string {
	port := cmp.Or(u.Port(), map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)])
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

// newAPI returns the client of an API at base (checked by baseURL), with
// a copy of client (nil: clientOr's) that follows redirects within base's
// origin only (ErrRedirect otherwise; then the client's own rule, if any),
// and that hides secret (the credentials auth sets) in every error text;
// keyName names the credentials' setting in errors.
func newAPI(client *http.Client, base, keyName, secret string, auth func(h http.Header)) (*api, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyName, err)
	}
	c := new(http.Client)
	*c = *clientOr(client)
	want, next := origin(u), c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if got := origin(req.URL); got != want {
			return fmt.Errorf("%w: %s answered %d with a redirect to %s, not %s; not followed (the key is sent to %s only)",
				ErrRedirect, via[len(via)-1].URL.Path, req.Response.StatusCode, redact.Answer([]byte(req.URL.Redacted()), 200, secret), want, want)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &api{client: c, base: base, keyName: keyName, secret: secret, auth: auth}, nil
}

// validCursor accepts a cursor an API gave: an id of at most 255 bytes of
// printable UTF-8.
func validCursor(s string) bool {
	return s != "" && len(s) <= 255 && utf8.ValidString(s) && !hasSpaceOrControl(s)
}

// hasSpaceOrControl reports whether s has a space or a control character
// (cursors, tokens).
func hasSpaceOrControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) })
}

// APIConfig configures a source listing a provider's API with a bearer
// key (StripeConfig, PaddleConfig).
type APIConfig struct {
	// BaseURL is the API's base URL (default: the provider's). https
	// only, but for localhost.
	BaseURL string
	// Key is the API key. Sent as a bearer token, never logged.
	Key string
	// PageSize is the events per page (default: the provider's most).
	PageSize int
	// Client sends the requests (default: a client with a 30 s timeout).
	Client *http.Client
	// Now is the clock events' times are judged plausible by (default
	// time.Now).
	Now func() time.Time
	// Names names the settings (SettingAPIKey, SettingAPIURL) in errors.
	Names Names
}

// listing is how a bearer-key API lists its events (Stripe, Paddle): the
// provider's name, the path, a page's query and the reading of an answer.
type listing struct {
	name  string
	path  string
	query func(q url.Values, pageSize int, since, until time.Time, cursor string)
	parse func(data []byte, since, until, now time.Time) (Page, error)
}

// lister is what a source listing a bearer-key API holds: its listing, the
// API's client, the events a page asks for, the clock.
type lister struct {
	listing
	api      *api
	pageSize int
	now      func() time.Time
}

// newSource returns the source of cfg listing as l says (bearerAPI; the
// page size within 1..most, most by default), or bearerAPI's error.
func newSource[S ~struct{ lister }](cfg APIConfig, l listing, what, defaultBase, appended string, most int) (*S, error) {
	a, err := bearerAPI(cfg.Key, cfg.Names, what, cfg.BaseURL, defaultBase, appended, cfg.Client)
	if err != nil {
		return nil, err
	}
	return &S{lister{listing: l, api: a, pageSize: pageSize(cfg.PageSize, most), now: nowOr(cfg.Now)}}, nil
}

// Provider returns the provider's name ("stripe", "paddle").
func (l lister) Provider() string { return l.name }

// List returns the page at cursor of the events in [since, until), as the
// listing's query asks for them and its parse reads the answer.
func (l lister) List(ctx context.Context, since, until time.Time, cursor string) (Page, error) {
	q := url.Values{}
	l.query(q, l.pageSize, since, until, cursor)
	var raw json.RawMessage
	if err := l.api.do(ctx, http.MethodGet, l.path+"?"+q.Encode(), nil, &raw); err != nil {
		return Page{}, fmt.Errorf("%s: list events: %w", l.name, err)
	}
	page, err := l.parse(raw, since, until, l.now())
	if err != nil {
		return Page{}, l.api.scrub(fmt.Errorf("%s: list events: %w", l.name, err))
	}
	return page, nil
}

// bearerAPI returns the client of an API authenticated by a bearer key
// (Stripe, Paddle): the key (SettingAPIKey) is required (its name, from
// names, and what it must be are said when empty), the base URL
// (SettingAPIURL) checked by baseURL (appended: see there).
func bearerAPI(key string, names Names, what, rawBase, defaultBase, appended string, client *http.Client) (*api, error) {
	keyName := names.of(SettingAPIKey)
	key = strings.TrimSpace(key)
	switch {
	case key == "":
		return nil, fmt.Errorf("%s is empty: set it to %s", keyName, what)
	case hasSpaceOrControl(key):
		return nil, fmt.Errorf("%s contains spaces or control characters", keyName)
	}
	base, err := baseURL(rawBase, defaultBase, names.of(SettingAPIURL), appended)
	if err != nil {
		return nil, err
	}
	return newAPI(client, base, keyName, key, func(h http.Header) { h.Set("Authorization", "Bearer "+key) })
}

// plausible returns t when it is a plausible time for an event the API
// lists at now, zero otherwise: the rule the webhook path applies
// (schema.PlausibleOccurredAt, provider.VerifyDelivery), so that an event
// with an implausible time is taken, without its time, as its webhook
// would be, rather than placed outside every window.
func plausible(t, now time.Time) time.Time {
	if t.IsZero() || schema.PlausibleOccurredAt(t, now) {
		return t
	}
	return time.Time{}
}

// nowOr returns now, or time.Now when it is nil.
func nowOr(now func() time.Time) func() time.Time {
	if now != nil {
		return now
	}
	return time.Now
}

// pageSize is n within 1..most, most when n is out of it.
func pageSize(n, most int) int {
	if n <= 0 || n > most {
		return most
	}
	return n
}
