package provider

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

const stripeTS = int64(1700000000)

var stripeTestBody = []byte(`{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","api_version":"2024-06-20","created":1686089970,"data":{"object":{"id":"cus_O2Dnbgvaj1YZJv","object":"customer","email":"ada@example.com"}},"livemode":false,"pending_webhooks":1,"request":{"id":"req_a1b2c3","idempotency_key":"f0e1d2c3"},"type":"customer.created"}`)

func stripeHeader(value string) http.Header { return headerOf("Stripe-Signature", value) }

func TestStripeVerify(t *testing.T) {
	ts := strconv.FormatInt(stripeTS, 10)
	good := refStripeV1(stripeSecret, ts, stripeTestBody)
	old := refStripeV1(stripeOldSecret, ts, stripeTestBody)
	junk := strings.Repeat("ab", 32)
	signedAt := time.Unix(stripeTS, 0)
	// The key Svix would use for the same whsec_ string: the decoded rest.
	svixKey, err := base64.StdEncoding.DecodeString("dGVzdF9zZWNyZXQ=")
	require.NoError(t, err)
	svixStyle := refStripeV1(string(svixKey), ts, stripeTestBody)

	tests := []struct {
		name    string
		secrets []string
		tol     time.Duration
		header  string
		body    []byte
		now     time.Time
		wantErr error
	}{
		{"valid", []string{stripeSecret}, 0, "t=" + ts + ",v1=" + good, stripeTestBody, signedAt, nil},
		{"rolled secret: two v1, second matches", []string{stripeSecret}, 0, "t=" + ts + ",v1=" + old + ",v1=" + good, stripeTestBody, signedAt, nil},
		{"v0 and unknown keys ignored", []string{stripeSecret}, 0, "t=" + ts + ",v0=" + junk + ",v1=" + good + ",v2=x,x", stripeTestBody, signedAt, nil},
		{"v1 before t", []string{stripeSecret}, 0, "v1=" + good + ",t=" + ts, stripeTestBody, signedAt, nil},
		{"spaces around pairs", []string{stripeSecret}, 0, "t=" + ts + ", v1=" + good + " ", stripeTestBody, signedAt, nil},
		{"uppercase hex", []string{stripeSecret}, 0, "t=" + ts + ",v1=" + strings.ToUpper(good), stripeTestBody, signedAt, nil},
		{"leading zeros: the decimal t is signed, as stripe-go does", []string{stripeSecret}, 0, "t=00" + ts + ",v1=" + good, stripeTestBody, signedAt, nil},
		{"malformed v1 next to a good one", []string{stripeSecret}, 0, "t=" + ts + ",v1=zz,v1=" + good[:63] + ",v1=" + good, stripeTestBody, signedAt, nil},
		{"tampered t", []string{stripeSecret}, 0, "t=" + strconv.FormatInt(stripeTS+1, 10) + ",v1=" + good, stripeTestBody, signedAt, ErrInvalidSignature},
		{"key decoded as Svix would: rejected", []string{stripeSecret}, 0, "t=" + ts + ",v1=" + svixStyle, stripeTestBody, signedAt, ErrInvalidSignature},
		{"right MAC under v0 only", []string{stripeSecret}, 0, "t=" + ts + ",v0=" + good, stripeTestBody, signedAt, ErrInvalidSignature},
		{"future by 301s (stripe-go would accept)", []string{stripeSecret}, 0, "t=" + ts + ",v1=" + good, stripeTestBody, signedAt.Add(-301 * time.Second), ErrTimestamp},
		{"match beyond the 16th v1 is ignored", []string{stripeSecret}, 0, "t=" + ts + strings.Repeat(",v1="+junk, 16) + ",v1=" + good, stripeTestBody, signedAt, ErrInvalidSignature},
		{"match as the 16th v1", []string{stripeSecret}, 0, "t=" + ts + strings.Repeat(",v1="+junk, 15) + ",v1=" + good, stripeTestBody, signedAt, nil},
		{"forged and stale reports the signature", []string{stripeSecret}, 0, "t=" + ts + ",v1=" + junk, stripeTestBody, signedAt.Add(time.Hour), ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewStripe(tt.secrets, Options{Tolerance: tt.tol})
			require.NoError(t, err)
			ev, ok := requireVerify(t, s, Request{Header: stripeHeader(tt.header), Body: tt.body, Now: tt.now}, tt.wantErr)
			if !ok {
				return
			}
			require.Equal(t, Event{
				ID:         "evt_1NG8Du2eZvKYlo2CUI79vXWy",
				Type:       "customer.created",
				Signature:  tt.header,
				SignedAt:   signedAt,
				OccurredAt: time.Unix(1686089970, 0),
				Entities:   []hub.Entity{{Kind: "customer", ID: "cus_O2Dnbgvaj1YZJv"}},
			}, ev)
		})
	}
}

