package samples

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
	"github.com/hookhub/hookhub/internal/jsontext"
)

// githubObjectKey is the top-level key of the object a GitHub event is
// about: where github puts data.
func githubObjectKey(event string) string {
	switch event {
	case "issues":
		return "issue"
	case "issue_comment":
		return "comment"
	case "push":
		return "head_commit"
	case "ping":
		return "hook"
	}
	return event
}

// github returns a GitHub payload for eventType, "<event>[.<action>]"
// ("pull_request.opened", "push"): the action (when given), the event's
// object, the repository and the sender, as GitHub sends them. Realistic
// objects are built for ping, push, pull_request, issues, issue_comment
// and release, and a small generic object for other events. Ids depend
// only on eventID, so the output is deterministic given its inputs. data,
// when not nil, must be a JSON object and replaces the event's object
// (pull_request, issue, comment, release, head_commit for push, hook for
// ping, the event name otherwise).
func github(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("github: sample needs an event id and type")
	}
	event, action, _ := strings.Cut(eventType, ".")
	if event == "" {
		return nil, errors.New("github: event type has no event name")
	}
	if data != nil && (jsontext.FirstNonSpace(data) != '{' || !json.Valid(data)) {
		return nil, errors.New("github: sample data is not a JSON object")
	}
	p := githubSamplePayload(eventID, event, action, now)
	if action != "" {
		p["action"] = action
	}
	if data != nil {
		p[githubObjectKey(event)] = json.RawMessage(data)
	}
	return json.Marshal(p)
}

func githubSamplePayload(eventID, event, action string, now time.Time) map[string]any {
	g := githubSample{eventID}
	created := now.Add(-90 * 24 * time.Hour)
	user := map[string]any{
		"login": "octocat", "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
		"avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4",
		"html_url":   "https://github.com/octocat", "type": "User", "site_admin": false,
	}
	repo := map[string]any{
		"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": "Hello-World",
		"full_name": "octocat/Hello-World", "private": false, "owner": user,
		"html_url":    "https://github.com/octocat/Hello-World",
		"description": "This your first repo!", "fork": false,
		"url":        "https://api.github.com/repos/octocat/Hello-World",
		"created_at": githubTime(created), "updated_at": githubTime(now), "pushed_at": githubTime(now),
		"default_branch": "main", "visibility": "public", "topics": []string{"octocat", "api"},
		"stargazers_count": 80, "forks_count": 9, "open_issues_count": 0,
	}
	p := map[string]any{"repository": repo, "sender": user}
	number := g.num("number", 1)%5000 + 1
	switch event {
	case "ping":
		p["zen"] = "Design for failure."
		p["hook_id"] = g.num("hook", 400000000)
		p["hook"] = map[string]any{
			"type": "Repository", "id": p["hook_id"], "name": "web", "active": true,
			"events":     []string{"push", "pull_request", "issues"},
			"config":     map[string]any{"content_type": "json", "insecure_ssl": "0", "url": "https://hub.example.com/webhooks/github"},
			"updated_at": githubTime(now), "created_at": githubTime(now),
		}
	case "push":
		g.push(p, now)
	case "pull_request":
		merged := action == "closed"
		var closedAt, mergedAt any
		state := "open"
		if merged {
			state, closedAt, mergedAt = "closed", githubTime(now), githubTime(now)
		}
		p["number"] = number
		p["pull_request"] = map[string]any{
			"url": fmt.Sprintf("https://api.github.com/repos/octocat/Hello-World/pulls/%d", number),
			"id":  g.num("pr", 1000000000), "node_id": "PR_kwDO" + derive.String("prnode/"+eventID, 16, base62),
			"html_url": fmt.Sprintf("https://github.com/octocat/Hello-World/pull/%d", number),
			"number":   number, "state": state, "locked": false, "title": "Add Twilio and Shopify providers",
			"user": user, "body": "Verifies the new providers against the official vectors.",
			"created_at": githubTime(now.Add(-time.Hour)), "updated_at": githubTime(now), "closed_at": closedAt, "merged_at": mergedAt,
			"draft": false, "merged": merged, "commits": 3, "additions": 420, "deletions": 17, "changed_files": 9,
			"head": map[string]any{"label": "octocat:providers", "ref": "providers", "sha": g.sha("head")},
			"base": map[string]any{"label": "octocat:main", "ref": "main", "sha": g.sha("base")},
		}
	case "issues", "issue_comment":
		g.issue(p, event, action, number, user, now)
	case "release":
		p["release"] = map[string]any{
			"url": "https://api.github.com/repos/octocat/Hello-World/releases/1",
			"id":  g.num("release", 100000000), "node_id": "RE_kwDO" + derive.String("rnode/"+eventID, 16, base62),
			"tag_name": "v1.2.0", "target_commitish": "main", "name": "v1.2.0", "draft": false,
			"prerelease": false, "author": user, "created_at": githubTime(now.Add(-time.Hour)), "published_at": githubTime(now),
			"html_url": "https://github.com/octocat/Hello-World/releases/tag/v1.2.0",
			"body":     "Adds Stripe, GitHub, Shopify, Twilio and Standard Webhooks providers.",
		}
	default:
		p[event] = map[string]any{
			"id": g.num(event, 1000000), "node_id": derive.String("node/"+eventID, 20, base62),
			"created_at": githubTime(now.Add(-time.Minute)), "updated_at": githubTime(now),
		}
	}
	return p
}

