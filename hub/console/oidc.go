package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/oauth2"

	"github.com/hookhub/hookhub/hub/store"
)

// OIDCConfig configures OpenID Connect sign-in (the authorization code
// flow with PKCE, state and nonce). The ID token is verified by go-oidc:
// signature through the provider's JWKS, issuer, audience (ClientID) and
// expiry; the nonce here.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; its discovery document is read
	// from Issuer + "/.well-known/openid-configuration". Empty: no OIDC.
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is this console's callback as registered at the
	// provider: https://hub.example.com/console/oidc/callback.
	RedirectURL string
	// Admins and Readers map operators to roles: e-mail addresses
	// ("alice@example.com"), domains ("@example.com") and groups
	// ("group:hookhub-admins"). Admin wins when both match; an operator
	// matching neither is refused.
	Admins, Readers []string
	// GroupsClaim is the ID token claim that lists the operator's groups;
	// default "groups".
	GroupsClaim string
	// HTTPClient talks to the provider; default one with a 10 s timeout.
	HTTPClient *http.Client
	// OnDiscovery, when set, is told each discovery's outcome (a metric).
	OnDiscovery func(ok bool)
}

// OIDC bounds.
const (
	// OIDCLoginTimeout bounds a sign-in from the redirect to the provider
	// to its callback.
	OIDCLoginTimeout = 10 * time.Minute
	// oidcDiscoveryTimeout bounds the discovery request at start;
	// oidcDiscoveryRetry spaces the retries of a failed one (at sign-in).
	oidcDiscoveryTimeout = 5 * time.Second
	oidcDiscoveryRetry   = 30 * time.Second
	// maxNameBytes bounds the operator's name kept with a session.
	maxNameBytes = 254
	oidcCookie   = "hookhub_oidc"
	oidcPath     = "/console/oidc/"
)

func (c OIDCConfig) validate() []error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("console: OIDC.%s %s", field, fmt.Sprintf(format, a...)))
	}
	if c.Issuer == "" {
		if c.ClientID != "" || c.ClientSecret != "" || c.RedirectURL != "" || len(c.Admins) > 0 || len(c.Readers) > 0 {
			bad("Issuer", "is required with the other OIDC settings")
		}
		return errs
	}
	if err := CheckOIDCURL(c.Issuer); err != nil {
		bad("Issuer", "%v", err)
	}
	if c.ClientID == "" {
		bad("ClientID", "is required")
	}
	if err := CheckOIDCRedirectURL(c.RedirectURL); err != nil {
		bad("RedirectURL", "%v", err)
	}
	admins, err := parseRoleRules(c.Admins)
	if err != nil {
		bad("Admins", "%v", err)
	}
	readers, err := parseRoleRules(c.Readers)
	if err != nil {
		bad("Readers", "%v", err)
	}
	if len(admins)+len(readers) == 0 && len(errs) == 0 {
		bad("Admins", "or OIDC.Readers must map someone to a role")
	}
	return errs
}

// CheckRoleRules checks a list of role rules (OIDCConfig.Admins) and
// returns how many it holds.
func CheckRoleRules(list []string) (int, error) {
	rules, err := parseRoleRules(list)
	return len(rules), err
}

// CheckOIDCRedirectURL checks the console's callback URL: https (http
// only to localhost), path /console/oidc/callback.
func CheckOIDCRedirectURL(s string) error {
	if err := CheckOIDCURL(s); err != nil {
		return err
	}
	if u, _ := url.Parse(s); u.Path != "/console/oidc/callback" {
		return fmt.Errorf("must end in /console/oidc/callback, got path %q", u.Path)
	}
	return nil
}

// CheckOIDCURL accepts an https URL, or http to a loopback host (a
// provider run locally, tests).
func CheckOIDCURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("must be an absolute URL (https://...), got %q", s)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"):
	default:
		return fmt.Errorf("must be https (http only to localhost), got %q", s)
	}
	return nil
}

