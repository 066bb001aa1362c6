package samples

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
)

// clerkInstanceID is the instance every sample comes from.
var clerkInstanceID = clerkID("ins", "instance")

// clerkID derives a Clerk-style id ("<prefix>_" + 27 base62 characters)
// from seed, deterministically.
func clerkID(prefix, seed string) string {
	return prefix + "_" + derive.String(prefix+"/"+seed, 27, base62)
}

// clerk returns a Clerk event body: data, event_attributes, instance_id,
// object "event", timestamp (now, in milliseconds) and type. When data is
// nil it builds a realistic entity: a user for user.* types (with names and
// a primary email address; user.deleted gets Clerk's deleted-object stub),
// a session for session.*, an organization for organization.*, and a small
// generic object otherwise. Derived ids depend only on eventID, so the
// output is deterministic given its inputs. data, when not nil, must be
// valid JSON.
func clerk(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	data, err := sampleData("clerk", eventID, eventType, data, func() any { return clerkSampleData(eventID, eventType, now) })
	if err != nil {
		return nil, err
	}
	type httpRequest struct {
		ClientIP  string `json:"client_ip"`
		UserAgent string `json:"user_agent"`
	}
	type attributes struct {
		HTTPRequest httpRequest `json:"http_request"`
	}
	return json.Marshal(struct {
		Data            json.RawMessage `json:"data"`
		EventAttributes attributes      `json:"event_attributes"`
		InstanceID      string          `json:"instance_id"`
		Object          string          `json:"object"`
		Timestamp       int64           `json:"timestamp"`
		Type            string          `json:"type"`
	}{
		Data: data,
		EventAttributes: attributes{httpRequest{
			ClientIP:  "192.0.2.10",
			UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		}},
		InstanceID: clerkInstanceID,
		Object:     "event",
		Timestamp:  now.UnixMilli(),
		Type:       eventType,
	})
}

func clerkSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	ms := now.UnixMilli()
	created := now.Add(-time.Minute).UnixMilli()
	switch entity {
	case "user":
		userID := clerkID("user", eventID)
		if action == "deleted" {
			return map[string]any{"deleted": true, "id": userID, "object": "user"}
		}
		emailID := clerkID("idn", eventID)
		return map[string]any{
			"id":                       userID,
			"object":                   "user",
			"external_id":              nil,
			"username":                 nil,
			"first_name":               "Ada",
			"last_name":                "Lovelace",
			"image_url":                "https://img.clerk.com/eyJ0eXBlIjoiZGVmYXVsdCJ9",
			"has_image":                false,
			"primary_email_address_id": emailID,
			"primary_phone_number_id":  nil,
			"primary_web3_wallet_id":   nil,
			"email_addresses": []any{map[string]any{
				"id":            emailID,
				"object":        "email_address",
				"email_address": sampleEmail(eventID),
				"linked_to":     []any{},
				"verification":  map[string]any{"status": "verified", "strategy": "email_code", "attempts": 1, "expire_at": nil},
			}},
			"phone_numbers":      []any{},
			"web3_wallets":       []any{},
			"external_accounts":  []any{},
			"password_enabled":   true,
			"two_factor_enabled": false,
			"public_metadata":    map[string]any{},
			"private_metadata":   map[string]any{},
			"unsafe_metadata":    map[string]any{},
			"last_sign_in_at":    nil,
			"created_at":         created,
			"updated_at":         ms,
		}
	case "session":
		return map[string]any{
			"id":             clerkID("sess", eventID),
			"object":         "session",
			"user_id":        clerkID("user", eventID),
			"client_id":      clerkID("client", eventID),
			"status":         clerkSessionStatus(action),
			"last_active_at": ms,
			"expire_at":      now.Add(7 * 24 * time.Hour).UnixMilli(),
			"abandon_at":     now.Add(30 * 24 * time.Hour).UnixMilli(),
			"created_at":     created,
			"updated_at":     ms,
		}
	case "organization":
		return map[string]any{
			"id":                      clerkID("org", eventID),
			"object":                  "organization",
			"name":                    "Analytical Engines Ltd",
			"slug":                    "analytical-engines",
			"members_count":           1,
			"max_allowed_memberships": 5,
			"public_metadata":         map[string]any{},
			"private_metadata":        map[string]any{},
			"created_by":              clerkID("user", eventID),
			"created_at":              created,
			"updated_at":              ms,
		}
	default:
		return map[string]any{
			"id":         clerkID(entityPrefix(entity), eventID),
			"object":     entity,
			"created_at": created,
			"updated_at": ms,
		}
	}
}

// clerkSessionStatus maps a session.* action to the session's status.
func clerkSessionStatus(action string) string {
	switch action {
	case "ended", "removed", "revoked", "expired", "abandoned":
		return action
	}
	return "active"
}