// githubSample derives a sample payload's ids and hashes from its event
// id.
type githubSample struct{ eventID string }

// num is a number of 8 digits derived from seed, plus lo.
func (g githubSample) num(seed string, lo int64) int64 {
	var n int64
	for _, c := range derive.String(seed+"/"+g.eventID, 8, "0123456789") {
		n = n*10 + int64(c-'0')
	}
	return lo + n
}

// sha is a commit hash derived from seed.
func (g githubSample) sha(seed string) string {
	return derive.String("sha/"+seed+"/"+g.eventID, 40, "0123456789abcdef")
}

// githubTime is t as GitHub writes its times.
func githubTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// push adds a push event's members to p: one commit on main.
func (g githubSample) push(p map[string]any, now time.Time) {
	before, after := g.sha("before"), g.sha("after")
	commit := map[string]any{
		"id": after, "tree_id": g.sha("tree"), "distinct": true,
		"message":   "Fix the relay's retry horizon",
		"timestamp": now.UTC().Format("2006-01-02T15:04:05-07:00"),
		"url":       "https://github.com/octocat/Hello-World/commit/" + after,
		"author":    map[string]any{"name": "The Octocat", "email": "octocat@github.com", "username": "octocat"},
		"committer": map[string]any{"name": "GitHub", "email": "noreply@github.com", "username": "web-flow"},
		"added":     []string{}, "removed": []string{}, "modified": []string{"README.md"},
	}
	p["ref"] = "refs/heads/main"
	p["before"], p["after"] = before, after
	p["created"], p["deleted"], p["forced"] = false, false, false
	p["base_ref"] = nil
	p["compare"] = "https://github.com/octocat/Hello-World/compare/" + before[:12] + "..." + after[:12]
	p["commits"] = []any{commit}
	p["head_commit"] = commit
	p["pusher"] = map[string]any{"name": "octocat", "email": "octocat@github.com"}
}

// issue adds an issues (or issue_comment) event's members to p: issue
// number, by user, closed after action "closed".
func (g githubSample) issue(p map[string]any, event, action string, number int64, user map[string]any, now time.Time) {
	eventID := g.eventID
	state := "open"
	if action == "closed" {
		state = "closed"
	}
	p["issue"] = map[string]any{
		"url": fmt.Sprintf("https://api.github.com/repos/octocat/Hello-World/issues/%d", number),
		"id":  g.num("issue", 1000000000), "node_id": "I_kwDO" + derive.String("issuenode/"+eventID, 16, base62),
		"html_url": fmt.Sprintf("https://github.com/octocat/Hello-World/issues/%d", number),
		"number":   number, "title": "Deliveries answered 401 behind the proxy", "user": user,
		"labels": []any{map[string]any{"id": 208045946, "name": "bug", "color": "d73a4a", "default": true}},
		"state":  state, "locked": false, "comments": 1, "created_at": githubTime(now.Add(-time.Hour)), "updated_at": githubTime(now),
		"closed_at": nil, "author_association": "OWNER",
		"body": "Twilio signs the public URL; set HUB_PUBLIC_URL.",
	}
	if event == "issue_comment" {
		p["comment"] = map[string]any{
			"id": g.num("comment", 2000000000), "node_id": "IC_kwDO" + derive.String("cnode/"+eventID, 16, base62),
			"html_url": fmt.Sprintf("https://github.com/octocat/Hello-World/issues/%d#issuecomment-1", number),
			"user":     user, "created_at": githubTime(now), "updated_at": githubTime(now), "author_association": "OWNER",
			"body": "Fixed by setting HUB_PUBLIC_URL to the proxy's address.",
		}
	}
}
