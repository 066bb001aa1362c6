package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/store"
)

// Session bounds: a session ends SessionLifetime after sign-in, or after
// SessionIdle without a request, whichever comes first. Constants, not
// settings: an operator signs in again.
const (
	SessionLifetime = 8 * time.Hour
	SessionIdle     = time.Hour
	// MaxSessions bounds the sessions of one role (one token): each role
	// has its own pool, and past it the oldest session of that role is
	// ended, never another role's. The read-only token cannot sign the
	// admin out by signing in many times.
	MaxSessions = 1000
	// MaxFailedSignIns is how many wrong tokens one remote address may
	// send in a minute; past it every sign-in from that address is
	// answered 429 until the minute is over. A form refused before its
	// token is checked (cross-site, without its CSRF token) does not count.
	MaxFailedSignIns = 10
	// MaxSignInsPerAddress is how many successful sign-ins one remote
	// address may make in a minute; past it the sign-in is answered 429
	// and opens no session.
	MaxSignInsPerAddress = 30
	// MaxSignInsPerRole is how many successful sign-ins one role (one
	// token) may make in a minute from all addresses together; past it
	// that role's sign-ins are answered 429. Each role has its own count,
	// so a flood of read-only sign-ins does not keep the admin out.
	MaxSignInsPerRole = 120
)

// Roles.
const (
	RoleAdmin    = "admin"
	RoleReadOnly = "read-only"
)

// Cookie names.
const (
	sessionCookie = "hookhub_session"
	loginCookie   = "hookhub_login"
	cookiePath    = "/console/"
)

// MaxFormBytes bounds a console form's body, its sign-in form included:
// its forms are a few hundred bytes. The admin listener (hub/admin) reads
// a body for the console, before any session is known, within this same
// bound, so the two cannot disagree.
const MaxFormBytes = 16 << 10

// session is a signed-in browser, as its row in Postgres (hub/store's
// console_sessions) holds it: every replica of the hub sees the same
// sessions, and they survive a restart.
type session struct {
	id   string // the cookie's value; only its SHA-256 is stored
	csrf string
	// role is the role the session's credential grants on this replica at
	// this request (credentialRole), not the one it signed in with.
	role string
	// kind is sessionToken or sessionOIDC; name who signed in: "token
	// 1a2b3c4d" (the token's fingerprint), or the operator's e-mail (or
	// subject).
	kind, name string
	ref        string // its public name (the Sessions page, revocation)
}

// Session kinds.
const (
	sessionToken = "token"
	sessionOIDC  = "oidc"
)

// tokenFP is the fingerprint of a token session's token, or "".
func (s *session) tokenFP() string {
	if s.kind != sessionToken {
		return ""
	}
	return strings.TrimPrefix(s.name, "token ")
}

// Role is "admin" or "read-only".
func (s *session) Role() string { return s.role }

// Name is who signed in: the operator's e-mail (or subject), or "token
// 1a2b3c4d" for a token sign-in.
func (s *session) Name() string { return s.name }

// MaxOperatorSessions bounds the sessions of one OIDC operator (one
// issuer and subject); past it that operator's oldest session is ended.
const MaxOperatorSessions = 100

// sessionTouch is how often a session in use writes its last use (and so
// its idle expiry) to Postgres: the idle bound is kept to within it.
const sessionTouch = 30 * time.Second

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func hashID(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return sum[:]
}

// grant is what a sign-in found: who signed in, the role, and the
// credential the session is bound to (a token's SHA-256, or an OIDC
// identity), which every request checks again (credentialRole).
type grant struct {
	kind, name, role string
	tokenSum         []byte
	identity         *store.ConsoleIdentity
	// capKey names the pool a cap bounds: past max sessions in it, its
	// oldest are ended, never another pool's (a token's role only evicts
	// its own sessions; an operator only their own).
	capKey string
	max    int
}

