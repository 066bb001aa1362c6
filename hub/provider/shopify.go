package provider

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of Shopify webhook deliveries, in canonical form. Newer
// "events" webhooks send the same values under lowercase, unprefixed names
// (shopify-hmac-sha256, shopify-webhook-id, shopify-topic, …); Verify
// reads those when the classic ones are absent.
const (
	ShopifyHmacHeader        = "X-Shopify-Hmac-Sha256"
	ShopifyWebhookIDHeader   = "X-Shopify-Webhook-Id"
	ShopifyTopicHeader       = "X-Shopify-Topic"
	ShopifyTriggeredAtHeader = "X-Shopify-Triggered-At"
)

// Shopify verifies Shopify webhook deliveries.
//
// The X-Shopify-Hmac-Sha256 header (or shopify-hmac-sha256) is the
// standard base64 of the HMAC-SHA256 of the raw body, keyed with the app's
// client secret bytes. A hex digest of the same MAC is rejected. Shopify
// sends one signature and keeps signing with the old secret for up to an
// hour after a rotation, so every secret is tried. Shopify signs no
// timestamp (X-Shopify-Triggered-At is not covered): replays are caught by
// deduplication on the event id alone.
//
// The event id is the X-Shopify-Webhook-Id header (Shopify's idempotency
// key) and the type the X-Shopify-Topic header with '/' replaced by '.'
// ("orders/create" becomes "orders.create"). Neither header is covered by
// the signature. OccurredAt stays zero: X-Shopify-Triggered-At is not
// signed either, so it never becomes an occurred-at (anyone replaying a
// delivery could set it, and ordering by occurred-at would then let an
// old change win over newer ones); the body's own times (updated_at, …)
// mean different things from topic to topic.
//
// A Shopify is safe for concurrent use. It implements Provider and Sender.
type Shopify struct {
	keys []*macKey
}

var (
	_ Provider = (*Shopify)(nil)
	_ Sender   = (*Shopify)(nil)
)

// NewShopify returns a Shopify verifier that accepts a signature made with
// any of secrets (app client secrets, used as bytes; the first one signs
// in Sign). It fails when secrets is empty or a secret is the empty
// string. Shopify signs no timestamp, so it ignores o.
func NewShopify(secrets []string, o Options) (*Shopify, error) {
	keys, err := rawKeys("shopify", secrets)
	if err != nil {
		return nil, err
	}
	return &Shopify{keys: keys}, nil
}

// Name returns "shopify".
func (s *Shopify) Name() string { return "shopify" }

// Static errors of the Shopify verifier.
var (
	errShopifyNoHeader  = errSig("missing X-Shopify-Hmac-Sha256 header")
	errShopifyMalformed = errSig("X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes")
	errShopifyMismatch  = errSig("X-Shopify-Hmac-Sha256 matches no secret")
)

// shopifyGet returns the classic X-Shopify-<name> header, or else the
// unprefixed shopify-<name> one.
func shopifyGet(h Header, classic, unprefixed string) string {
	if v := h.Get(classic); v != "" {
		return v
	}
	return h.Get(unprefixed)
}

// Verify authenticates a Shopify delivery and returns its event.
func (s *Shopify) Verify(r Request) (Event, error) {
	h, body := r.Header, r.Body
	header := shopifyGet(h, ShopifyHmacHeader, "Shopify-Hmac-Sha256")
	if header == "" {
		return Event{}, errShopifyNoHeader
	}
	var sig [1][macSize]byte
	if !parseShopifyHmac(&sig[0], header) {
		return Event{}, errShopifyMalformed
	}
	if !authenticate(s.keys, sig[:], body, 0) {
		return Event{}, errShopifyMismatch
	}
	id := shopifyGet(h, ShopifyWebhookIDHeader, "Shopify-Webhook-Id")
	if err := checkText("missing X-Shopify-Webhook-Id header", "X-Shopify-Webhook-Id", id, maxEventIDLen); err != nil {
		return Event{}, err
	}
	topic := shopifyGet(h, ShopifyTopicHeader, "Shopify-Topic")
	if err := checkText("missing X-Shopify-Topic header", "X-Shopify-Topic", topic, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: id, Type: strings.ReplaceAll(topic, "/", "."), Signature: header}, nil
}