// oidcClient is the console's relying party: the provider found by
// discovery (lazily, again at most every oidcDiscoveryRetry after a
// failure) and the role rules.
type oidcClient struct {
	cfg             OIDCConfig
	now             func() time.Time
	log             *slog.Logger
	admins, readers []roleRule
	mu              sync.Mutex
	provider        *oidc.Provider
	verifier        *oidc.IDTokenVerifier
	lastTry         time.Time
	lastErr         error
}

func newOIDCClient(cfg OIDCConfig, now func() time.Time, log *slog.Logger) *oidcClient {
	cfg.GroupsClaim = cmp.Or(cfg.GroupsClaim, "groups")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	admins, _ := parseRoleRules(cfg.Admins) // validated
	readers, _ := parseRoleRules(cfg.Readers)
	return &oidcClient{cfg: cfg, now: now, log: log, admins: admins, readers: readers}
}

func (o *oidcClient) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.cfg.HTTPClient)
}

// errOIDCUnavailable is the provider's discovery failing.
var errOIDCUnavailable = errors.New("the OpenID Connect provider cannot be reached")

// discover returns the provider, reading its discovery document if it was
// not read yet, at most once every oidcDiscoveryRetry.
func (o *oidcClient) discover(ctx context.Context) (*oidc.Provider, *oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, o.verifier, nil
	}
	if !o.lastTry.IsZero() && time.Since(o.lastTry) < oidcDiscoveryRetry {
		return nil, nil, fmt.Errorf("%w: %w", errOIDCUnavailable, o.lastErr)
	}
	o.lastTry = time.Now()
	ctx, cancel := context.WithTimeout(ctx, oidcDiscoveryTimeout)
	defer cancel()
	p, err := oidc.NewProvider(o.ctx(ctx), o.cfg.Issuer)
	if o.cfg.OnDiscovery != nil {
		o.cfg.OnDiscovery(err == nil)
	}
	if err != nil {
		o.lastErr = err
		o.log.Warn("console: OIDC discovery failed; token sign-in still works, OIDC sign-in is retried", "issuer", o.cfg.Issuer, "err", err)
		return nil, nil, fmt.Errorf("%w: %w", errOIDCUnavailable, err)
	}
	o.provider = p
	o.verifier = p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, Now: o.now})
	o.log.Info("console: OIDC provider discovered", "issuer", o.cfg.Issuer)
	return p, o.verifier, nil
}

func (o *oidcClient) oauth2(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, RedirectURL: o.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile", "groups"}}
}

// safeReturn returns p if it is a path under /console/ of this site, else
// "/console/": the return-to path of a sign-in never leaves the console.
func safeReturn(p string) string {
	const home = "/console/"
	if len(p) > 512 || !strings.HasPrefix(p, home) || strings.ContainsAny(p, "\\\x00") || strings.Contains(p, "//") {
		return home
	}
	for _, r := range p {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return home
		}
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, home) ||
		strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/..") || strings.HasPrefix(u.Path, home+"oidc/") {
		return home
	}
	return p
}

// setOIDCCookie holds the sign-in's state in the browser, bound to its
// callback's path. SameSite Lax: the provider's redirect back is a
// cross-site navigation, which a Strict cookie would not come with.
func (cn *Console) setOIDCCookie(c *fiber.Ctx, value string, maxAge int) {
	ck := &fiber.Cookie{Name: oidcCookie, Value: value, Path: oidcPath, MaxAge: maxAge,
		HTTPOnly: true, Secure: secure(c), SameSite: fiber.CookieSameSiteLaxMode}
	if maxAge < 0 {
		ck.Expires = time.Unix(1, 0)
	}
	c.Cookie(ck)
}

