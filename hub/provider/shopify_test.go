package provider

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"
)

var shopifyTestBody = []byte(`{"id":820982911946154508,"email":"jon@example.com","created_at":"2025-06-01T12:30:45-04:00","total_price":"12.00"}`)

func shopifySig(secret string, body []byte) string {
	return base64.StdEncoding.EncodeToString(refHMACSHA256(secret, body))
}

// shopifyHeaders returns classic X-Shopify-* headers, or the unprefixed
// lowercase shopify-* ones of events webhooks.
func shopifyHeaders(unprefixed bool, hmac, id, topic string) http.Header {
	p := "X-Shopify-"
	if unprefixed {
		p = "shopify-"
	}
	return headerOf(p+"Hmac-Sha256", hmac, p+"Webhook-Id", id, p+"Topic", topic, p+"Shop-Domain", "shop1.myshopify.io", p+"API-Version", "2025-07")
}

func TestShopifyVerify(t *testing.T) {
	good := shopifySig(shopifySecret, shopifyTestBody)
	const id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
	triggered := shopifyHeaders(false, good, id, "orders/create")
	triggered.Set("X-Shopify-Triggered-At", "2025-06-01T16:30:45.123456789Z")
	mixed := shopifyHeaders(true, good, id, "orders/create")
	mixed.Set("X-Shopify-Webhook-Id", "classic-wins")

	tests := []struct {
		name     string
		secrets  []string
		header   http.Header
		body     []byte
		wantErr  error
		wantID   string
		wantType string
		wantOcc  time.Time
	}{
		{"valid", []string{shopifySecret}, shopifyHeaders(false, good, id, "orders/create"), shopifyTestBody, nil, id, "orders.create", time.Time{}},
		{"unprefixed events-webhook headers", []string{shopifySecret}, shopifyHeaders(true, good, id, "orders/create"), shopifyTestBody, nil, id, "orders.create", time.Time{}},
		{"classic headers win over unprefixed ones", []string{shopifySecret}, mixed, shopifyTestBody, nil, "classic-wins", "orders.create", time.Time{}},
		{"topic with underscores", []string{shopifySecret}, shopifyHeaders(false, good, id, "orders/partially_fulfilled"), shopifyTestBody, nil, id, "orders.partially_fulfilled", time.Time{}},
		{"unsigned triggered-at never sets OccurredAt", []string{shopifySecret}, triggered, shopifyTestBody, nil, id, "orders.create", time.Time{}},
		{"re-serialised body", []string{shopifySecret}, shopifyHeaders(false, good, id, "orders/create"), []byte(strings.ReplaceAll(string(shopifyTestBody), ",", ", ")), ErrInvalidSignature, "", "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewShopify(tt.secrets, Options{})
			require.NoError(t, err)
			for _, now := range []time.Time{{}, time.Unix(1700000000, 0), time.Unix(4000000000, 0)} {
				ev, ok := requireVerify(t, s, Request{Header: tt.header, Body: tt.body, Now: now}, tt.wantErr)
				if !ok {
					continue
				}
				require.Equal(t, tt.wantID, ev.ID)
				require.Equal(t, tt.wantType, ev.Type)
				require.True(t, ev.SignedAt.IsZero())
				require.True(t, tt.wantOcc.Equal(ev.OccurredAt), "OccurredAt %v", ev.OccurredAt)
			}
		})
	}
}

func TestShopifyMalformedHeader(t *testing.T) {
	mac := refHMACSHA256(shopifySecret, shopifyTestBody)
	good := base64.StdEncoding.EncodeToString(mac)
	last := strings.IndexByte(base64Alphabet, good[len(good)-2])
	nonCanonical := good[:len(good)-2] + string(base64Alphabet[last^1]) + "="
	tests := []struct{ name, header, wantDetail string }{
		{"missing header", "", "missing X-Shopify-Hmac-Sha256 header"},
		{"hex of the same MAC", hex.EncodeToString(mac), "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"unpadded", strings.TrimSuffix(good, "="), "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"url-safe", base64.URLEncoding.EncodeToString(mac[:30]) + "-_A=", "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"non-canonical padding bits", nonCanonical, "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"sha256= prefix", "sha256=" + good, "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"31 bytes", base64.StdEncoding.EncodeToString(mac[:31]), "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"surrounding space", " " + good, "X-Shopify-Hmac-Sha256 is not the standard base64 of 32 bytes"},
		{"well-formed, junk MAC", base64.StdEncoding.EncodeToString(make([]byte, 32)), "X-Shopify-Hmac-Sha256 matches no secret"},
	}
	s, err := NewShopify([]string{shopifySecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireInvalidSignature(t, s, Request{Header: shopifyHeaders(false, tt.header, "1", "orders/create"), Body: shopifyTestBody, Now: time.Time{}}, tt.wantDetail)
		})
	}
}

