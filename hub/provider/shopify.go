package provider

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
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
// A Shopify is safe for concurrent use. It implements Provider and Signer.
type Shopify struct {
	hmac *bodyHMAC
}

var (
	_ Provider = (*Shopify)(nil)
	_ Signer   = (*Shopify)(nil)
)

// NewShopify returns a Shopify verifier that accepts a signature made with
// any of secrets (app client secrets, used as bytes; the first one signs
// in Sign). It fails when secrets is empty or a secret is the empty
// string. Shopify signs no timestamp, so it ignores o.
func NewShopify(secrets []string, o Options) (*Shopify, error) {
	s, err := newBodyHMAC("shopify", secrets, "", errShopifyNoHeader, errShopifyMalformed, errShopifyMismatch)
	if err != nil {
		return nil, err
	}
	return &Shopify{hmac: s}, nil
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
	if err := s.hmac.verify(header, body); err != nil {
		return Event{}, err
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
	mac := s.hmac.sign(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Shopify-Captain-Hook")
	h.Set(ShopifyHmacHeader, base64.StdEncoding.EncodeToString(mac[:]))
	h.Set(ShopifyWebhookIDHeader, eventID)
	h.Set("X-Shopify-Shop-Domain", "hookhub-dev.myshopify.com")
	h.Set("X-Shopify-API-Version", "2025-07")
	h.Set("X-Shopify-Event-Id", derive.UUID("event/"+eventID))
	h.Set(ShopifyTriggeredAtHeader, now.UTC().Format("2006-01-02T15:04:05.000000000Z"))
	if eventType != "" {
		h.Set(ShopifyTopicHeader, shopifyTopic(eventType))
	}
	return h, "/webhooks/shopify", nil
}
