package provider

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"
)

const (
	paddleSecret    = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	paddleOldSecret = "pdl_ntfset_01hbpjmytsa32fhr36nqgc3kgb_TjIG2BXbm83HPXqNfziwe506sBEdqL/4"
	paddleTS        = int64(1710929255)
)

var paddleTestBody = []byte(`{"data":{"id":"sub_01hv8x29kz0t586xy6zn1a62ny","status":"active"},"event_id":"evt_01hv8x2a5b9bf4yc3mj0c0ahqm","event_type":"subscription.created","occurred_at":"2024-04-12T10:18:49.621022Z","notification_id":"ntf_01hv8x2af0fqa5b2mspqv3t5hw"}`)

func TestPaddleVerify(t *testing.T) {
	ts := strconv.FormatInt(paddleTS, 10)
	good := refPaddleH1(paddleSecret, ts, paddleTestBody)
	old := refPaddleH1(paddleOldSecret, ts, paddleTestBody)
	junk := strings.Repeat("ab", 32)
	signedAt := time.Unix(paddleTS, 0)

	tests := []struct {
		name    string
		secrets []string
		tol     time.Duration
		header  string
		body    []byte
		now     time.Time
		wantErr error
	}{
		{"valid", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + good, paddleTestBody, signedAt, nil},
		{"several h1, last matches", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + junk + ";h1=" + old + ";h1=" + good, paddleTestBody, signedAt, nil},
		{"several h1, first matches", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + good + ";h1=" + junk, paddleTestBody, signedAt, nil},
		{"malformed h1 next to a good one", []string{paddleSecret}, 0, "ts=" + ts + ";h1=dummy;h1=zz;h1=" + good, paddleTestBody, signedAt, nil},
		{"unknown keys ignored", []string{paddleSecret}, 0, "h2=RANDOM;ts=" + ts + ";x;h1=" + good + ";h3=", paddleTestBody, signedAt, nil},
		{"h1 before ts", []string{paddleSecret}, 0, "h1=" + good + ";ts=" + ts, paddleTestBody, signedAt, nil},
		{"uppercase hex", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + strings.ToUpper(good), paddleTestBody, signedAt, nil},
		{"spaces around parts", []string{paddleSecret}, 0, "ts=" + ts + "; h1=" + good + " ", paddleTestBody, signedAt, nil},
		{"tampered ts", []string{paddleSecret}, 0, "ts=" + strconv.FormatInt(paddleTS+1, 10) + ";h1=" + good, paddleTestBody, signedAt, ErrInvalidSignature},
		{"ts with a leading zero is not the signed ts", []string{paddleSecret}, 0, "ts=0" + ts + ";h1=" + good, paddleTestBody, signedAt, ErrInvalidSignature},
		{"only junk h1", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + junk, paddleTestBody, signedAt, ErrInvalidSignature},
		{"match beyond the 16th h1 is ignored", []string{paddleSecret}, 0, "ts=" + ts + strings.Repeat(";h1="+junk, 16) + ";h1=" + good, paddleTestBody, signedAt, ErrInvalidSignature},
		{"match as the 16th h1", []string{paddleSecret}, 0, "ts=" + ts + strings.Repeat(";h1="+junk, 15) + ";h1=" + good, paddleTestBody, signedAt, nil},
		{"forged and stale reports the signature", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + junk, paddleTestBody, signedAt.Add(time.Hour), ErrInvalidSignature},
		{"years later", []string{paddleSecret}, 0, "ts=" + ts + ";h1=" + good, paddleTestBody, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), ErrTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPaddle(tt.secrets, Options{Tolerance: tt.tol})
			require.NoError(t, err)
			ev, ok := requireVerify(t, p, Request{Header: paddleHeader(tt.header), Body: tt.body, Now: tt.now}, tt.wantErr)
			if !ok {
				return
			}
			require.Equal(t, "evt_01hv8x2a5b9bf4yc3mj0c0ahqm", ev.ID)
			require.Equal(t, "subscription.created", ev.Type)
			require.Equal(t, tt.header, ev.Signature)
			require.True(t, ev.SignedAt.Equal(signedAt))
			require.True(t, ev.OccurredAt.Equal(time.Date(2024, 4, 12, 10, 18, 49, 621022000, time.UTC)), "OccurredAt %v", ev.OccurredAt)
		})
	}
}