func TestStripeMalformedHeader(t *testing.T) {
	ts := strconv.FormatInt(stripeTS, 10)
	good := refStripeV1(stripeSecret, ts, stripeTestBody)
	tests := []struct{ name, header, wantDetail string }{
		{"missing header", "", "missing Stripe-Signature header"},
		{"no t", "v1=" + good, "Stripe-Signature has no t"},
		{"t without value", "t=,v1=" + good, "Stripe-Signature t is not a unix time"},
		{"two t", "t=" + ts + ",t=" + ts + ",v1=" + good, "Stripe-Signature has more than one t"},
		{"non-numeric t", "t=abc,v1=" + good, "Stripe-Signature t is not a unix time"},
		{"negative t", "t=-1,v1=" + good, "Stripe-Signature t is not a unix time"},
		{"signed t", "t=+" + ts + ",v1=" + good, "Stripe-Signature t is not a unix time"},
		{"fractional t", "t=" + ts + ".5,v1=" + good, "Stripe-Signature t is not a unix time"},
		{"t beyond int64", "t=99999999999999999999,v1=" + good, "Stripe-Signature t is not a unix time"},
		{"T is not t", "T=" + ts + ",v1=" + good, "Stripe-Signature has no t"},
		{"no v1", "t=" + ts, "Stripe-Signature has no well-formed v1"},
		{"v0 only", "t=" + ts + ",v0=" + good, "Stripe-Signature has no well-formed v1"},
		{"V1 is not v1", "t=" + ts + ",V1=" + good, "Stripe-Signature has no well-formed v1"},
		{"short v1", "t=" + ts + ",v1=" + good[:62], "Stripe-Signature has no well-formed v1"},
		{"long v1", "t=" + ts + ",v1=" + good + "00", "Stripe-Signature has no well-formed v1"},
		{"non-hex v1", "t=" + ts + ",v1=" + strings.Repeat("g", 64), "Stripe-Signature has no well-formed v1"},
		{"base64 v1", "t=" + ts + ",v1=" + base64.StdEncoding.EncodeToString([]byte(good[:32])), "Stripe-Signature has no well-formed v1"},
		{"semicolons instead of commas", "t=" + ts + ";v1=" + good, "Stripe-Signature t is not a unix time"},
		{"junk", "=,=,,=", "Stripe-Signature has no t"},
		{"well-formed, junk MAC", "t=" + ts + ",v1=" + strings.Repeat("0", 64), "no v1 matches any secret"},
	}
	s, err := NewStripe([]string{stripeSecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireInvalidSignature(t, s, Request{Header: stripeHeader(tt.header), Body: stripeTestBody, Now: time.Unix(stripeTS, 0)}, tt.wantDetail)
		})
	}
}

func TestParseStripeSignature(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("B", 64)
	tests := []struct {
		name, header string
		wantUnix     int64
		wantSigs     int
	}{
		{"one", "t=1,v1=" + a, 1, 1},
		{"two and v0", "t=17,v1=" + a + ",v0=" + a + ",v1=" + b, 17, 2},
		{"leading zeros", "t=0017,v1=" + a, 17, 1},
		{"zero", "t=0,v1=" + a, 0, 1},
		{"empty pairs", ",,t=5,,v1=" + a + ",", 5, 1},
		{"at most 16", "t=1" + strings.Repeat(",v1="+a, 20), 1, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unix, sigs, err := parseStripeSignature(tt.header, nil)
			require.NoError(t, err)
			require.Equal(t, tt.wantUnix, unix)
			require.Len(t, sigs, tt.wantSigs)
		})
	}
}

func TestStripePayload(t *testing.T) {
	tests := []payloadCase{
		{"not JSON", `{"id":`, "invalid payload: body is not JSON: unexpected end of JSON input", "", "", time.Time{}},
		{"array", `[]`, "invalid payload: body is a JSON array, not an object", "", "", time.Time{}},
		{"no id", `{"type":"customer.created"}`, "invalid payload: body has no id", "", "", time.Time{}},
		{"no type", `{"id":"evt_1"}`, "invalid payload: body has no type", "", "", time.Time{}},
		{"numeric id", `{"id":1,"type":"a.b"}`, "invalid payload: id is a JSON number, not a string", "", "", time.Time{}},
		{"id of 256 bytes", `{"id":"` + strings.Repeat("e", 256) + `","type":"a.b"}`, "invalid payload: id is longer than 255 bytes", "", "", time.Time{}},
		{"type of 129 bytes", `{"id":"evt_1","type":"` + strings.Repeat("t", 129) + `"}`, "invalid payload: type is longer than 128 bytes", "", "", time.Time{}},
		{"id with CR", `{"id":"evt_1\r","type":"a.b"}`, "invalid payload: id contains control characters", "", "", time.Time{}},
		{"type with LF", `{"id":"evt_1","type":"a.b\n"}`, "invalid payload: type contains control characters", "", "", time.Time{}},
		{"no created", `{"id":"evt_1","type":"a.b"}`, "", "a.b", "", time.Time{}},
		{"string created", `{"id":"evt_1","type":"a.b","created":"1686089970"}`, "", "a.b", "", time.Time{}},
		{"huge created", `{"id":"evt_1","type":"a.b","created":99999999999999}`, "", "a.b", "", time.Time{}},
		{"created", `{"id":"evt_1","type":"v1.billing.meter.error_report_triggered","created":1686089970}`, "", "v1.billing.meter.error_report_triggered", "", time.Unix(1686089970, 0)},
	}
	s, err := NewStripe([]string{stripeSecret}, Options{})
	require.NoError(t, err)
	now := time.Unix(stripeTS, 0)
	testPayloads(t, s, "evt_1", now, tests)
}

func TestStripeSampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 0, time.UTC)
	s, err := NewStripe([]string{stripeSecret, stripeOldSecret}, Options{})
	require.NoError(t, err)
	type envelope struct {
		ID         string `json:"id"`
		Object     string `json:"object"`
		APIVersion string `json:"api_version"`
		Created    int64  `json:"created"`
		Data       struct {
			Object struct {
				ID       string `json:"id"`
				Object   string `json:"object"`
				Status   string `json:"status"`
				Customer string `json:"customer"`
			} `json:"object"`
		} `json:"data"`
		Type string `json:"type"`
	}
	tests := []struct {
		eventType, wantObject, wantPrefix, wantStatus string
	}{
		{"customer.subscription.created", "subscription", "sub_", "active"},
		{"customer.subscription.deleted", "subscription", "sub_", "canceled"},
		{"customer.created", "customer", "cus_", ""},
		{"payment_intent.succeeded", "payment_intent", "pi_", "succeeded"},
		{"payment_intent.payment_failed", "payment_intent", "pi_", "requires_payment_method"},
		{"invoice.paid", "invoice", "in_", "paid"},
		{"checkout.session.completed", "checkout.session", "cs_test_", "complete"},
		{"charge.refunded", "charge", "cha_", ""},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			const eventID = "evt_1PqRsTuVwXyZ0123456789ab"
			body := deterministicSample(t, s.Name(), eventID, tt.eventType, now)

			var env envelope
			require.NoError(t, json.Unmarshal(body, &env))
			require.Equal(t, eventID, env.ID)
			require.Equal(t, "event", env.Object)
			require.Equal(t, samples.StripeAPIVersion, env.APIVersion)
			require.Equal(t, now.Unix(), env.Created)
			require.Equal(t, tt.eventType, env.Type)
			require.Equal(t, tt.wantObject, env.Data.Object.Object)
			require.True(t, strings.HasPrefix(env.Data.Object.ID, tt.wantPrefix), "data.object.id %q", env.Data.Object.ID)
			require.Equal(t, tt.wantStatus, env.Data.Object.Status)
			if tt.eventType != "charge.refunded" {
				require.Greater(t, len(body), 900)
				require.Less(t, len(body), 4000)
			}

			h, _, err := s.Sign("ignored", "", body, now)
			require.NoError(t, err)
			require.Equal(t, "t=1748781045,v1="+refStripeV1(stripeSecret, "1748781045", body), h.Get("Stripe-Signature"))

			ev, err := s.Verify(Request{Header: h, Body: body, Now: now.Add(time.Minute)})
			require.NoError(t, err)
			require.Equal(t, eventID, ev.ID)
			require.Equal(t, tt.eventType, ev.Type)
			require.True(t, ev.SignedAt.Equal(now))
			require.True(t, ev.OccurredAt.Equal(now))

			requireRejectedBy(t, NewStripe, stripeOldSecret, Options{}, h, body, now)
		})
	}
	t.Run("given data", func(t *testing.T) {
		body, err := samples.Body(s.Name(), "evt_1", "customer.created", []byte(`{"id":"cus_1","object":"customer"}`), now)
		require.NoError(t, err)
		var env envelope
		require.NoError(t, json.Unmarshal(body, &env))
		require.Equal(t, "cus_1", env.Data.Object.ID)
	})
	t.Run("invalid data", func(t *testing.T) {
		_, err := samples.Body(s.Name(), "evt_1", "customer.created", []byte(`nope`), now)
		require.Error(t, err)
	})
	t.Run("no id or type", func(t *testing.T) {
		_, err := samples.Body(s.Name(), "", "customer.created", nil, now)
		require.Error(t, err)
		_, err = samples.Body(s.Name(), "evt_1", "", nil, now)
		require.Error(t, err)
	})
	t.Run("sign before 1970", func(t *testing.T) {
		_, _, err := s.Sign("", "", []byte("{}"), time.Unix(-1, 0))
		require.Error(t, err)
	})
}
