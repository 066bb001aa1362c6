package samples

import (
	"encoding/json"
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
	data, err := sampleData("paddle", eventID, eventType, data, func() any { return paddleSampleData(eventID, eventType, now) })
	if err != nil {
		return nil, err
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

// paddleSampleData builds the data of a Paddle notification in the shape
// Paddle documents for its entity (developer.paddle.com, "Webhooks" and
// the entity's API reference), every field present, null when empty, as
// Paddle sends it: TestOfficialSDKs parses each modelled type with
// Paddle's Node SDK and fails on a field it does not know or misses.
func paddleSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-30 * 24 * time.Hour)
	product := map[string]any{
		"id":           paddleID("pro", eventID),
		"name":         "Pro plan",
		"type":         "standard",
		"description":  "Everything in Starter, plus priority support.",
		"tax_category": "standard",
		"image_url":    nil,
		"custom_data":  nil,
		"status":       "active",
		"import_meta":  nil,
		"created_at":   paddleTime(created),
		"updated_at":   paddleTime(created),
	}
	switch entity {
	case "subscription":
		return paddleSubscription(eventID, action, now, product)
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
		return paddleTransaction(eventID, action, now, paddlePrice(eventID, now, true), product)
	default:
		return map[string]any{
			"id":         paddleID(entityPrefix(entity), eventID),
			"status":     "active",
			"created_at": paddleTime(created),
			"updated_at": paddleTime(now),
		}
	}
}

// paddleCycle is the samples' billing cycle.
func paddleCycle() map[string]any { return map[string]any{"interval": "month", "frequency": 1} }

// paddlePrice builds a price entity, created 30 days before now; a
// subscription's item carries it without its timestamps (withTimes
// false).
func paddlePrice(eventID string, now time.Time, withTimes bool) map[string]any {
	p := map[string]any{
		"id":                   paddleID("pri", eventID),
		"product_id":           paddleID("pro", eventID),
		"description":          "Pro plan, monthly",
		"type":                 "standard",
		"name":                 "Monthly",
		"billing_cycle":        paddleCycle(),
		"trial_period":         nil,
		"tax_mode":             "account_setting",
		"unit_price":           map[string]any{"amount": "1000", "currency_code": "USD"},
		"unit_price_overrides": []any{},
		"quantity":             map[string]any{"minimum": 1, "maximum": 1},
		"status":               "active",
		"custom_data":          nil,
		"import_meta":          nil,
	}
	if withTimes {
		created := paddleTime(now.Add(-30 * 24 * time.Hour))
		p["created_at"], p["updated_at"] = created, created
	}
	return p
}

// paddleSubscription builds a subscription entity after action (its
// status when it names one), created 30 days before now, with one item of
// product.
func paddleSubscription(eventID, action string, now time.Time, product map[string]any) map[string]any {
	created := now.Add(-30 * 24 * time.Hour)
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
	credits := 1000
	sub := map[string]any{
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
		"discount":        nil,
		"collection_mode": "automatic",
		"billing_details": nil,
		"current_billing_period": map[string]any{
			"starts_at": paddleTime(now),
			"ends_at":   paddleTime(now.AddDate(0, 1, 0)),
		},
		"billing_cycle":    paddleCycle(),
		"scheduled_change": nil,
		"items": []any{map[string]any{
			"status":               "active",
			"quantity":             1,
			"recurring":            true,
			"created_at":           paddleTime(created),
			"updated_at":           paddleTime(now),
			"previously_billed_at": paddleTime(now),
			"next_billed_at":       nextBilledAt,
			"trial_dates":          nil,
			"price":                paddlePrice(eventID, now, false),
			"product":              product,
		}},
		"custom_data": map[string]any{"plan": "pro", "credits": credits, "email": sampleEmail(eventID)},
		"import_meta": nil,
	}
	if action == "created" {
		// Only subscription.created names the transaction that
		// created the subscription.
		sub["transaction_id"] = paddleID("txn", eventID)
	}
	return sub
}

