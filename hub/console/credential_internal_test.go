package console

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/store"
)

// credentialRole maps each kind of credential: a token by the role its
// SHA-256 has in the configuration now, an OIDC identity by the rules in
// force and only from the configured issuer; no binding maps to nothing.
func TestCredentialRole(t *testing.T) {
	t.Parallel()
	admins, err := parseRoleRules([]string{"alice@example.com"})
	require.NoError(t, err)
	readers, err := parseRoleRules([]string{"group:readers"})
	require.NoError(t, err)
	cn := &Console{tokens: tokenGrants(Config{AdminToken: "admin-token", ReadOnlyToken: "reader-token"}),
		oidc: &oidcClient{cfg: OIDCConfig{Issuer: "https://id.example.com"}, admins: admins, readers: readers}}
	sum := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	alice := &store.ConsoleIdentity{Issuer: "https://id.example.com", Subject: "a", Email: "alice@example.com", EmailVerified: true}
	for name, c := range map[string]struct {
		cs   store.ConsoleSession
		want string
	}{
		"admin token":             {store.ConsoleSession{Kind: sessionToken, TokenSum: sum("admin-token")}, RoleAdmin},
		"reader token":            {store.ConsoleSession{Kind: sessionToken, TokenSum: sum("reader-token")}, RoleReadOnly},
		"rotated token":           {store.ConsoleSession{Kind: sessionToken, TokenSum: sum("old-token")}, ""},
		"token without binding":   {store.ConsoleSession{Kind: sessionToken}, ""},
		"short token sum":         {store.ConsoleSession{Kind: sessionToken, TokenSum: sum("admin-token")[:8]}, ""},
		"oidc admin":              {store.ConsoleSession{Kind: sessionOIDC, Identity: alice}, RoleAdmin},
		"oidc without binding":    {store.ConsoleSession{Kind: sessionOIDC}, ""},
		"oidc of another issuer":  {store.ConsoleSession{Kind: sessionOIDC, Identity: &store.ConsoleIdentity{Issuer: "https://other.example.com", Email: "alice@example.com", EmailVerified: true}}, ""},
		"oidc reader by group":    {store.ConsoleSession{Kind: sessionOIDC, Identity: &store.ConsoleIdentity{Issuer: "https://id.example.com", Groups: []string{"readers"}}}, RoleReadOnly},
		"oidc no rule":            {store.ConsoleSession{Kind: sessionOIDC, Identity: &store.ConsoleIdentity{Issuer: "https://id.example.com", Email: "eve@example.com", EmailVerified: true}}, ""},
		"token binding on oidc":   {store.ConsoleSession{Kind: sessionOIDC, TokenSum: sum("admin-token")}, ""},
		"identity on token":       {store.ConsoleSession{Kind: sessionToken, Identity: alice}, ""},
		"unknown kind with token": {store.ConsoleSession{Kind: "other", TokenSum: sum("admin-token")}, ""},
	} {
		role, reason := cn.credentialRole(c.cs)
		require.Equal(t, c.want, role, name)
		require.Equal(t, c.want == "", reason != "", name)
	}
	noOIDC := &Console{tokens: cn.tokens}
	role, reason := noOIDC.credentialRole(store.ConsoleSession{Kind: sessionOIDC, Identity: alice})
	require.Empty(t, role)
	require.Equal(t, "its identity provider is no longer configured", reason)
}

// The identity a session keeps is bounded, and the role at sign-in is
// mapped from what is kept.
func TestKeptIdentityBounded(t *testing.T) {
	t.Parallel()
	groups := make([]string, 2000)
	for i := range groups {
		groups[i] = fmt.Sprintf("group-%04d-%s", i, string(make([]byte, 40)))
	}
	ci := keptIdentity("https://id", "sub", string(make([]byte, maxEmailBytes+1)), true, groups)
	require.Empty(t, ci.Email)
	require.False(t, ci.EmailVerified)
	n := 0
	for _, g := range ci.Groups {
		n += len(g)
	}
	require.LessOrEqual(t, n, maxGroupBytes)
	require.Less(t, len(ci.Groups), len(groups))
}

// BenchmarkCredentialRole is the check every console request makes, at
// its worst: 1,000 admin and 1,000 reader group rules, an identity with
// 1,000 groups, matched by the last reader rule.
func BenchmarkCredentialRole(b *testing.B) {
	var adminList, readerList, groups []string
	for i := range MaxRoleRules {
		adminList = append(adminList, fmt.Sprintf("group:admins-%d", i))
		readerList = append(readerList, fmt.Sprintf("group:readers-%d", i))
		groups = append(groups, fmt.Sprintf("team-%d", i))
	}
	groups[len(groups)-1] = fmt.Sprintf("readers-%d", MaxRoleRules-1)
	admins, err := parseRoleRules(adminList)
	require.NoError(b, err)
	readers, err := parseRoleRules(readerList)
	require.NoError(b, err)
	cn := &Console{tokens: tokenGrants(Config{AdminToken: "admin-token", ReadOnlyToken: "reader-token"}),
		oidc: &oidcClient{cfg: OIDCConfig{Issuer: "https://id.example.com"}, admins: admins, readers: readers}}
	cs := store.ConsoleSession{Kind: sessionOIDC, Identity: &store.ConsoleIdentity{Issuer: "https://id.example.com", Groups: groups}}
	b.ReportAllocs()
	for b.Loop() {
		if role, _ := cn.credentialRole(cs); role != RoleReadOnly {
			b.Fatalf("role %q", role)
		}
	}
}
