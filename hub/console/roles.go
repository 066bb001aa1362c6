package console

import (
	"fmt"
	"strings"
)

// A roleRule matches an operator's OIDC claims: an e-mail address
// ("alice@example.com"), an e-mail domain ("@example.com") or a group
// ("group:hookhub-admins").
type roleRule struct {
	kind  string // "email", "domain" or "group"
	value string // lower-case for e-mail and domain; as given for a group
}

// MaxRoleRules bounds the rules of one role; MaxGroups the groups of an ID
// token that are looked at (the rest are ignored).
const (
	MaxRoleRules = 1000
	MaxGroups    = 1000
)

// parseRoleRules parses a comma-separated list of rules.
func parseRoleRules(list []string) ([]roleRule, error) {
	if len(list) > MaxRoleRules {
		return nil, fmt.Errorf("has %d entries, at most %d", len(list), MaxRoleRules)
	}
	var rules []roleRule
	for _, e := range list {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case strings.HasPrefix(e, "group:"):
			g := strings.TrimPrefix(e, "group:")
			if g == "" {
				return nil, fmt.Errorf("entry %q: a group needs a name (group:NAME)", e)
			}
			rules = append(rules, roleRule{"group", g})
		case strings.HasPrefix(e, "@"):
			d := strings.ToLower(e[1:])
			if d == "" || strings.ContainsAny(d, "@ ") || !strings.Contains(d, ".") {
				return nil, fmt.Errorf("entry %q: a domain is @example.com", e)
			}
			rules = append(rules, roleRule{"domain", d})
		default:
			at := strings.LastIndexByte(e, '@')
			if at <= 0 || at == len(e)-1 || strings.Count(e, "@") != 1 || strings.ContainsAny(e, " ") {
				return nil, fmt.Errorf("entry %q: want an e-mail address (alice@example.com), a domain (@example.com) or a group (group:NAME)", e)
			}
			rules = append(rules, roleRule{"email", strings.ToLower(e)})
		}
	}
	return rules, nil
}

// identity is what an ID token says about its operator that roles are
// mapped from.
type identity struct {
	Email         string
	EmailVerified bool
	Groups        []string
}

// matches reports whether id matches r; groups is id's groups as a set
// (groupSet). E-mail and domain rules need a verified e-mail
// (email_verified true): an address the provider did not verify may
// belong to anyone who typed it.
func (r roleRule) matches(id identity, groups map[string]struct{}) bool {
	switch r.kind {
	case "email":
		return id.EmailVerified && strings.EqualFold(id.Email, r.value)
	case "domain":
		at := strings.LastIndexByte(id.Email, '@')
		return id.EmailVerified && at > 0 && strings.EqualFold(id.Email[at+1:], r.value)
	case "group":
		_, ok := groups[r.value]
		return ok
	}
	return false
}

// groupSet is the first MaxGroups of groups, as a set: a role is mapped
// at every request of a session, so its cost is one pass over the groups
// and one over the rules, not their product.
func groupSet(groups []string) map[string]struct{} {
	set := make(map[string]struct{}, min(len(groups), MaxGroups))
	for i, g := range groups {
		if i >= MaxGroups {
			break
		}
		set[g] = struct{}{}
	}
	return set
}

// mapRole returns the role id signs in as: admin if an admin rule matches,
// else read-only if a reader rule matches, else "" (refused).
func mapRole(id identity, admins, readers []roleRule) string {
	groups := groupSet(id.Groups)
	for _, r := range admins {
		if r.matches(id, groups) {
			return RoleAdmin
		}
	}
	for _, r := range readers {
		if r.matches(id, groups) {
			return RoleReadOnly
		}
	}
	return ""
}
