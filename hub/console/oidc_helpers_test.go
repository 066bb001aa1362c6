package console_test

import (
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"

	"github.com/hookhub/hookhub/hub/console"
)

// The local OpenID Connect provider of these tests is zitadel/oidc's OP
// (pkg/op) with its example storage and login page, in-process: it signs
// real ID tokens with its own RSA key and serves its JWKS; nothing of the
// console's token checks is mocked.

// testUser is a user of the local provider (password opPassword).
type testUser struct {
	username, email string
	verified        bool
	groups          []string
}

const (
	opPassword          = "correct-horse-battery"
	consoleClientID     = "hookhub-console"
	consoleClientSecret = "hookhub-console-secret"
	// otherClientID is another application at the same provider.
	otherClientID = "other-app"
)

// opUsers are the provider's users; oidcAdmins and oidcReaders the
// console's role rules for them.
var opUsers = []testUser{
	{"alice", "alice@example.com", true, nil},                           // admin by e-mail
	{"bob", "bob@example.org", true, nil},                               // read-only by domain
	{"carol", "carol@elsewhere.test", true, []string{"hookhub-admins"}}, // admin by group
	{"mallory", "alice@example.com", false, nil},                        // alice's address, unverified
	{"erin", "erin@elsewhere.test", true, []string{"marketing"}},        // no role
	{"dora", "Dora@Example.ORG", true, []string{"hookhub-admins-not"}},  // read-only (domain, any case)
}

var (
	oidcAdmins  = []string{"alice@example.com", "group:hookhub-admins"}
	oidcReaders = []string{"@example.org"}
)

type opUserStore struct{ users map[string]*storage.User }

func (s opUserStore) GetUserByID(id string) *storage.User { return s.users[id] }
func (s opUserStore) GetUserByUsername(name string) *storage.User {
	for _, u := range s.users {
		if u.Username == name {
			return u
		}
	}
	return nil
}
func (opUserStore) ExampleClientID() string { return "service" }

// opStorage is the example storage with groups in the ID token and the
// clients' ID token lifetime set by the test.
type opStorage struct {
	*storage.Storage
	groups   map[string][]string
	mu       sync.Mutex
	lifetime time.Duration
	// keysOf, when set, is the storage whose keys sign this provider's
	// tokens (a provider that holds another's signing key).
	keysOf *storage.Storage
}

func (s *opStorage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	if s.keysOf != nil {
		return s.keysOf.SigningKey(ctx)
	}
	return s.Storage.SigningKey(ctx)
}

func (s *opStorage) KeySet(ctx context.Context) ([]op.Key, error) {
	if s.keysOf != nil {
		return s.keysOf.KeySet(ctx)
	}
	return s.Storage.KeySet(ctx)
}

func (s *opStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return opClient{Client: c, lifetime: s.lifetime}, nil
}

func (s *opStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, tr op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, tr, scopes); err != nil {
		return err
	}
	if g := s.groups[tr.GetSubject()]; g != nil {
		ui.AppendClaims("groups", g)
	}
	return nil
}

// opClient asserts the e-mail claims in the ID token (as Google, Okta and
// Keycloak do) and has the test's ID token lifetime.
type opClient struct {
	op.Client
	lifetime time.Duration
}

func (c opClient) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c opClient) IDTokenLifetime() time.Duration {
	if c.lifetime > 0 {
		return c.lifetime
	}
	return time.Hour
}

// testOP is a running local provider.
type testOP struct {
	URL     string // its issuer
	storage *opStorage
}

// setIDTokenLifetime sets how long its next ID tokens are valid.
func (o *testOP) setIDTokenLifetime(d time.Duration) {
	o.storage.mu.Lock()
	defer o.storage.mu.Unlock()
	o.storage.lifetime = d
}

// listen reserves a local address and returns its http URL.
func listen(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln, "http://" + ln.Addr().String()
}

// startOP starts a provider on ln whose clients (the console's and
// another) redirect to redirect.
func startOP(t testing.TB, ln net.Listener, issuer, redirect string) *testOP {
	t.Helper()
	return startOPKeys(t, ln, issuer, redirect, nil)
}

// startOPKeys is startOP with keysOf's signing key, when not nil.
func startOPKeys(t testing.TB, ln net.Listener, issuer, redirect string, keysOf *testOP) *testOP {
	t.Helper()
	users := map[string]*storage.User{}
	groups := map[string][]string{}
	for _, u := range opUsers {
		id := "sub-" + u.username
		users[id] = &storage.User{ID: id, Username: u.username, Password: opPassword, FirstName: u.username, LastName: "Test",
			Email: u.email, EmailVerified: u.verified, PreferredLanguage: language.English}
		groups[id] = u.groups
	}
	clients := map[string]*storage.Client{
		consoleClientID: storage.WebClient(consoleClientID, consoleClientSecret, redirect),
		otherClientID:   storage.WebClient(otherClientID, "other-secret", redirect),
	}
	st := &opStorage{Storage: storage.NewStorageWithClients(opUserStore{users}, clients), groups: groups}
	if keysOf != nil {
		st.keysOf = keysOf.storage.Storage
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: exampleop.SetupServer(issuer, st, nil, false), ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)
	return &testOP{URL: issuer, storage: st}
}

// rewriter is the console's HTTP transport to the provider; a test may
// rewrite its requests (a mix-up: the token endpoint of another provider,
// another client's credentials).
type rewriter struct {
	mu      sync.Mutex
	rewrite func(*http.Request)
}

