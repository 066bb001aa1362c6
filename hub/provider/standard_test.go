package provider

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"
)

const (
	standardMsgID = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk"
	standardTS    = int64(1649367553)
)

var standardTestBody = []byte(`{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485","email":"ada@example.com"}}`)

func standardHeader(id, ts, sig string) http.Header {
	return headerOf("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig)
}

func TestStandardWebhooksVerify(t *testing.T) {
	ts := strconv.FormatInt(standardTS, 10)
	good := "v1," + refSvixV1(standardSecret, standardMsgID, ts, standardTestBody)
	old := "v1," + refSvixV1(standardOldSecret, standardMsgID, ts, standardTestBody)
	junk := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
	signedAt := time.Unix(standardTS, 0)

	tests := []struct {
		name    string
		secrets []string
		tol     time.Duration
		header  http.Header
		body    []byte
		now     time.Time
		wantErr error
	}{
		{"valid", []string{standardSecret}, 0, standardHeader(standardMsgID, ts, good), standardTestBody, signedAt, nil},
		{"several v1, one matches", []string{standardSecret}, 0, standardHeader(standardMsgID, ts, junk+" "+old+" "+good), standardTestBody, signedAt, nil},
		{"v1a (ed25519) entries skipped", []string{standardSecret}, 0, standardHeader(standardMsgID, ts, "v1a,"+strings.Repeat("A", 86)+"== "+good), standardTestBody, signedAt, nil},
		{"tampered id", []string{standardSecret}, 0, standardHeader(standardMsgID+"x", ts, good), standardTestBody, signedAt, ErrInvalidSignature},
		{"v1a with the right MAC is not compared", []string{standardSecret}, 0, standardHeader(standardMsgID, ts, "v1a,"+good[3:]), standardTestBody, signedAt, ErrInvalidSignature},
		{"svix-* headers (Resend's spelling), as the svix library accepts", []string{standardSecret}, 0, svixHeader(standardMsgID, ts, good), standardTestBody, signedAt, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewStandardWebhooks(tt.secrets, Options{Name: "resend", Tolerance: tt.tol})
			require.NoError(t, err)
			ev, ok := requireVerify(t, s, Request{Header: tt.header, Body: tt.body, Now: tt.now}, tt.wantErr)
			if !ok {
				return
			}
			require.Equal(t, Event{
				ID:         standardMsgID,
				Type:       "contact.created",
				Signature:  cmp.Or(tt.header.Get("svix-signature"), tt.header.Get("webhook-signature")),
				SignedAt:   signedAt,
				OccurredAt: time.Date(2022, 11, 3, 20, 26, 10, 344522000, time.UTC),
			}, ev)
		})
	}
}

func TestStandardWebhooksMalformedHeaders(t *testing.T) {
	ts := strconv.FormatInt(standardTS, 10)
	good := "v1," + refSvixV1(standardSecret, standardMsgID, ts, standardTestBody)
	tests := []struct{ name, id, ts, sig, wantDetail string }{
		{"missing id", "", ts, good, "missing svix-id/webhook-id header"},
		{"missing timestamp", standardMsgID, "", good, "missing svix-timestamp/webhook-timestamp header"},
		{"missing signature", standardMsgID, ts, "", "missing svix-signature/webhook-signature header"},
		{"id with '.'", "msg.1", ts, good, "svix-id/webhook-id contains '.' or a control character"},
		{"id of 256 bytes", strings.Repeat("m", 256), ts, good, "svix-id/webhook-id is longer than 255 bytes"},
		{"timestamp in milliseconds with a fraction", standardMsgID, ts + ".5", good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"RFC 3339 timestamp", standardMsgID, "2022-04-07T21:39:13Z", good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"v1 without signature (official partial-signature case)", standardMsgID, ts, "v1,", "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"hex MAC", standardMsgID, ts, "v1," + strings.Repeat("ab", 32), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"comma separated", standardMsgID, ts, good + "," + good, "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"good but junk MAC", standardMsgID, ts, "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32)), "no v1 signature matches any secret"},
	}
	s, err := NewStandardWebhooks([]string{standardSecret}, Options{Name: "acme"})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireInvalidSignature(t, s, Request{Header: standardHeader(tt.id, tt.ts, tt.sig), Body: standardTestBody, Now: time.Unix(standardTS, 0)}, tt.wantDetail)
		})
	}
}