// paddleTransaction builds a transaction entity after action: one item of
// price (and product) at 10.00 USD plus 2.00 tax, billed, with a captured
// payment once paid and a declined one after a failed payment.
func paddleTransaction(eventID, action string, now time.Time, price, product map[string]any) map[string]any {
	status := paddleTransactionStatus(action)
	totals := map[string]any{"subtotal": "1000", "discount": "0", "tax": "200", "total": "1200"}
	money := map[string]any{
		"subtotal": "1000", "discount": "0", "tax": "200", "total": "1200", "credit": "0",
		"credit_to_balance": "0", "balance": "1200", "grand_total": "1200", "grand_total_tax": "200",
		"fee": nil, "earnings": nil, "currency_code": "USD",
	}
	billed := status == "billed" || status == "paid" || status == "completed" || status == "past_due"
	var invoiceID, invoiceNumber, billedAt, payoutTotals any
	if billed {
		invoiceID, invoiceNumber, billedAt = paddleID("inv", eventID), "325-"+derive.String("invoice/"+eventID, 5, "0123456789"), paddleTime(now)
	}
	payments := []any{}
	card := map[string]any{
		"type": "card",
		"card": map[string]any{
			"type": "visa", "last4": "4242", "expiry_month": 1, "expiry_year": now.Year() + 3,
			"cardholder_name": "Ada Lovelace",
		},
		"paypal":                 nil,
		"south_korea_local_card": nil,
		"underlying_details":     nil,
	}
	attempt := func(state string, errorCode, capturedAt any) map[string]any {
		return map[string]any{
			"payment_attempt_id":       derive.UUID("attempt/" + state + "/" + eventID),
			"payment_method_id":        paddleID("paymtd", eventID),
			"stored_payment_method_id": derive.UUID("stored/" + eventID),
			"amount":                   "1200",
			"status":                   state,
			"error_code":               errorCode,
			"method_details":           card,
			"created_at":               paddleTime(now),
			"captured_at":              capturedAt,
		}
	}
	switch status {
	case "paid", "completed":
		payments = append(payments, attempt("captured", nil, paddleTime(now)))
		money["balance"], money["credit"] = "0", "0"
		money["fee"], money["earnings"] = "110", "1090"
		payoutTotals = map[string]any{
			"subtotal": "1000", "discount": "0", "tax": "200", "total": "1200", "credit": "0",
			"credit_to_balance": "0", "balance": "0", "grand_total": "1200", "grand_total_tax": "200",
			"fee": "110", "earnings": "1090", "currency_code": "USD", "exchange_rate": "1", "fee_rate": "0.05",
		}
	}
	if action == "payment_failed" || status == "past_due" {
		payments = append(payments, attempt("error", "declined", nil))
	}
	return map[string]any{
		"id":              paddleID("txn", eventID),
		"status":          status,
		"customer_id":     paddleID("ctm", eventID),
		"address_id":      paddleID("add", eventID),
		"business_id":     nil,
		"custom_data":     nil,
		"currency_code":   "USD",
		"origin":          "subscription_recurring",
		"subscription_id": paddleID("sub", eventID),
		"invoice_id":      invoiceID,
		"invoice_number":  invoiceNumber,
		"collection_mode": "automatic",
		"discount_id":     nil,
		"billing_details": nil,
		"billing_period": map[string]any{
			"starts_at": paddleTime(now),
			"ends_at":   paddleTime(now.AddDate(0, 1, 0)),
		},
		"items": []any{map[string]any{"price": price, "quantity": 1, "proration": nil}},
		"details": map[string]any{
			"tax_rates_used": []any{map[string]any{"tax_rate": "0.2", "totals": totals}},
			"totals":         money,
			"adjusted_totals": map[string]any{
				"subtotal": "1000", "tax": "200", "total": "1200", "grand_total": "1200", "grand_total_tax": "200",
				"fee": money["fee"], "earnings": money["earnings"], "currency_code": "USD", "retained_fee": "0",
			},
			"payout_totals":          payoutTotals,
			"adjusted_payout_totals": nil,
			"line_items": []any{map[string]any{
				"id":          paddleID("txnitm", eventID),
				"price_id":    price["id"],
				"quantity":    1,
				"proration":   nil,
				"tax_rate":    "0.2",
				"unit_totals": totals,
				"totals":      totals,
				"product":     product,
			}},
		},
		"payments":   payments,
		"checkout":   map[string]any{"url": "https://example.com/pay?_ptxn=" + paddleID("txn", eventID)},
		"created_at": paddleTime(now.Add(-time.Minute)),
		"updated_at": paddleTime(now),
		"billed_at":  billedAt,
		"revised_at": nil,
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
	case "payment_failed":
		return "past_due" // a renewal whose payment was declined
	}
	return "completed"
}