// oidcLogin starts a sign-in: a fresh state, nonce and PKCE verifier
// stored in Postgres (any replica can take the callback), the state also
// in a cookie, and the browser sent to the provider.
func (cn *Console) oidcLogin(c *fiber.Ctx) error {
	if cn.oidc == nil {
		return cn.fail(c, nil, fiber.StatusNotFound, "OpenID Connect sign-in is not configured.")
	}
	addr := remote(c)
	if cn.oidcStarts.blocked(addr) {
		cn.audit(c, nil, "login refused", "reason", "too many OIDC sign-ins started")
		return cn.tooMany(c, "Too many sign-ins: wait a minute.")
	}
	cn.oidcStarts.add(addr)
	p, _, err := cn.oidc.discover(c.UserContext())
	if err != nil {
		return cn.renderLogin(c, fiber.StatusServiceUnavailable, "Single sign-on is unavailable: the identity provider cannot be reached. Try again in a minute, or sign in with a token.")
	}
	state, nonce, verifier := randomHex(32), randomHex(32), oauth2.GenerateVerifier()
	now := cn.cfg.Now()
	l := store.ConsoleLogin{StateHash: hashID(state), Nonce: nonce, Verifier: verifier,
		ReturnTo: safeReturn(c.Query("return_to")), ExpiresAt: now.Add(OIDCLoginTimeout)}
	if err := cn.cfg.Sessions.StartConsoleLogin(c.UserContext(), l, now); err != nil {
		return cn.failErr(c, nil, err)
	}
	cn.setOIDCCookie(c, state, int(OIDCLoginTimeout/time.Second))
	return c.Redirect(cn.oidc.oauth2(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), fiber.StatusSeeOther)
}

// refuseOIDC ends a sign-in that failed, with a message on the sign-in
// page and the reason in the log.
func (cn *Console) refuseOIDC(c *fiber.Ctx, code int, msg, reason string, attrs ...any) error {
	cn.setOIDCCookie(c, "", -1)
	cn.audit(c, nil, "login failed", append([]any{"via", "oidc", "reason", reason}, attrs...)...)
	return cn.renderLogin(c, code, msg)
}

// oidcClaims are the ID token's claims roles are mapped from.
type oidcClaims struct {
	Email         string          `json:"email"`
	EmailVerified json.RawMessage `json:"email_verified"`
}

// verified reads email_verified, a boolean (or, from some providers, the
// string "true").
func verified(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "true" || s == `"true"`
}

// groupsOf reads the groups claim: a list of strings (others ignored), at
// most MaxGroups.
func groupsOf(all map[string]json.RawMessage, claim string) []string {
	var raw []any
	if json.Unmarshal(all[claim], &raw) != nil {
		return nil
	}
	var gs []string
	for _, g := range raw {
		if s, ok := g.(string); ok && len(gs) < MaxGroups {
			gs = append(gs, s)
		}
	}
	return gs
}

// operatorName is the name a session shows and the audit trail records:
// the verified e-mail, else the subject; valid UTF-8 without control
// characters, at most maxNameBytes.
func operatorName(email string, ok bool, subject string) string {
	n := subject
	if ok && email != "" {
		n = email
	}
	n = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(n, ""))
	for len(n) > maxNameBytes {
		_, size := utf8.DecodeLastRuneInString(n)
		n = n[:len(n)-size]
	}
	return n
}

// Bounds of the identity a session keeps: an e-mail longer than
// maxEmailBytes is kept as none (no e-mail or domain rule matches it), and
// groups past maxGroupBytes in all are not kept (no group rule matches
// them). The role at sign-in is mapped from what is kept, so it never
// differs from the role the next request maps.
const (
	maxEmailBytes = 320
	maxGroupBytes = 32 << 10
)

// keptIdentity is the identity an OIDC session keeps, within bounds.
func keptIdentity(issuer, subject, email string, emailVerified bool, groups []string) *store.ConsoleIdentity {
	ci := &store.ConsoleIdentity{Issuer: issuer, Subject: subject, Email: email, EmailVerified: emailVerified}
	if len(email) > maxEmailBytes || !utf8.ValidString(email) {
		ci.Email, ci.EmailVerified = "", false
	}
	n := 0
	for _, g := range groups {
		if n += len(g); n > maxGroupBytes {
			break
		}
		ci.Groups = append(ci.Groups, g)
	}
	return ci
}