// openSession starts a session of g and stores it.
func (cn *Console) openSession(ctx context.Context, g grant) (*session, error) {
	now := cn.cfg.Now()
	s := &session{id: randomHex(32), csrf: randomHex(32), role: g.role, kind: g.kind, name: g.name, ref: randomHex(8)}
	exp := now.Add(SessionIdle)
	if l := now.Add(SessionLifetime); l.Before(exp) {
		exp = l
	}
	err := cn.cfg.Sessions.OpenConsoleSession(ctx, store.ConsoleSession{IDHash: hashID(s.id), CSRF: s.csrf, Role: g.role,
		Kind: g.kind, Name: g.name, CapKey: g.capKey, Created: now, LastSeen: now, ExpiresAt: exp,
		Ref: s.ref, TokenSum: g.tokenSum, Identity: g.identity}, g.max, now)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sessionOf returns the live session c's cookie names, or nil, and marks
// it used. Its role is what its credential grants on this replica now
// (credentialRole): a session whose credential grants nothing any more is
// ended here, on whichever replica serves the request, and ended says why.
// Nothing is cached between requests: a session revoked or ended on one
// replica is refused by every other at its next request.
func (cn *Console) sessionOf(c *fiber.Ctx) (s *session, ended string, err error) {
	id := c.Cookies(sessionCookie)
	if len(id) != 64 {
		return nil, "", nil
	}
	ctx := c.UserContext()
	cs, ok, err := cn.cfg.Sessions.ConsoleSession(ctx, hashID(id), cn.cfg.Now(), sessionTouch, SessionLifetime, SessionIdle)
	if err != nil || !ok {
		return nil, "", err
	}
	s = &session{id: utils.CopyString(id), csrf: cs.CSRF, kind: cs.Kind, name: cs.Name, ref: cs.Ref}
	role, reason := cn.credentialRole(cs)
	if role == "" {
		if err := cn.cfg.Sessions.EndConsoleSession(ctx, cs.IDHash); err != nil {
			return nil, "", err
		}
		s.role = cs.Role
		cn.audit(c, s, "session ended", "reason", reason, "session", cs.Ref)
		return nil, reason, nil
	}
	s.role = role
	if role != cs.Role {
		if err := cn.cfg.Sessions.SetConsoleSessionRole(ctx, cs.IDHash, role); err != nil {
			return nil, "", err
		}
		cn.audit(c, s, "session role changed", "from", cs.Role, "session", cs.Ref)
	}
	return s, "", nil
}

// credentialRole is the role cs's credential grants under this replica's
// configuration now, or "" and why it grants none: a token session's
// token must be one this replica is configured with (its role is that
// token's role now); an OIDC session's identity, as of its sign-in, is
// mapped again with the role rules in force. A session without a
// credential binding (opened by an older hub) grants nothing.
func (cn *Console) credentialRole(cs store.ConsoleSession) (role, reason string) {
	switch {
	case cs.Kind == sessionToken && len(cs.TokenSum) == sha256.Size:
		if role = cn.sumRole(cs.TokenSum); role == "" {
			return "", "its token is no longer configured"
		}
		return role, ""
	case cs.Kind == sessionOIDC && cs.Identity != nil:
		if cn.oidc == nil || cs.Identity.Issuer != cn.oidc.cfg.Issuer {
			return "", "its identity provider is no longer configured"
		}
		id := identity{Email: cs.Identity.Email, EmailVerified: cs.Identity.EmailVerified, Groups: cs.Identity.Groups}
		if role = mapRole(id, cn.oidc.admins, cn.oidc.readers); role == "" {
			return "", "the role rules no longer give its operator a role"
		}
		return role, ""
	}
	return "", "it has no credential binding"
}

// limiter counts events (failed sign-ins, sign-ins) per key (a remote
// address, a role) in fixed one-minute windows, at most limit a window.
type limiter struct {
	mu    sync.Mutex
	now   func() time.Time
	limit int
	m     map[string]*window
}

type window struct {
	start time.Time
	n     int
}

// maxLimiterKeys bounds the keys a limiter tracks; past it, expired
// windows are dropped, and if none expired every key is forgotten (a flood
// from that many addresses is the network's to stop; the per-role limit
// still holds).
const maxLimiterKeys = 10_000

func newLimiter(now func() time.Time, limit int) *limiter {
	return &limiter{now: now, limit: limit, m: map[string]*window{}}
}

// blocked reports whether key has reached the limit this minute.
func (l *limiter) blocked(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[key]
	return w != nil && l.now().Sub(w.start) < time.Minute && w.n >= l.limit
}

// add counts one event of key.
func (l *limiter) add(key string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[key]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if len(l.m) >= maxLimiterKeys {
			for k, o := range l.m {
				if now.Sub(o.start) >= time.Minute {
					delete(l.m, k)
				}
			}
			if len(l.m) >= maxLimiterKeys {
				clear(l.m)
			}
		}
		w = &window{start: now}
		l.m[strings.Clone(key)] = w
	}
	w.n++
}