func TestPaddleMalformedHeader(t *testing.T) {
	ts := strconv.FormatInt(paddleTS, 10)
	good := refPaddleH1(paddleSecret, ts, paddleTestBody)
	tests := []struct {
		name, header, wantDetail string
	}{
		{"missing", "", "missing Paddle-Signature header"},
		{"empty ts", "ts=", "Paddle-Signature ts is not a unix time"},
		{"empty ts with h1", "ts=;h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"no ts", "h1=" + good, "Paddle-Signature has no ts"},
		{"short h1 without ts", "h1=abc", "Paddle-Signature has no ts"},
		{"non-numeric ts", "ts=abc;h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"signed ts", "ts=+" + ts + ";h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"negative ts", "ts=-1;h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"fractional ts", "ts=" + ts + ".5;h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"overflowing ts", "ts=99999999999999999999;h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"overlong ts", "ts=" + strings.Repeat("0", 30) + ts + ";h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"repeated ts", "ts=" + ts + ";ts=" + ts + ";h1=" + good, "Paddle-Signature has more than one ts"},
		{"non-hex h1", "ts=1;h1=zz", "Paddle-Signature has no well-formed h1"},
		{"non-hex h1 of the right length", "ts=1;h1=" + strings.Repeat("zz", 32), "Paddle-Signature has no well-formed h1"},
		{"short h1", "ts=" + ts + ";h1=" + good[:63], "Paddle-Signature has no well-formed h1"},
		{"long h1", "ts=" + ts + ";h1=" + good + "0", "Paddle-Signature has no well-formed h1"},
		{"empty h1", "ts=" + ts + ";h1=", "Paddle-Signature has no well-formed h1"},
		{"only h2", "ts=" + ts + ";h2=" + good, "Paddle-Signature has no well-formed h1"},
		{"comma separated", "ts=" + ts + ",h1=" + good, "Paddle-Signature ts is not a unix time"},
		{"garbage", "garbage", "Paddle-Signature has no ts"},
		{"separators only", ";;;==;", "Paddle-Signature has no ts"},
		{"stripe style", "t=" + ts + ",v1=" + good, "Paddle-Signature has no ts"},
	}
	p, err := NewPaddle([]string{paddleSecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireInvalidSignature(t, p, Request{Header: paddleHeader(tt.header), Body: paddleTestBody, Now: time.Unix(paddleTS, 0)}, tt.wantDetail)
		})
	}
}

func TestParsePaddleSignature(t *testing.T) {
	a, b := strings.Repeat("0a", 32), strings.Repeat("F1", 32)
	tests := []struct {
		name, header, wantTS string
		wantSigs             int
		wantErr              bool
	}{
		{"one h1", "ts=1;h1=" + a, "1", 1, false},
		{"ts kept as written", "ts=0017;h1=" + a, "0017", 1, false},
		{"two h1 and junk", "ts=2;h1=" + a + ";h1=nothex;h1=" + b + ";h2=" + a, "2", 2, false},
		{"many h1", "ts=3" + strings.Repeat(";h1="+a, 9), "3", 9, false},
		{"at most 16 h1", "ts=3" + strings.Repeat(";h1="+a, 40), "3", 16, false},
		{"trailing separator", "ts=4;h1=" + a + ";", "4", 1, false},
		{"tab around part", "\tts=5\t;\th1=" + a, "5", 1, false},
		{"value with '='", "ts=6;h1=" + a + "=", "", 0, true},
		{"empty", "", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, sigs, err := parsePaddleSignature(tt.header, nil)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalidSignature)
				require.Empty(t, ts)
				require.Nil(t, sigs)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantTS, ts)
			require.Len(t, sigs, tt.wantSigs)
		})
	}
	_, sigs, err := parsePaddleSignature("ts=1;h1="+a+";h1="+b, nil)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("\x0a", 32), string(sigs[0][:]))
	require.Equal(t, strings.Repeat("\xf1", 32), string(sigs[1][:]))
}

