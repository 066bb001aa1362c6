package console

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Claims map to roles: admin rules first, then reader rules; e-mail and
// domain rules need a verified e-mail; groups match exactly.
func TestMapRole(t *testing.T) {
	t.Parallel()
	admins, err := parseRoleRules([]string{"alice@example.com", " group:hub-admins ", "@admins.example.com"})
	require.NoError(t, err)
	readers, err := parseRoleRules([]string{"@example.com", "group:hub-readers", "Bob@Example.NET"})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		id   identity
		want string
	}{
		"admin by e-mail":                  {identity{Email: "alice@example.com", EmailVerified: true}, RoleAdmin},
		"admin by e-mail, any case":        {identity{Email: "ALICE@example.COM", EmailVerified: true}, RoleAdmin},
		"admin e-mail unverified":          {identity{Email: "alice@example.com"}, ""},
		"admin by group":                   {identity{Groups: []string{"x", "hub-admins"}}, RoleAdmin},
		"group is case-sensitive":          {identity{Groups: []string{"Hub-Admins"}}, ""},
		"admin by domain":                  {identity{Email: "z@admins.example.com", EmailVerified: true}, RoleAdmin},
		"admin wins over reader":           {identity{Email: "carol@example.com", EmailVerified: true, Groups: []string{"hub-admins"}}, RoleAdmin},
		"reader by domain":                 {identity{Email: "carol@example.com", EmailVerified: true}, RoleReadOnly},
		"domain unverified":                {identity{Email: "carol@example.com"}, ""},
		"subdomain is another domain":      {identity{Email: "carol@eu.example.com", EmailVerified: true}, ""},
		"suffix is another domain":         {identity{Email: "carol@notexample.com", EmailVerified: true}, ""},
		"domain in the local part":         {identity{Email: "example.com@evil.test", EmailVerified: true}, ""},
		"reader by group":                  {identity{Groups: []string{"hub-readers"}}, RoleReadOnly},
		"reader by e-mail written in caps": {identity{Email: "bob@example.net", EmailVerified: true}, RoleReadOnly},
		"nothing":                          {identity{Email: "eve@evil.test", EmailVerified: true, Groups: []string{"staff"}}, ""},
		"no claims":                        {identity{}, ""},
	} {
		require.Equal(t, c.want, mapRole(c.id, admins, readers), name)
	}
	// Groups past MaxGroups are not looked at.
	many := make([]string, MaxGroups+1)
	many[MaxGroups] = "hub-admins"
	require.Empty(t, mapRole(identity{Groups: many}, admins, readers))
}

func TestParseRoleRules(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"alice", "@", "@nodot", "a@b@c.d", "group:", "alice@", "@exa mple.com", "al ice@example.com"} {
		_, err := parseRoleRules([]string{bad})
		require.Error(t, err, bad)
	}
	rules, err := parseRoleRules([]string{"", " a@B.com", "@B.com", "group:G"})
	require.NoError(t, err)
	require.Equal(t, []roleRule{{"email", "a@b.com"}, {"domain", "b.com"}, {"group", "G"}}, rules)
}

func TestSafeReturn(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                          "/console/",
		"/console/":                 "/console/",
		"/console/events?type=a.b":  "/console/events?type=a.b",
		"https://evil.example/":     "/console/",
		"//evil.example/console/":   "/console/",
		"/console//evil.example":    "/console/",
		"/console/\\\\evil.example": "/console/",
		"/console/../admin":         "/console/",
		"/console/a/..":             "/console/",
		"/console/oidc/callback":    "/console/",
		"/console/\x00":             "/console/",
		"/console/ x":               "/console/",
		"/consolex":                 "/console/",
	} {
		require.Equal(t, want, safeReturn(in), in)
	}
}

func FuzzSafeReturn(f *testing.F) {
	for _, s := range []string{"/console/", "/console/events?x=1", "//evil", "/console/../x", "/console/%2e%2e/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := safeReturn(s)
		if got != "/console/" && got != s {
			t.Fatalf("safeReturn(%q) = %q", s, got)
		}
		if got != "/console/" {
			if len(got) < 9 || got[:9] != "/console/" || got[1] == '/' {
				t.Fatalf("safeReturn(%q) = %q leaves the console", s, got)
			}
		}
	})
}

// The claims roles are read from: email_verified as a boolean (or the
// string "true"), groups as a list of strings, the name shown sanitised.
func TestClaims(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{`true`: true, `"true"`: true, `false`: false, `"false"`: false, `1`: false, ``: false, `null`: false} {
		require.Equal(t, want, verified(json.RawMessage(raw)), raw)
	}
	for raw, want := range map[string][]string{
		`{"groups":["a","b"]}`:       {"a", "b"},
		`{"groups":["a",1,null,{}]}`: {"a"},
		`{"groups":"a"}`:             nil,
		`{}`:                         nil,
		`{"roles":["a"]}`:            nil,
	} {
		var all map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(raw), &all))
		require.Equal(t, want, groupsOf(all, "groups"), raw)
	}
	require.Equal(t, "alice@example.com", operatorName("alice@example.com", true, "sub-1"))
	require.Equal(t, "sub-1", operatorName("alice@example.com", false, "sub-1"), "an unverified e-mail names no one")
	require.Equal(t, "ab", operatorName("a\nb\x00", true, "s"))
	require.Len(t, operatorName(strings.Repeat("é", 300), true, "s"), 254)
}