func TestStandardWebhooksPayload(t *testing.T) {
	tests := []payloadCase{
		{"no type", `{"email":"test@example.com","username":"test_user"}`, "invalid payload: body has no type", "", "", time.Time{}},
		{"array", `[]`, "invalid payload: body is a JSON array, not an object", "", "", time.Time{}},
		{"type with LF", `{"type":"a\n"}`, "invalid payload: type contains control characters", "", "", time.Time{}},
		{"no timestamp", `{"type":"email.sent"}`, "", "email.sent", "", time.Time{}},
		{"millisecond timestamp is Clerk's, ignored here", `{"type":"email.sent","timestamp":1654012591835}`, "", "email.sent", "", time.Time{}},
		{"malformed timestamp", `{"type":"email.sent","timestamp":"yesterday"}`, "", "email.sent", "", time.Time{}},
		{"RFC 3339 timestamp", `{"type":"email.sent","timestamp":"2024-02-22T23:41:12.126Z"}`, "", "email.sent", "", time.Date(2024, 2, 22, 23, 41, 12, 126000000, time.UTC)},
	}
	s, err := NewStandardWebhooks([]string{standardSecret}, Options{Name: "resend"})
	require.NoError(t, err)
	now := time.Unix(standardTS, 0)
	testPayloads(t, s, standardMsgID, now, tests)
}

func TestStandardWebhooksSampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 123456000, time.UTC)
	s, err := NewStandardWebhooks([]string{standardSecret, standardOldSecret}, Options{Name: "resend"})
	require.NoError(t, err)
	type envelope struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	for _, eventType := range []string{"email.delivered", "email.clicked", "email.bounced", "contact.created", "domain.updated"} {
		t.Run(eventType, func(t *testing.T) {
			body := deterministicSample(t, s.Name(), standardMsgID, eventType, now)
			var env envelope
			require.NoError(t, json.Unmarshal(body, &env))
			require.Equal(t, eventType, env.Type)
			require.Equal(t, "2025-06-01T12:30:45.123456Z", env.Timestamp)
			require.NotEmpty(t, env.Data)
			require.Greater(t, len(body), 300)

			h, _, err := s.Sign(standardMsgID, "", body, now)
			require.NoError(t, err)
			require.Equal(t, standardMsgID, h.Get("webhook-id"))
			require.Equal(t, "1748781045", h.Get("webhook-timestamp"))
			require.Equal(t, "v1,"+refSvixV1(standardSecret, standardMsgID, "1748781045", body), h.Get("webhook-signature"))
			require.Empty(t, h.Get("svix-id"))

			ev, err := s.Verify(Request{Header: h, Body: body, Now: now.Add(time.Minute)})
			require.NoError(t, err)
			require.Equal(t, standardMsgID, ev.ID)
			require.Equal(t, eventType, ev.Type)
			require.True(t, ev.SignedAt.Equal(now.Truncate(time.Second)))
			require.True(t, ev.OccurredAt.Equal(now))

			// The same bytes, delivered to Clerk under svix-* names, verify
			// there too: one scheme, two header sets.
			c, err := NewClerk([]string{standardSecret}, Options{})
			require.NoError(t, err)
			_, err = c.Verify(Request{Header: svixHeader(h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")), Body: body, Now: now})
			require.NoError(t, err)

			requireRejectedBy(t, NewStandardWebhooks, standardOldSecret, Options{Name: "resend"}, h, body, now)
		})
	}
	t.Run("invalid input", func(t *testing.T) {
		_, err := samples.Body(s.Name(), "", "email.sent", nil, now)
		require.Error(t, err)
		_, err = samples.Body(s.Name(), standardMsgID, "email.sent", []byte("nope"), now)
		require.Error(t, err)
		_, _, err = s.Sign("msg.1", "", []byte("{}"), now)
		require.EqualError(t, err, "resend: event id is not a valid webhook-id")
		_, _, err = s.Sign(standardMsgID, "", []byte("{}"), time.Unix(-1, 0))
		require.EqualError(t, err, "resend: cannot sign before 1970")
	})
}