// fingerprint names a token in logs: the first 8 hex digits of its
// SHA-256.
func fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// tokenGrant is a configured token, by its SHA-256, and the role it
// signs in as.
type tokenGrant struct {
	sum  [sha256.Size]byte
	role string
}

// tokenGrants are the tokens cfg configures.
func tokenGrants(cfg Config) []tokenGrant {
	gs := []tokenGrant{{sha256.Sum256([]byte(cfg.AdminToken)), RoleAdmin}}
	if cfg.ReadOnlyToken != "" {
		gs = append(gs, tokenGrant{sha256.Sum256([]byte(cfg.ReadOnlyToken)), RoleReadOnly})
	}
	return gs
}

// tokenRole returns the role token signs in as, or "", and the token's
// SHA-256 (the credential its session is bound to).
func (cn *Console) tokenRole(token string) (string, []byte) {
	if token == "" {
		return "", nil
	}
	sum := sha256.Sum256([]byte(token))
	return cn.sumRole(sum[:]), sum[:]
}

// sumRole returns the role of the configured token whose SHA-256 is sum,
// or "". Every configured token is compared, in constant time, so neither
// content nor length leaks; the first role listed wins (admin).
func (cn *Console) sumRole(sum []byte) string {
	role := ""
	for _, g := range cn.tokens {
		if subtle.ConstantTimeCompare(sum, g.sum[:]) == 1 && role == "" {
			role = g.role
		}
	}
	return role
}