func TestPaddlePayload(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []payloadCase{
		{"not JSON", `hello-world`, "invalid payload: body is not JSON: invalid character 'h' looking for beginning of value", "", "", time.Time{}},
		{"empty body", ``, "invalid payload: body is not JSON: unexpected end of JSON input", "", "", time.Time{}},
		{"truncated JSON", `{"event_id":"evt_1"`, "invalid payload: body is not JSON: unexpected end of JSON input", "", "", time.Time{}},
		{"array", `[1,2]`, "invalid payload: body is a JSON array, not an object", "", "", time.Time{}},
		{"string", `"evt_1"`, "invalid payload: body is a JSON string, not an object", "", "", time.Time{}},
		{"null", `null`, "invalid payload: body has no event_id", "", "", time.Time{}},
		{"empty object", `{}`, "invalid payload: body has no event_id", "", "", time.Time{}},
		{"data only", `{"data": ["1", "2"]}`, "invalid payload: body has no event_id", "", "", time.Time{}},
		{"empty event_id", `{"event_id":"","event_type":"a.b"}`, "invalid payload: body has no event_id", "", "", time.Time{}},
		{"missing event_type", `{"event_id":"evt_1"}`, "invalid payload: body has no event_type", "", "", time.Time{}},
		{"numeric event_id", `{"event_id":12,"event_type":"a.b"}`, "invalid payload: event_id is a JSON number, not a string", "", "", time.Time{}},
		{"object event_type", `{"event_id":"evt_1","event_type":{}}`, "invalid payload: event_type is a JSON object, not a string", "", "", time.Time{}},
		{"event_id of 256 bytes", `{"event_id":"` + long(256) + `","event_type":"a.b"}`, "invalid payload: event_id is longer than 255 bytes", "", "", time.Time{}},
		{"event_type of 129 bytes", `{"event_id":"evt_1","event_type":"` + long(129) + `"}`, "invalid payload: event_type is longer than 128 bytes", "", "", time.Time{}},
		{"CRLF in event_id", `{"event_id":"evt_1\r\nX-Evil: 1","event_type":"a.b"}`, "invalid payload: event_id contains control characters", "", "", time.Time{}},
		{"NUL in event_type", `{"event_id":"evt_1","event_type":"a.b\u0000"}`, "invalid payload: event_type contains control characters", "", "", time.Time{}},
		{"event_id of 255 bytes", `{"event_id":"` + long(255) + `","event_type":"` + long(128) + `"}`, "", "", long(255), time.Time{}},
		{"no occurred_at", `{"event_id":"evt_1","event_type":"a.b"}`, "", "", "evt_1", time.Time{}},
		{"null occurred_at", `{"event_id":"evt_1","event_type":"a.b","occurred_at":null}`, "", "", "evt_1", time.Time{}},
		{"numeric occurred_at", `{"event_id":"evt_1","event_type":"a.b","occurred_at":1710929255}`, "", "", "evt_1", time.Time{}},
		{"unparsable occurred_at", `{"event_id":"evt_1","event_type":"a.b","occurred_at":"yesterday"}`, "", "", "evt_1", time.Time{}},
		{"occurred_at with offset", `{"event_id":"evt_1","event_type":"a.b","occurred_at":"2024-03-20T11:07:35+01:00"}`, "", "", "evt_1", time.Date(2024, 3, 20, 10, 7, 35, 0, time.UTC)},
		{"escaped event_id", `{"event_id":"evt_\u00dc","event_type":"a.b"}`, "", "", "evt_Ü", time.Time{}},
	}
	p, err := NewPaddle([]string{paddleSecret}, Options{})
	require.NoError(t, err)
	now := time.Unix(paddleTS, 0)
	testPayloads(t, p, "", now, tests)
}

func TestPaddleSampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 123456789, time.UTC)
	p, err := NewPaddle([]string{paddleSecret, paddleOldSecret}, Options{})
	require.NoError(t, err)

	type sub struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		CustomerID string `json:"customer_id"`
		Items      []struct {
			Price struct {
				ID string `json:"id"`
			} `json:"price"`
		} `json:"items"`
		CustomData struct {
			Plan    string `json:"plan"`
			Credits int64  `json:"credits"`
			Email   string `json:"email"`
		} `json:"custom_data"`
	}
	type envelope struct {
		EventID        string          `json:"event_id"`
		EventType      string          `json:"event_type"`
		OccurredAt     string          `json:"occurred_at"`
		NotificationID string          `json:"notification_id"`
		Data           json.RawMessage `json:"data"`
	}

	tests := []struct {
		eventType  string
		wantStatus string
		wantPrefix string
	}{
		{"subscription.created", "active", "sub_01"},
		{"subscription.updated", "active", "sub_01"},
		{"subscription.canceled", "canceled", "sub_01"},
		{"subscription.past_due", "past_due", "sub_01"},
		{"customer.created", "active", "ctm_01"},
		{"transaction.completed", "completed", "txn_01"},
		{"transaction.created", "draft", "txn_01"},
		{"price.created", "active", "pri_01"},
		{"adjustment", "active", "adj_01"},
		{"x", "active", "obj_01"},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			const eventID = "evt_01hv8x2a5b9bf4yc3mj0c0ahqm"
			body := deterministicSample(t, p.Name(), eventID, tt.eventType, now)

			var env envelope
			require.NoError(t, json.Unmarshal(body, &env))
			require.Equal(t, eventID, env.EventID)
			require.Equal(t, tt.eventType, env.EventType)
			require.Equal(t, "2025-06-01T12:30:45.123456Z", env.OccurredAt)
			require.Regexp(t, `^ntf_01[0-9a-hjkmnp-tv-z]{24}$`, env.NotificationID)
			var s sub
			require.NoError(t, json.Unmarshal(env.Data, &s))
			require.True(t, strings.HasPrefix(s.ID, tt.wantPrefix), "data.id %q", s.ID)
			require.Equal(t, tt.wantStatus, s.Status)
			if strings.HasPrefix(tt.eventType, "subscription.") {
				require.Regexp(t, `^ctm_01[0-9a-z]{24}$`, s.CustomerID)
				require.Len(t, s.Items, 1)
				require.Regexp(t, `^pri_01`, s.Items[0].Price.ID)
				require.Equal(t, "pro", s.CustomData.Plan)
				require.Positive(t, s.CustomData.Credits)
				require.Contains(t, s.CustomData.Email, "@example.com")
				require.Greater(t, len(body), 900)
				require.Less(t, len(body), 4000) // Paddle's own subscription bodies are 2 to 4 KB
			}

			h, _, err := p.Sign(eventID, "", body, now)
			require.NoError(t, err)
			require.Equal(t, "ts=1748781045;h1="+refPaddleH1(paddleSecret, "1748781045", body), h.Get("Paddle-Signature"))
			ev, err := p.Verify(Request{Header: h, Body: body, Now: now.Add(2 * time.Second)})
			require.NoError(t, err)
			require.Equal(t, eventID, ev.ID)
			require.Equal(t, tt.eventType, ev.Type)
			require.True(t, ev.SignedAt.Equal(now.Truncate(time.Second)))
			require.True(t, ev.OccurredAt.Equal(now.Truncate(time.Microsecond)))

			requireRejectedBy(t, NewPaddle, paddleOldSecret, Options{}, h, body, now)
		})
	}

	t.Run("ids depend on the event id", func(t *testing.T) {
		a, err := samples.Body(p.Name(), "evt_a", "subscription.created", nil, now)
		require.NoError(t, err)
		b, err := samples.Body(p.Name(), "evt_b", "subscription.created", nil, now)
		require.NoError(t, err)
		require.NotEqual(t, a, b)
	})
	t.Run("invalid data", func(t *testing.T) {
		_, err := samples.Body(p.Name(), "evt_1", "price.created", []byte(`{`), now)
		require.Error(t, err)
	})
	t.Run("no id or type", func(t *testing.T) {
		_, err := samples.Body(p.Name(), "", "price.created", nil, now)
		require.Error(t, err)
		_, err = samples.Body(p.Name(), "evt_1", "", nil, now)
		require.Error(t, err)
	})
	t.Run("sign before 1970", func(t *testing.T) {
		_, _, err := p.Sign("evt_1", "", []byte("{}"), time.Unix(-1, 0))
		require.Error(t, err)
	})
}
