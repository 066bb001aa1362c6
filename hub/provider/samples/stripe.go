package samples

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
)

// StripeAPIVersion is the API version Stripe samples carry.
const StripeAPIVersion = "2024-06-20"

// stripeID derives a Stripe-style id ("<prefix>_1" + 23 base62 characters)
// from seed, deterministically.
func stripeID(prefix, seed string) string {
	return prefix + "_1" + derive.String(prefix+"/"+seed, 23, base62)
}

// stripe returns a Stripe event: id (eventID), object "event",
// api_version, created (now), data.object, livemode false,
// pending_webhooks, request and type. When data is nil, data.object is a
// realistic object: a subscription for customer.subscription.* types, a
// customer for customer.*, a payment intent for payment_intent.*, an
// invoice for invoice.*, a checkout session for checkout.session.*, and a
// small generic object otherwise. Derived ids depend only on eventID, so
// the output is deterministic given its inputs. data, when not nil, must
// be valid JSON and becomes data.object.
func stripe(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	data, err := sampleData("stripe", eventID, eventType, data, func() any { return stripeSampleObject(eventID, eventType, now) })
	if err != nil {
		return nil, err
	}
	type request struct {
		ID             string `json:"id"`
		IdempotencyKey string `json:"idempotency_key"`
	}
	type eventData struct {
		Object json.RawMessage `json:"object"`
	}
	return json.MarshalIndent(struct {
		ID              string    `json:"id"`
		Object          string    `json:"object"`
		APIVersion      string    `json:"api_version"`
		Created         int64     `json:"created"`
		Data            eventData `json:"data"`
		Livemode        bool      `json:"livemode"`
		PendingWebhooks int       `json:"pending_webhooks"`
		Request         request   `json:"request"`
		Type            string    `json:"type"`
	}{
		ID:              eventID,
		Object:          "event",
		APIVersion:      StripeAPIVersion,
		Created:         now.Unix(),
		Data:            eventData{data},
		PendingWebhooks: 1,
		Request:         request{stripeID("req", eventID), derive.UUID("idem/" + eventID)},
		Type:            eventType,
	}, "", "  ")
}