// oidcCallback finishes a sign-in: the state checked against the cookie
// and taken (once) from Postgres, the code exchanged with its PKCE
// verifier, the ID token verified (signature, issuer, audience, expiry,
// nonce), and the operator's role mapped from its claims.
func (cn *Console) oidcCallback(c *fiber.Ctx) error {
	if cn.oidc == nil {
		return cn.fail(c, nil, fiber.StatusNotFound, "OpenID Connect sign-in is not configured.")
	}
	if e := c.Query("error"); e != "" {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused by the identity provider.", "provider error", "error", operatorName(e, false, e))
	}
	state := c.Query("state")
	if !equalTokens(state, c.Cookies(oidcCookie)) || len(state) != 64 {
		return cn.refuseOIDC(c, fiber.StatusBadRequest, "Sign-in refused: its state is missing or does not match this browser's. Start again.", "state")
	}
	now := cn.cfg.Now()
	l, ok, err := cn.cfg.Sessions.TakeConsoleLogin(c.UserContext(), hashID(state), now)
	if err != nil {
		return cn.failErr(c, nil, err)
	}
	if !ok {
		return cn.refuseOIDC(c, fiber.StatusBadRequest, "Sign-in refused: it expired or was already used. Start again.", "state expired or used")
	}
	p, verifier, err := cn.oidc.discover(c.UserContext())
	if err != nil {
		return cn.refuseOIDC(c, fiber.StatusServiceUnavailable, "Single sign-on is unavailable: the identity provider cannot be reached.", "discovery", "err", err)
	}
	ctx := cn.oidc.ctx(c.UserContext())
	tok, err := cn.oidc.oauth2(p).Exchange(ctx, c.Query("code"), oauth2.VerifierOption(l.Verifier))
	if err != nil {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused: the identity provider did not accept the sign-in's code.", "code exchange", "err", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused: the identity provider sent no ID token.", "no id token")
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused: the ID token is not valid for this console.", "id token", "err", err)
	}
	if !equalTokens(idt.Nonce, l.Nonce) {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused: the ID token is not valid for this console.", "nonce")
	}
	var cl oidcClaims
	var all map[string]json.RawMessage
	if err := idt.Claims(&cl); err != nil {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused: the ID token's claims cannot be read.", "claims", "err", err)
	}
	if err := idt.Claims(&all); err != nil {
		return cn.refuseOIDC(c, fiber.StatusUnauthorized, "Sign-in refused: the ID token's claims cannot be read.", "claims", "err", err)
	}
	// The role is mapped from the identity as the session keeps it, which
	// every request maps again with the rules then in force.
	ci := keptIdentity(idt.Issuer, idt.Subject, cl.Email, verified(cl.EmailVerified), groupsOf(all, cn.oidc.cfg.GroupsClaim))
	name := operatorName(cl.Email, ci.EmailVerified, idt.Subject)
	role := mapRole(identity{Email: ci.Email, EmailVerified: ci.EmailVerified, Groups: ci.Groups}, cn.oidc.admins, cn.oidc.readers)
	if role == "" {
		return cn.refuseOIDC(c, fiber.StatusForbidden, "Signed in at the identity provider as "+name+", but no console role is given to you: you are not signed in. Ask an administrator to add you.", "no role", "name", name)
	}
	addr := remote(c)
	if cn.signIns.blocked(addr) || cn.roleSignIns.blocked(role) {
		cn.setOIDCCookie(c, "", -1)
		cn.audit(c, nil, "login refused", "role", role, "reason", "too many sign-ins")
		return cn.tooMany(c, "Too many sign-ins: wait a minute.")
	}
	cn.signIns.add(addr)
	cn.roleSignIns.add(role)
	s, err := cn.openSession(c.UserContext(), grant{kind: sessionOIDC, name: name, role: role, identity: ci,
		capKey: sessionOIDC + ":" + idt.Issuer + " " + idt.Subject, max: MaxOperatorSessions})
	if err != nil {
		return cn.failErr(c, nil, err)
	}
	cn.setOIDCCookie(c, "", -1)
	cn.setCookie(c, sessionCookie, s.id)
	cn.audit(c, s, "login", "via", "oidc")
	// A page, not a redirect: the browser came here from the provider's
	// site, and a SameSite=Strict session cookie is not sent along a
	// redirect chain that started there; this page's own navigation to
	// the console is same-site.
	return cn.render(c, fiber.StatusOK, "signedin", view{Title: "Signed in", Session: s, RefreshTo: l.ReturnTo, Page: l.ReturnTo})
}