func equalTokens(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// secure reports whether cookies should be Secure: the request came over
// HTTPS (or through a proxy that says so).
func secure(c *fiber.Ctx) bool { return c.Protocol() == "https" }

// setCookie sets a browser-session cookie: no Expires and no Max-Age, so
// the browser forgets it when it closes; how long it is worth is the
// server's to decide (SessionLifetime, SessionIdle).
func (cn *Console) setCookie(c *fiber.Ctx, name, value string) {
	c.Cookie(&fiber.Cookie{Name: name, Value: value, Path: cookiePath, SessionOnly: true,
		HTTPOnly: true, Secure: secure(c), SameSite: fiber.CookieSameSiteStrictMode})
}

func (cn *Console) clearCookie(c *fiber.Ctx, name string) {
	c.Cookie(&fiber.Cookie{Name: name, Value: "", Path: cookiePath, Expires: time.Unix(1, 0), MaxAge: -1,
		HTTPOnly: true, Secure: secure(c), SameSite: fiber.CookieSameSiteStrictMode})
}

// crossSite reports a request another site made the browser send: a
// Sec-Fetch-Site of cross-site, or an Origin that is not this host.
func crossSite(c *fiber.Ctx) bool {
	if c.Get("Sec-Fetch-Site") == "cross-site" {
		return true
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host == "" || !strings.EqualFold(u.Host, c.Hostname())
}

// remote is the address sign-ins are limited by.
func remote(c *fiber.Ctx) string { return utils.CopyString(c.IP()) }

// audit logs an action: who did it (role, the token's fingerprint for a
// token session, the name) and what.
func (cn *Console) audit(c *fiber.Ctx, s *session, action string, attrs ...any) {
	who, fp := "none", ""
	if s != nil {
		who, fp = s.role, s.tokenFP()
	}
	args := append([]any{"who", who, "token", fp, "action", action, "remote", remote(c)}, attrs...)
	if s != nil {
		args = append(args, "name", s.actor().Name)
	}
	cn.log.Info("console action", args...)
}

// handler is a page or action of a signed-in operator.
type handler func(c *fiber.Ctx, s *session) error

// authed runs h for a live session; without one it sends the browser to
// the sign-in page. A POST must come from a session that may act (admin,
// but sign-out), from this site, with the session's CSRF token.
func (cn *Console) authed(h handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s, ended, err := cn.sessionOf(c)
		if err != nil {
			return cn.failErr(c, nil, err)
		}
		if s == nil {
			if c.Cookies(sessionCookie) != "" {
				cn.clearCookie(c, sessionCookie)
			}
			if ended != "" { // refused, and told why
				return cn.renderLogin(c, fiber.StatusUnauthorized, "Your session was ended: "+ended+". Sign in again.")
			}
			return c.Redirect("/console/login", fiber.StatusSeeOther)
		}
		if c.Method() == fiber.MethodPost {
			form, err := readForm(c)
			if err != nil {
				return cn.failErr(c, s, err)
			}
			if s.role != RoleAdmin && c.Path() != "/console/logout" {
				cn.audit(c, s, "refused", "path", c.Path(), "reason", "read-only")
				// In the audit trail too: the operator is signed in (an
				// anonymous or cross-site request is only logged, so that
				// no one outside floods the trail).
				_ = cn.cfg.Operator.Refuse(actx(c, s), ActionConsole, c.Path(), nil, errReadOnly)
				return cn.fail(c, s, fiber.StatusForbidden, "Refused: a read-only session cannot act.")
			}
			if crossSite(c) || !equalTokens(form.Get("csrf"), s.csrf) {
				cn.audit(c, s, "refused", "path", c.Path(), "reason", "csrf")
				return cn.fail(c, s, fiber.StatusForbidden, "Refused: the form's CSRF token is missing or wrong, or it came from another site. Reload the page and try again.")
			}
			c.Locals(formKey{}, form)
			// An action refused by the handler before it was recorded
			// (bad input, another job running) is recorded as refused.
			ctx, recorded := hub.WithAuditMark(c.UserContext())
			c.SetUserContext(ctx)
			err = h(c, s)
			if code := c.Response().StatusCode(); !recorded() && hubhttp.Refusal(code) && c.Path() != "/console/logout" {
				reason, ok := c.Locals(refusalKey{}).(error)
				if !ok {
					reason = &hub.Error{Code: hub.EINVALID, Message: utils.StatusMessage(code)}
				}
				_ = cn.cfg.Operator.Refuse(actx(c, s), ActionConsole, c.Path(), nil, reason)
			}
			return err
		}
		return h(c, s)
	}
}

// refusalKey holds, in a request's locals, the error a handler refused it
// with (failErr), for its audit entry.
type refusalKey struct{}

// ActionConsole is the audit trail's action of a console request refused
// before it reached its operation (its target is the request's path).
const ActionConsole = "console.action"

// errReadOnly is the reason a read-only session's action is refused.
var errReadOnly = &hub.Error{Code: hub.EUNAUTHORIZED, Message: "a read-only session cannot act"}

type formKey struct{}

// formOf is the POST form authed read.
func formOf(c *fiber.Ctx) url.Values {
	v, _ := c.Locals(formKey{}).(url.Values)
	return v
}

// loginView is the sign-in page's data.
type loginView struct {
	OIDC bool // OIDC sign-in is configured
}

func (cn *Console) loginPage(c *fiber.Ctx) error {
	if s, _, err := cn.sessionOf(c); err != nil {
		return cn.failErr(c, nil, err)
	} else if s != nil {
		return c.Redirect("/console/", fiber.StatusSeeOther)
	}
	return cn.renderLogin(c, fiber.StatusOK, "")
}

// renderLogin shows the sign-in form with a fresh login CSRF token (a
// double-submit cookie: a sign-in form posted from another site lacks it).
func (cn *Console) renderLogin(c *fiber.Ctx, code int, msg string) error {
	tok := randomHex(16)
	cn.setCookie(c, loginCookie, tok)
	return cn.render(c, code, "login", view{Title: "Sign in", CSRF: tok, Error: msg, Page: loginView{OIDC: cn.oidc != nil}})
}

func (cn *Console) login(c *fiber.Ctx) error {
	addr := remote(c)
	if cn.failed.blocked(addr) {
		cn.audit(c, nil, "login refused", "reason", "too many failed sign-ins")
		return cn.tooMany(c, "Too many failed sign-ins from your address: wait a minute.")
	}
	// Only a token checked and found wrong counts as a failed sign-in. A
	// form refused before its token is looked at (unreadable, cross-site,
	// without the login CSRF token) guesses nothing, and another site can
	// make an operator's browser send as many as it likes: counted, they
	// would lock every operator behind that address out (behind kubectl
	// port-forward, all of them).
	form, err := readForm(c)
	if err != nil {
		return cn.failErr(c, nil, err)
	}
	if crossSite(c) || !equalTokens(form.Get("csrf"), c.Cookies(loginCookie)) {
		cn.audit(c, nil, "login failed", "reason", "csrf")
		return cn.fail(c, nil, fiber.StatusForbidden, "Refused: the sign-in form's CSRF token is missing or wrong (are cookies enabled?). Reload the sign-in page and try again.")
	}
	role, sum := cn.tokenRole(form.Get("token"))
	if role == "" {
		cn.failed.add(addr)
		cn.audit(c, nil, "login failed", "reason", "wrong token")
		return cn.renderLogin(c, fiber.StatusUnauthorized, "Sign-in refused: wrong token.")
	}
	// Successful sign-ins are limited too, per address and per role: each
	// opens a session, and sessions are memory.
	if cn.signIns.blocked(addr) || cn.roleSignIns.blocked(role) {
		cn.audit(c, nil, "login refused", "role", role, "reason", "too many sign-ins")
		return cn.tooMany(c, "Too many sign-ins: wait a minute.")
	}
	cn.signIns.add(addr)
	cn.roleSignIns.add(role)
	s, err := cn.openSession(c.UserContext(), grant{kind: sessionToken, name: "token " + fingerprint(form.Get("token")), role: role,
		tokenSum: sum, capKey: sessionToken + ":" + role, max: cn.maxSessions})
	if err != nil {
		return cn.failErr(c, nil, err)
	}
	cn.clearCookie(c, loginCookie)
	cn.setCookie(c, sessionCookie, s.id)
	cn.audit(c, s, "login")
	return c.Redirect("/console/", fiber.StatusSeeOther)
}

// tooMany answers a refused sign-in 429 with the sign-in page's error.
func (cn *Console) tooMany(c *fiber.Ctx, msg string) error {
	c.Set(fiber.HeaderRetryAfter, "60")
	return cn.render(c, fiber.StatusTooManyRequests, "login", view{Title: "Sign in", Error: msg, Page: loginView{}})
}

func (cn *Console) logout(c *fiber.Ctx, s *session) error {
	if err := cn.cfg.Sessions.EndConsoleSession(c.UserContext(), hashID(s.id)); err != nil {
		return cn.failErr(c, s, err)
	}
	cn.clearCookie(c, sessionCookie)
	cn.audit(c, s, "logout")
	return c.Redirect("/console/login", fiber.StatusSeeOther)
}