func TestShopifyPayload(t *testing.T) {
	good := shopifySig(shopifySecret, shopifyTestBody)
	tests := []struct{ name, id, topic, wantErr string }{
		{"missing webhook id", "", "orders/create", "invalid payload: missing X-Shopify-Webhook-Id header"},
		{"missing topic", "1", "", "invalid payload: missing X-Shopify-Topic header"},
		{"id of 256 bytes", strings.Repeat("1", 256), "orders/create", "invalid payload: X-Shopify-Webhook-Id is longer than 255 bytes"},
		{"topic with a control character", "1", "orders/create\x01", "invalid payload: X-Shopify-Topic contains control characters"},
		{"topic of 129 bytes", "1", strings.Repeat("t", 129), "invalid payload: X-Shopify-Topic is longer than 128 bytes"},
	}
	s, err := NewShopify([]string{shopifySecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Verify(Request{Header: shopifyHeaders(false, good, tt.id, tt.topic), Body: shopifyTestBody, Now: time.Time{}})
			require.ErrorIs(t, err, ErrPayload)
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestShopifySampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 0, time.UTC)
	s, err := NewShopify([]string{shopifySecret, shopifyOldSecret}, Options{})
	require.NoError(t, err)
	tests := []struct {
		eventType, wantTopic, wantGID string
		minLen                        int
	}{
		{"orders.create", "orders/create", "gid://shopify/Order/", 1000},
		{"orders.cancelled", "orders/cancelled", "gid://shopify/Order/", 1000},
		{"products.update", "products/update", "gid://shopify/Product/", 700},
		{"customers.create", "customers/create", "gid://shopify/Customer/", 500},
		{"app.uninstalled", "app/uninstalled", "gid://shopify/App/", 100},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			const id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
			body := deterministicSample(t, s.Name(), id, tt.eventType, now)
			var r struct {
				ID  int64  `json:"id"`
				GID string `json:"admin_graphql_api_id"`
			}
			require.NoError(t, json.Unmarshal(body, &r))
			require.Greater(t, r.ID, int64(1e12))
			require.True(t, strings.HasPrefix(r.GID, tt.wantGID), r.GID)
			require.Greater(t, len(body), tt.minLen)

			h, _, err := s.Sign(id, "", body, now)
			require.NoError(t, err)
			require.Equal(t, shopifySig(shopifySecret, body), h.Get("X-Shopify-Hmac-Sha256"))
			require.Empty(t, h.Get("X-Shopify-Topic"))
			_, err = s.Verify(Request{Header: h, Body: body, Now: now})
			require.EqualError(t, err, "invalid payload: missing X-Shopify-Topic header")

			h, target, err := s.Sign(id, tt.eventType, body, now)
			require.NoError(t, err)
			require.Equal(t, "/webhooks/shopify", target)
			require.Equal(t, tt.wantTopic, h.Get("X-Shopify-Topic"))
			require.Equal(t, id, h.Get("X-Shopify-Webhook-Id"))
			ev, err := s.Verify(Request{Header: h, Body: body, Now: now})
			require.NoError(t, err)
			require.Equal(t, id, ev.ID)
			require.Equal(t, tt.eventType, ev.Type)
			require.True(t, ev.OccurredAt.IsZero(), "X-Shopify-Triggered-At is not signed")

			requireRejectedBy(t, NewShopify, shopifyOldSecret, Options{}, h, body, now)
		})
	}
	t.Run("given data is the body", func(t *testing.T) {
		body, err := samples.Body(s.Name(), "1", "orders.create", []byte(`{"id":1}`), now)
		require.NoError(t, err)
		require.Equal(t, `{"id":1}`, string(body))
		_, err = samples.Body(s.Name(), "1", "orders.create", []byte(`nope`), now)
		require.Error(t, err)
	})
	t.Run("invalid input", func(t *testing.T) {
		_, err := samples.Body(s.Name(), "", "orders.create", nil, now)
		require.Error(t, err)
		_, _, err = s.Sign("", "", []byte("{}"), now)
		require.Error(t, err)
		_, _, err = s.Sign("1", "orders/create\n", []byte("{}"), now)
		require.Error(t, err)
		h, _, err := s.Sign("1", "", []byte("{}"), now)
		require.NoError(t, err)
		require.Empty(t, h.Get(ShopifyTopicHeader), "no type, no X-Shopify-Topic")
	})
}