func (r *rewriter) set(f func(*http.Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rewrite = f
}

func (r *rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	f := r.rewrite
	r.mu.Unlock()
	if f != nil {
		req = req.Clone(req.Context())
		f(req)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// oidcSite is a console with OIDC sign-in served on a local address, its
// provider, and the transport between them.
type oidcSite struct {
	*site
	URL       string // the console's origin
	op        *testOP
	transport *rewriter
	redirect  string
}

// newOIDCSite starts a provider and a console (on pool) that signs in
// with it.
func newOIDCSite(t testing.TB, pool *pgxpool.Pool) *oidcSite {
	t.Helper()
	opLn, opURL := listen(t)
	cnLn, cnURL := listen(t)
	o := startOP(t, opLn, opURL, cnURL+"/console/oidc/callback")
	return serveOIDCSite(t, pool, o, cnLn, cnURL, cnURL+"/console/oidc/callback")
}

// serveOIDCSite serves a console on ln that signs in with o; mods change
// its OIDC configuration (other role rules) before it starts.
func serveOIDCSite(t testing.TB, pool *pgxpool.Pool, o *testOP, ln net.Listener, origin, redirect string, mods ...func(*console.OIDCConfig)) *oidcSite {
	t.Helper()
	tr := &rewriter{}
	s := newSiteConfig(t, pool, fiber.Config{}, func(c *console.Config) {
		c.OIDC = console.OIDCConfig{Issuer: o.URL, ClientID: consoleClientID, ClientSecret: consoleClientSecret,
			RedirectURL: redirect, Admins: oidcAdmins, Readers: oidcReaders,
			HTTPClient: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
		for _, m := range mods {
			m(&c.OIDC)
		}
	})
	go func() { _ = s.app.Listener(ln) }()
	t.Cleanup(func() { _ = s.app.Shutdown() })
	return &oidcSite{site: s, URL: origin, op: o, transport: tr, redirect: redirect}
}

// replica starts another console on the same database and provider, as
// a second replica of the hub behind the same load balancer (the same
// redirect URL).
func (s *oidcSite) replica(t testing.TB, mods ...func(*console.OIDCConfig)) *oidcSite {
	t.Helper()
	ln, origin := listen(t)
	return serveOIDCSite(t, s.pool, s.op, ln, origin, s.redirect, mods...)
}

// agent is a browser as an HTTP client: a cookie jar, redirects followed
// (but not back into the console's callback, which the test calls).
type agent struct {
	t      testing.TB
	jar    http.CookieJar
	client *http.Client // stops at the console's callback
	once   *http.Client // follows no redirect
}

func newAgent(t testing.TB) *agent {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	stop := func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/console/oidc/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return &agent{t: t, jar: jar,
		client: &http.Client{Jar: jar, CheckRedirect: stop, Timeout: 30 * time.Second},
		once: &http.Client{Jar: jar, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get requests u with c and returns the answer read whole.
func (a *agent) get(c *http.Client, u string) answer {
	a.t.Helper()
	resp, err := c.Get(u)
	require.NoError(a.t, err)
	return readAnswer(a.t, resp)
}

func readAnswer(t testing.TB, resp *http.Response) answer {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b.String()}
}

// start asks the console to sign in (returning to returnTo when not
// empty) and returns the provider's authorization URL it sends to.
func (a *agent) start(s *oidcSite, returnTo string) *url.URL {
	a.t.Helper()
	u := s.URL + "/console/oidc/login"
	if returnTo != "" {
		u += "?return_to=" + url.QueryEscape(returnTo)
	}
	ans := a.get(a.once, u)
	require.Equal(a.t, http.StatusSeeOther, ans.status, ans.body)
	loc, err := url.Parse(ans.header.Get("Location"))
	require.NoError(a.t, err)
	return loc
}

var opLoginIDRE = regexp.MustCompile(`name="id" value="([^"]+)"`)

// login signs user in on the provider's login page of authorize and
// returns the callback URL the provider sends back to the console.
func (a *agent) login(authorize *url.URL, user string) *url.URL {
	a.t.Helper()
	page := a.get(a.client, authorize.String())
	require.Equal(a.t, http.StatusOK, page.status, page.body)
	m := opLoginIDRE.FindStringSubmatch(page.body)
	require.NotNil(a.t, m, "no login form: %s", page.body)
	base := authorize.Scheme + "://" + authorize.Host
	resp, err := a.client.PostForm(base+"/login/username", url.Values{"id": {m[1]}, "username": {user}, "password": {opPassword}})
	require.NoError(a.t, err)
	ans := readAnswer(a.t, resp)
	require.Equal(a.t, http.StatusFound, ans.status, "the provider did not send back to the console: %s", ans.body)
	cb, err := url.Parse(ans.header.Get("Location"))
	require.NoError(a.t, err)
	require.Equal(a.t, "/console/oidc/callback", cb.Path)
	return cb
}

// finish calls the console's callback.
func (a *agent) finish(cb *url.URL) answer {
	a.t.Helper()
	return a.get(a.once, cb.String())
}

// signIn runs a whole sign-in of user and returns the callback's answer.
func (a *agent) signIn(s *oidcSite, user string) answer {
	a.t.Helper()
	return a.finish(a.login(a.start(s, ""), user))
}

// home is the console's overview with the agent's cookies.
func (a *agent) home(s *oidcSite) answer {
	a.t.Helper()
	return a.get(a.once, s.URL+"/console/")
}

// sessionCookie is the agent's console session cookie, or nil.
func (a *agent) sessionCookie(s *oidcSite) *http.Cookie {
	u, _ := url.Parse(s.URL + "/console/")
	for _, c := range a.jar.Cookies(u) {
		if c.Name == "hookhub_session" {
			return c
		}
	}
	return nil
}

type consoleConfig = console.Config

func fiberConfig() fiber.Config { return fiber.Config{} }