// parseShopifyHmac decodes an X-Shopify-Hmac-Sha256 value, the canonical
// padded standard base64 of 32 bytes, into dst. Hex, URL-safe or unpadded
// encodings fail.
func parseShopifyHmac(dst *[macSize]byte, header string) bool {
	return decodeB64MAC(dst, header)
}

// shopifyTopic maps a hub event type to a Shopify topic: "orders.create"
// becomes "orders/create".
func shopifyTopic(eventType string) string { return strings.ReplaceAll(eventType, ".", "/") }

// Sign returns the X-Shopify-Hmac-Sha256 header for body, signed with the
// first secret, with X-Shopify-Webhook-Id (eventID), X-Shopify-Topic
// (eventType, "orders.create" as "orders/create"; none when eventType is
// empty), X-Shopify-Shop-Domain, X-Shopify-API-Version,
// X-Shopify-Triggered-At (now), X-Shopify-Event-Id and Content-Type:
// application/json. The target is "/webhooks/shopify".
func (s *Shopify) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	if hasControl(eventType) {
		return nil, "", errors.New("shopify: invalid event type")
	}
	if eventID == "" || len(eventID) > maxEventIDLen || hasControl(eventID) {
		return nil, "", errors.New("shopify: event id is not a valid webhook id")
	}
	var mac [macSize]byte
	s.keys[0].sum(&mac, body, 0)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Shopify-Captain-Hook")
	h.Set(ShopifyHmacHeader, base64.StdEncoding.EncodeToString(mac[:]))
	h.Set(ShopifyWebhookIDHeader, eventID)
	h.Set("X-Shopify-Shop-Domain", "hookhub-dev.myshopify.com")
	h.Set("X-Shopify-API-Version", "2025-07")
	h.Set("X-Shopify-Event-Id", uuidLike("event/"+eventID))
	h.Set(ShopifyTriggeredAtHeader, now.UTC().Format("2006-01-02T15:04:05.000000000Z"))
	if eventType != "" {
		h.Set(ShopifyTopicHeader, shopifyTopic(eventType))
	}
	return h, "/webhooks/shopify", nil
}

// shopifyNumber derives a Shopify-style numeric id (13 digits) from seed.
func shopifyNumber(seed string) int64 {
	n := int64(1)
	for _, c := range derive("shopify/"+seed, 12, "0123456789") {
		n = n*10 + int64(c-'0')
	}
	return n
}

// Sample returns the resource a Shopify topic carries (Shopify payloads
// have no envelope): an order for orders.* types, a product for
// products.*, a customer for customers.*, and a small generic object
// otherwise. Ids depend only on eventID, so the output is deterministic
// given its inputs. data, when not nil, must be valid JSON and is the
// whole body.
func (s *Shopify) Sample(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("shopify: sample needs an event id and type")
	}
	if data != nil {
		if !json.Valid(data) {
			return nil, errors.New("shopify: sample data is not valid JSON")
		}
		return data, nil
	}
	return json.Marshal(shopifySampleResource(eventID, eventType, now))
}

