package provider

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
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
	*bodyHMAC
}

var (
	_ Provider = (*Shopify)(nil)
	_ Signer   = (*Shopify)(nil)
)

// NewShopify returns a Shopify verifier that accepts a signature made with
// any of secrets (app client secrets, used as bytes; the first one signs
// in Sign). It fails when secrets is empty or a secret is the empty
// string. Its Name is "shopify". Shopify signs no timestamp, so it ignores o.
func NewShopify(secrets []string, o Options) (*Shopify, error) {
	s, err := newBodyHMAC("shopify", secrets, "", errShopifyNoHeader, errShopifyMalformed, errShopifyMismatch)
	if err != nil {
		return nil, err
	}
	return &Shopify{s}, nil
}

// Static errors of the Shopify verifier.
var (
	errShopifyNoHeader  = errSig("missing X-Shopify-Hmac-Sha256 header")
	errShopifyMalformed = errSig("X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes")
	errShopifyMismatch  = errSig("X-Shopify-Hmac-Sha256 matches no secret")
)

// Verify authenticates a Shopify delivery and returns its event.
func (s *Shopify) Verify(r Request) (Event, error) {
	h, body := r.Header, r.Body
	header := firstHeader(h, ShopifyHmacHeader, "Shopify-Hmac-Sha256")
	if err := s.verify(header, body); err != nil {
		return Event{}, err
	}
	id := firstHeader(h, ShopifyWebhookIDHeader, "Shopify-Webhook-Id")
	if err := checkText("missing X-Shopify-Webhook-Id header", "X-Shopify-Webhook-Id", id, maxEventIDLen); err != nil {
		return Event{}, err
	}
	topic := firstHeader(h, ShopifyTopicHeader, "Shopify-Topic")
	if err := checkText("missing X-Shopify-Topic header", "X-Shopify-Topic", topic, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: id, Type: strings.ReplaceAll(topic, "/", "."), Signature: header, Entities: shopifyEntities(topic, body)}, nil
}

// shopifyMembers are the members of a Shopify resource that name entities.
var shopifyMembers = []string{"admin_graphql_api_id", "id", "customer"}

// shopifyEntities returns the entities of a Shopify delivery of topic
// ("orders/create"), whose body is the resource itself: the resource, of
// the kind the topic's resource names in the singular (orders/* an
// "order", customers/* a "customer", products/* a "product",
// draft_orders/* a "draft_order", …), and for a resource that has one
// (an order, a draft order, a checkout) its customer, as "customer". Ids
// are the GraphQL Admin API's global ids (admin_graphql_api_id,
// "gid://shopify/Order/450789469"), unique across a shop's resource
// types; a resource without one gets "gid://shopify/<Type>/<id>" from its
// numeric id.
func shopifyEntities(topic string, body []byte) []hub.Entity {
	resource, _, _ := strings.Cut(topic, "/")
	kind := entityKind(strings.TrimSuffix(resource, "s"))
	if !validEntityKind(kind) {
		return nil
	}
	var raw [3][]byte
	jsonMembers(body, shopifyMembers, raw[:])
	out := addEntity(nil, kind, shopifyGID(kind, raw[0], raw[1]))
	if c := raw[2]; len(c) > 0 && c[0] == '{' {
		var craw [2][]byte
		jsonMembers(c, shopifyMembers[:2], craw[:])
		out = addEntity(out, "customer", shopifyGID("customer", craw[0], craw[1]))
	}
	return out
}

// shopifyGID returns a resource's global id: gid when it is a string,
// else "gid://shopify/<Type>/<id>" when id is a plain integer (Type is
// kind in CamelCase: draft_order is DraftOrder), else "".
func shopifyGID(kind string, gid, id []byte) string {
	if s, ok := jsonString(gid); ok {
		return s
	}
	n, ok := jsonDigits(id)
	if !ok {
		return ""
	}
	b := make([]byte, 0, len("gid://shopify//")+len(kind)+len(n))
	b = append(b, "gid://shopify/"...)
	upper := true
	for i := 0; i < len(kind); i++ {
		switch c := kind[i]; {
		case c == '_':
			upper = true
		case upper:
			b = append(b, c-'a'+'A')
			upper = false
		default:
			b = append(b, c)
		}
	}
	b = append(b, '/')
	b = append(b, n...)
	return string(b)
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
	mac := s.sign(body)
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
