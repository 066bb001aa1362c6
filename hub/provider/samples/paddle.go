package samples

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
)

// paddle returns a Paddle Billing notification body: event_id, event_type,
// occurred_at (now, RFC 3339 with microseconds), notification_id and data.
// When data is nil it builds a realistic entity: a subscription for
// subscription.* types, a customer for customer.*, a transaction for
// transaction.*, and a small generic object otherwise. Every derived id
// (ntf_…, sub_…, ctm_…) is a function of eventID, so the output is
// deterministic given its inputs. data, when not nil, must be valid JSON.
func paddle(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("paddle: sample needs an event id and type")
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(paddleSampleData(eventID, eventType, now)); err != nil {
			return nil, err
		}
	} else if !json.Valid(data) {
		return nil, errors.New("paddle: sample data is not valid JSON")
	}
	return json.Marshal(struct {
		Data           json.RawMessage `json:"data"`
		EventID        string          `json:"event_id"`
		EventType      string          `json:"event_type"`
		OccurredAt     string          `json:"occurred_at"`
		NotificationID string          `json:"notification_id"`
	}{
		Data:           data,
		EventID:        eventID,
		EventType:      eventType,
		OccurredAt:     paddleTime(now),
		NotificationID: paddleID("ntf", eventID),
	})
}

// paddleTime formats t the way Paddle does: UTC, microseconds, "Z".
func paddleTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// paddleID derives a Paddle-style id ("<prefix>_01" + 24 lowercase
// Crockford base32 characters) from seed, deterministically.
func paddleID(prefix, seed string) string {
	return prefix + "_01" + derive.String(prefix+"/"+seed, 24, "0123456789abcdefghjkmnpqrstvwxyz")
}

func paddleSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-30 * 24 * time.Hour)
	switch entity {
	case "subscription":
		status := "active"
		switch action {
		case "canceled", "paused", "past_due", "trialing":
			status = action
		}
		var canceledAt, pausedAt, nextBilledAt any
		nextBilledAt = paddleTime(now.AddDate(0, 1, 0))
		switch status {
		case "canceled":
			canceledAt, nextBilledAt = paddleTime(now), nil
		case "paused":
			pausedAt, nextBilledAt = paddleTime(now), nil
		}
		cycle := map[string]any{"interval": "month", "frequency": 1}
		credits := 1000
		return map[string]any{
			"id":              paddleID("sub", eventID),
			"status":          status,
			"customer_id":     paddleID("ctm", eventID),
			"address_id":      paddleID("add", eventID),
			"business_id":     nil,
			"currency_code":   "USD",
			"created_at":      paddleTime(created),
			"updated_at":      paddleTime(now),
			"started_at":      paddleTime(created),
			"first_billed_at": paddleTime(created),
			"next_billed_at":  nextBilledAt,
			"paused_at":       pausedAt,
			"canceled_at":     canceledAt,
			"collection_mode": "automatic",
			"billing_details": nil,
			"current_billing_period": map[string]any{
				"starts_at": paddleTime(now),
				"ends_at":   paddleTime(now.AddDate(0, 1, 0)),
			},
			"billing_cycle":    cycle,
			"scheduled_change": nil,
			"items": []any{map[string]any{
				"status":             "active",
				"quantity":           1,
				"recurring":          true,
				"created_at":         paddleTime(created),
				"updated_at":         paddleTime(now),
				"previous_billed_at": paddleTime(now),
				"next_billed_at":     nextBilledAt,
				"trial_dates":        nil,
				"price": map[string]any{
					"id":            paddleID("pri", eventID),
					"product_id":    paddleID("pro", eventID),
					"description":   "Pro plan, monthly",
					"tax_mode":      "account_setting",
					"billing_cycle": cycle,
					"trial_period":  nil,
					"unit_price":    map[string]any{"amount": "1000", "currency_code": "USD"},
				},
			}},
			"custom_data": map[string]any{"plan": "pro", "credits": credits, "email": sampleEmail(eventID)},
			"import_meta": nil,
		}
	case "customer":
		return map[string]any{
			"id":                paddleID("ctm", eventID),
			"name":              "Ada Lovelace",
			"email":             sampleEmail(eventID),
			"locale":            "en",
			"status":            "active",
			"created_at":        paddleTime(created),
			"updated_at":        paddleTime(now),
			"custom_data":       nil,
			"import_meta":       nil,
			"marketing_consent": false,
		}
	case "transaction":
		return map[string]any{
			"id":              paddleID("txn", eventID),
			"status":          paddleTransactionStatus(action),
			"customer_id":     paddleID("ctm", eventID),
			"subscription_id": paddleID("sub", eventID),
			"currency_code":   "USD",
			"origin":          "subscription_recurring",
			"collection_mode": "automatic",
			"billed_at":       paddleTime(now),
			"created_at":      paddleTime(now),
			"updated_at":      paddleTime(now),
			"details": map[string]any{
				"totals": map[string]any{"subtotal": "1000", "tax": "200", "total": "1200", "currency_code": "USD"},
			},
		}
	default:
		return map[string]any{
			"id":         paddleID(entityPrefix(entity), eventID),
			"status":     "active",
			"created_at": paddleTime(created),
			"updated_at": paddleTime(now),
		}
	}
}

// paddleTransactionStatus maps a transaction.* action to the status the
// entity has after it.
func paddleTransactionStatus(action string) string {
	switch action {
	case "billed", "paid", "completed", "canceled", "past_due", "ready":
		return action
	case "created":
		return "draft"
	}
	return "completed"
}