func stripeSampleObject(eventID, eventType string, now time.Time) any {
	created := now.Add(-30 * 24 * time.Hour).Unix()
	customer := stripeID("cus", eventID)
	switch {
	case strings.HasPrefix(eventType, "customer.subscription."):
		return stripeSubscription(eventID, strings.TrimPrefix(eventType, "customer.subscription."), created, now)
	case strings.HasPrefix(eventType, "customer."):
		return map[string]any{
			"id": customer, "object": "customer", "address": nil, "balance": 0, "created": created,
			"currency": "usd", "delinquent": false, "description": nil, "email": sampleEmail(eventID),
			"invoice_prefix":   strings.ToUpper(derive.String("inv/"+eventID, 8, "0123456789abcdef")),
			"invoice_settings": map[string]any{"default_payment_method": stripeID("pm", eventID), "footer": nil},
			"livemode":         false, "metadata": map[string]any{"user_id": "user_" + derive.String("u/"+eventID, 12, base62)},
			"name": "Ada Lovelace", "phone": nil, "preferred_locales": []string{"en"}, "tax_exempt": "none",
		}
	case strings.HasPrefix(eventType, "payment_intent."):
		status := "succeeded"
		switch strings.TrimPrefix(eventType, "payment_intent.") {
		case "payment_failed":
			status = "requires_payment_method"
		case "canceled":
			status = "canceled"
		case "created":
			status = "requires_confirmation"
		case "processing":
			status = "processing"
		}
		return map[string]any{
			"id": stripeID("pi", eventID), "object": "payment_intent", "amount": 1200, "amount_received": 1200,
			"capture_method": "automatic", "client_secret": stripeID("pi", eventID) + "_secret_" + derive.String("cs/"+eventID, 25, base62),
			"confirmation_method": "automatic", "created": now.Unix(), "currency": "usd", "customer": customer,
			"description": "Pro plan, monthly", "last_payment_error": nil, "latest_charge": stripeID("ch", eventID),
			"livemode": false, "metadata": map[string]any{"order_id": derive.String("order/"+eventID, 6, "0123456789")},
			"payment_method": stripeID("pm", eventID), "payment_method_types": []string{"card"},
			"receipt_email": sampleEmail(eventID), "status": status,
		}
	case strings.HasPrefix(eventType, "invoice."):
		return map[string]any{
			"id": stripeID("in", eventID), "object": "invoice", "account_country": "US", "amount_due": 1200,
			"amount_paid": 1200, "amount_remaining": 0, "attempt_count": 1, "billing_reason": "subscription_cycle",
			"collection_method": "charge_automatically", "created": now.Unix(), "currency": "usd", "customer": customer,
			"customer_email": sampleEmail(eventID), "hosted_invoice_url": "https://invoice.stripe.com/i/acct_" + derive.String("acct", 16, base62),
			"livemode": false, "number": strings.ToUpper(derive.String("inv/"+eventID, 8, "0123456789abcdef")) + "-0001",
			"paid": true, "period_start": created, "period_end": now.Unix(), "status": "paid",
			"subscription": stripeID("sub", eventID), "subtotal": 1000, "tax": 200, "total": 1200,
		}
	case strings.HasPrefix(eventType, "checkout.session."):
		return map[string]any{
			"id": "cs_test_" + derive.String("cs/"+eventID, 58, base62), "object": "checkout.session",
			"amount_subtotal": 1000, "amount_total": 1200, "cancel_url": "https://example.com/cancel",
			"client_reference_id": "user_" + derive.String("u/"+eventID, 12, base62), "created": now.Unix(), "currency": "usd",
			"customer": customer, "customer_details": map[string]any{"email": sampleEmail(eventID), "name": "Ada Lovelace"},
			"livemode": false, "mode": "subscription", "payment_status": "paid", "status": "complete",
			"subscription": stripeID("sub", eventID), "success_url": "https://example.com/success?session_id={CHECKOUT_SESSION_ID}",
		}
	default:
		entity, _, _ := strings.Cut(eventType, ".")
		return map[string]any{
			"id": stripeID(entityPrefix(entity), eventID), "object": entity, "created": created,
			"livemode": false, "metadata": map[string]any{},
		}
	}
}

// stripeSubscription is a subscription object after action ("deleted":
// canceled, "paused", "trial_will_end": trialing), created at created.
func stripeSubscription(eventID, action string, created int64, now time.Time) map[string]any {
	status := "active"
	switch action {
	case "deleted":
		status = "canceled"
	case "paused":
		status = "paused"
	case "trial_will_end":
		status = "trialing"
	}
	price := map[string]any{
		"id": stripeID("price", eventID), "object": "price", "active": true, "currency": "usd",
		"product": stripeID("prod", eventID), "unit_amount": 1000, "type": "recurring",
		"recurring": map[string]any{"interval": "month", "interval_count": 1, "usage_type": "licensed"},
	}
	return map[string]any{
		"id":                     stripeID("sub", eventID),
		"object":                 "subscription",
		"billing_cycle_anchor":   created,
		"cancel_at_period_end":   false,
		"canceled_at":            nil,
		"collection_method":      "charge_automatically",
		"created":                created,
		"currency":               "usd",
		"current_period_start":   now.Unix(),
		"current_period_end":     now.AddDate(0, 1, 0).Unix(),
		"customer":               stripeID("cus", eventID),
		"default_payment_method": stripeID("pm", eventID),
		"items": map[string]any{
			"object": "list",
			"data": []any{map[string]any{
				"id": stripeID("si", eventID), "object": "subscription_item", "created": created,
				"price": price, "quantity": 1,
			}},
			"has_more": false,
			"url":      "/v1/subscription_items?subscription=" + stripeID("sub", eventID),
		},
		"latest_invoice": stripeID("in", eventID),
		"livemode":       false,
		"metadata":       map[string]any{"plan": "pro", "credits": "1000", "email": sampleEmail(eventID)},
		"start_date":     created,
		"status":         status,
	}
}
