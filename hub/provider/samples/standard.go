package samples

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
)

// standard returns a body in the shape the specification recommends:
// {"type", "timestamp" (now, RFC 3339 with microseconds), "data"}. When
// data is nil it builds a realistic object: an email for email.* types (in
// the style of Resend), a contact for contact.*, and a small generic
// object otherwise. Derived ids depend only on eventID, so the output is
// deterministic given its inputs. data, when not nil, must be valid JSON.
func standard(name, eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	data, err := sampleData(name, eventID, eventType, data, func() any { return standardSampleData(eventID, eventType, now) })
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{eventType, paddleTime(now), data})
}

func standardSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-2 * time.Second).UTC().Format("2006-01-02 15:04:05.000000+00")
	switch entity {
	case "email":
		return map[string]any{
			"email_id":     derive.UUID("email/" + eventID),
			"created_at":   created,
			"from":         "Analytical Engines <onboarding@example.com>",
			"to":           []string{sampleEmail(eventID)},
			"subject":      "Your receipt for order #" + derive.String("order/"+eventID, 6, "0123456789"),
			"broadcast_id": nil,
			"headers": []any{
				map[string]any{"name": "X-Entity-Ref-ID", "value": derive.UUID("ref/" + eventID)},
			},
			"tags": map[string]any{"category": "receipt", "plan": "pro"},
			"click": func() any {
				if action != "clicked" {
					return nil
				}
				return map[string]any{
					"ipAddress": "192.0.2.10",
					"link":      "https://example.com/orders?utm_source=email",
					"timestamp": paddleTime(now),
					"userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
				}
			}(),
			"bounce": func() any {
				if action != "bounced" {
					return nil
				}
				return map[string]any{
					"message": "The recipient's mailbox does not exist.",
					"subType": "General",
					"type":    "Permanent",
				}
			}(),
		}
	case "contact":
		return map[string]any{
			"id":           derive.UUID("contact/" + eventID),
			"audience_id":  derive.UUID("audience/" + eventID),
			"segment_ids":  []string{derive.UUID("segment/" + eventID)},
			"created_at":   created,
			"updated_at":   paddleTime(now),
			"email":        sampleEmail(eventID),
			"first_name":   "Ada",
			"last_name":    "Lovelace",
			"unsubscribed": action == "deleted",
			"properties":   map[string]any{"company": "Analytical Engines Ltd", "plan": "pro", "seats": 5},
		}
	default:
		return map[string]any{
			"id":         derive.UUID(entity + "/" + eventID),
			"object":     entity,
			"status":     "active",
			"created_at": created,
			"updated_at": paddleTime(now),
			"metadata":   map[string]any{"source": "hookhub", "note": "generic sample; pass --data for a real payload"},
		}
	}
}
