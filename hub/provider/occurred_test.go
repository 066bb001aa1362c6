package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// VerifyDelivery keeps an occurred-at only when plausible, for every
// provider: an absurd time is dropped, never an error.
func TestVerifyDeliveryOccurredAt(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		at        time.Time
		plausible bool // kept; otherwise dropped
	}{
		{"1e16 ms", time.UnixMilli(1e16), false},
		{"3e14 ms (year 11476)", time.UnixMilli(3e14), false},
		{"3e11 s", time.Unix(3e11, 0), false},
		{"negative", time.Unix(-86400, 0), false},
		{"unix 0", time.Unix(0, 0), false},
		{"year 1", time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), false},
		{"1999", time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), false},
		{"two days ahead", now.Add(48 * time.Hour), false},
		{"year 9999", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), false},
		{"a minute ago", now.Add(-time.Minute), true},
		{"2000-01-01", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"23 hours ahead", now.Add(23 * time.Hour), true},
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p := newTestProvider(t, name, testSecrets[name][0])
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					d, ok := occurredAtDelivery(t, p, tt.at, now)
					if !ok {
						t.Skipf("%s carries no occurred-at", name)
					}
					ev, err := VerifyDelivery(p, Request{Header: d.header, Body: d.body, URI: d.target, Now: now})
					require.NoError(t, err, "accepted")
					if tt.plausible {
						require.True(t, tt.at.Truncate(time.Second).Equal(ev.OccurredAt.Truncate(time.Second)), "OccurredAt %v, want %v", ev.OccurredAt, tt.at)
						return
					}
					require.True(t, ev.OccurredAt.IsZero(), "OccurredAt %v", ev.OccurredAt)
					require.NotEmpty(t, ev.ID)
				})
			}
		})
	}
}

// occurredAtDelivery builds a delivery of p, signed at now, whose signed
// data says the event occurred at at, in the field p reads it from. ok is
// false for providers that read no occurred-at (GitHub, Shopify): for
// them it returns a delivery whose unsigned headers claim at, which must
// yield a zero OccurredAt whatever at is.
func occurredAtDelivery(t *testing.T, p Provider, at, now time.Time) (delivery, bool) {
	t.Helper()
	var body []byte
	switch p.Name() {
	case "paddle":
		body = []byte(fmt.Sprintf(`{"event_id":"evt_1","event_type":"subscription.created","occurred_at":%q,"data":{}}`, formatRFC3339Any(at)))
	case "clerk":
		body = []byte(fmt.Sprintf(`{"type":"user.created","timestamp":%d,"data":{}}`, at.UnixMilli()))
	case "stripe":
		body = []byte(fmt.Sprintf(`{"id":"evt_1","type":"customer.created","created":%d,"data":{"object":{}}}`, at.Unix()))
	case StandardWebhooksName:
		body = []byte(fmt.Sprintf(`{"type":"contact.created","timestamp":%q,"data":{}}`, formatRFC3339Any(at)))
	case "twilio":
		form := url.Values{"CallSid": {"CA1"}, "CallStatus": {"completed"}, "Timestamp": {at.UTC().Format(time.RFC1123Z)}}
		body = []byte(form.Encode())
	case "github", "shopify":
		d, err := sampleDelivery(p, "evt_1", map[string]string{"github": "pull_request.opened", "shopify": "orders.create"}[p.Name()], now)
		require.NoError(t, err)
		d.header.Set("X-Shopify-Triggered-At", formatRFC3339Any(at))
		d.header.Set("Date", at.UTC().Format(http.TimeFormat))
		ev, err := VerifyDelivery(p, Request{Header: d.header, Body: d.body, URI: d.target, Now: now})
		require.NoError(t, err)
		require.True(t, ev.OccurredAt.IsZero(), "an unsigned header set OccurredAt %v", ev.OccurredAt)
		return d, false
	default:
		t.Fatalf("no occurred-at delivery for %s", p.Name())
	}
	d, err := signDelivery(p, "msg_1", "call.status", body, now)
	require.NoError(t, err)
	return d, true
}

// formatRFC3339Any writes t in RFC 3339 even when its year has more or
// fewer than four digits (as a sender's bug would), which time.Format
// cannot be relied on for.
func formatRFC3339Any(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second())
}