func shopifySampleResource(eventID, eventType string, now time.Time) any {
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-07:00") }
	resource, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-time.Minute)
	customerID := shopifyNumber("customer/" + eventID)
	customer := map[string]any{
		"id": customerID, "email": sampleEmail(eventID), "created_at": ts(created.Add(-48 * time.Hour)),
		"updated_at": ts(now), "first_name": "Ada", "last_name": "Lovelace", "state": "enabled",
		"verified_email": true, "currency": "USD", "tags": "",
		"admin_graphql_api_id": "gid://shopify/Customer/" + strconv.FormatInt(customerID, 10),
	}
	switch resource {
	case "orders":
		id := shopifyNumber("order/" + eventID)
		var cancelledAt, cancelReason any
		financial := "paid"
		if action == "cancelled" {
			cancelledAt, cancelReason, financial = ts(now), "customer", "refunded"
		}
		return map[string]any{
			"id": id, "admin_graphql_api_id": "gid://shopify/Order/" + strconv.FormatInt(id, 10),
			"name": "#" + derive("ordername/"+eventID, 4, "123456789"), "order_number": 1001,
			"email": sampleEmail(eventID), "created_at": ts(created), "updated_at": ts(now),
			"processed_at": ts(created), "cancelled_at": cancelledAt, "cancel_reason": cancelReason,
			"currency": "USD", "presentment_currency": "USD", "financial_status": financial,
			"fulfillment_status": nil, "confirmed": true, "test": false,
			"subtotal_price": "10.00", "total_tax": "2.00", "total_price": "12.00", "total_discounts": "0.00",
			"token":    derive("token/"+eventID, 32, "0123456789abcdef"),
			"customer": customer,
			"line_items": []any{map[string]any{
				"id": shopifyNumber("line/" + eventID), "product_id": shopifyNumber("product/" + eventID),
				"variant_id": shopifyNumber("variant/" + eventID), "title": "Analytical Engine T-shirt",
				"variant_title": "M / Blue", "sku": "AE-TS-M-BLU", "quantity": 1, "price": "10.00",
				"requires_shipping": true, "taxable": true, "grams": 200, "vendor": "Analytical Engines",
			}},
			"shipping_address": map[string]any{
				"first_name": "Ada", "last_name": "Lovelace", "address1": "12 St James's Square",
				"city": "London", "zip": "SW1Y 4JH", "country": "United Kingdom", "country_code": "GB",
			},
		}
	case "products":
		id := shopifyNumber("product/" + eventID)
		return map[string]any{
			"id": id, "admin_graphql_api_id": "gid://shopify/Product/" + strconv.FormatInt(id, 10),
			"title": "Analytical Engine T-shirt", "body_html": "<p>Soft cotton, printed in London.</p>",
			"vendor": "Analytical Engines", "product_type": "Apparel", "handle": "analytical-engine-t-shirt",
			"created_at": ts(created), "updated_at": ts(now), "published_at": ts(created),
			"status": "active", "tags": "cotton, engines",
			"variants": []any{map[string]any{
				"id": shopifyNumber("variant/" + eventID), "product_id": id, "title": "M / Blue",
				"price": "10.00", "sku": "AE-TS-M-BLU", "position": 1, "inventory_policy": "deny",
				"option1": "M", "option2": "Blue", "inventory_quantity": 42, "created_at": ts(created), "updated_at": ts(now),
			}},
			"options": []any{
				map[string]any{"name": "Size", "position": 1, "values": []string{"S", "M", "L"}},
				map[string]any{"name": "Color", "position": 2, "values": []string{"Blue"}},
			},
		}
	case "customers":
		customer["orders_count"] = 1
		customer["total_spent"] = "12.00"
		customer["note"] = nil
		customer["default_address"] = map[string]any{
			"first_name": "Ada", "last_name": "Lovelace", "address1": "12 St James's Square",
			"city": "London", "zip": "SW1Y 4JH", "country": "United Kingdom", "country_code": "GB", "default": true,
		}
		return customer
	default:
		id := shopifyNumber(resource + "/" + eventID)
		kind := strings.TrimSuffix(resource, "s")
		if kind != "" && kind[0] >= 'a' && kind[0] <= 'z' {
			kind = string(kind[0]-'a'+'A') + kind[1:]
		}
		return map[string]any{
			"id": id, "admin_graphql_api_id": fmt.Sprintf("gid://shopify/%s/%d", kind, id),
			"created_at": ts(created), "updated_at": ts(now),
		}
	}
}
