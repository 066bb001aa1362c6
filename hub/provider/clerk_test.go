package provider

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"
)

const (
	clerkSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	clerkOldSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	clerkMsgID     = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	clerkTS        = int64(1700000000)
)

var clerkTestBody = []byte(`{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user","first_name":"Example"},"instance_id":"ins_123","object":"event","timestamp":1654012591835,"type":"user.created"}`)

func TestClerkVerify(t *testing.T) {
	ts := strconv.FormatInt(clerkTS, 10)
	good := "v1," + refSvixV1(clerkSecret, clerkMsgID, ts, clerkTestBody)
	old := "v1," + refSvixV1(clerkOldSecret, clerkMsgID, ts, clerkTestBody)
	junk := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
	signedAt := time.Unix(clerkTS, 0)

	tests := []struct {
		name    string
		secrets []string
		tol     time.Duration
		id, ts  string
		sig     string
		body    []byte
		now     time.Time
		wantErr error
	}{
		{"valid", []string{clerkSecret}, 0, clerkMsgID, ts, good, clerkTestBody, signedAt, nil},
		{"rotation: secret without prefix", []string{clerkOldSecret, strings.TrimPrefix(clerkSecret, "whsec_")}, 0, clerkMsgID, ts, good, clerkTestBody, signedAt, nil},
		{"several v1, last matches", []string{clerkSecret}, 0, clerkMsgID, ts, junk + " " + old + " " + good, clerkTestBody, signedAt, nil},
		{"several v1, first matches", []string{clerkSecret}, 0, clerkMsgID, ts, good + " " + junk, clerkTestBody, signedAt, nil},
		{"other versions skipped", []string{clerkSecret}, 0, clerkMsgID, ts, "v1a,AAAA v2," + good[3:] + " " + good, clerkTestBody, signedAt, nil},
		{"double spaces", []string{clerkSecret}, 0, clerkMsgID, ts, "  " + junk + "  " + good + " ", clerkTestBody, signedAt, nil},
		{"tampered id", []string{clerkSecret}, 0, clerkMsgID + "x", ts, good, clerkTestBody, signedAt, ErrInvalidSignature},
		{"tampered timestamp", []string{clerkSecret}, 0, clerkMsgID, strconv.FormatInt(clerkTS+1, 10), good, clerkTestBody, signedAt, ErrInvalidSignature},
		{"only v2 with the right MAC", []string{clerkSecret}, 0, clerkMsgID, ts, "v2," + good[3:], clerkTestBody, signedAt, ErrInvalidSignature},
		{"only v1a with the right MAC", []string{clerkSecret}, 0, clerkMsgID, ts, "v1a," + good[3:], clerkTestBody, signedAt, ErrInvalidSignature},
		{"bare base64 without version", []string{clerkSecret}, 0, clerkMsgID, ts, good[3:], clerkTestBody, signedAt, ErrInvalidSignature},
		{"match beyond the 16th v1 is ignored", []string{clerkSecret}, 0, clerkMsgID, ts, strings.Repeat(junk+" ", 16) + good, clerkTestBody, signedAt, ErrInvalidSignature},
		{"match as the 16th v1", []string{clerkSecret}, 0, clerkMsgID, ts, strings.Repeat(junk+" ", 15) + good, clerkTestBody, signedAt, nil},
		{"forged and stale reports the signature", []string{clerkSecret}, 0, clerkMsgID, ts, junk, clerkTestBody, signedAt.Add(time.Hour), ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClerk(tt.secrets, Options{Tolerance: tt.tol})
			require.NoError(t, err)
			ev, ok := requireVerify(t, c, Request{Header: svixHeader(tt.id, tt.ts, tt.sig), Body: tt.body, Now: tt.now}, tt.wantErr)
			if !ok {
				return
			}
			require.Equal(t, tt.id, ev.ID)
			require.Equal(t, "user.created", ev.Type)
			require.Equal(t, tt.sig, ev.Signature)
			require.True(t, ev.SignedAt.Equal(signedAt))
			require.True(t, ev.OccurredAt.Equal(time.UnixMilli(1654012591835)))
		})
	}
}

func TestClerkMalformedHeaders(t *testing.T) {
	ts := strconv.FormatInt(clerkTS, 10)
	good := "v1," + refSvixV1(clerkSecret, clerkMsgID, ts, clerkTestBody)
	mac, err := base64.StdEncoding.DecodeString(good[3:])
	require.NoError(t, err)
	// The same MAC, base64 with non-zero padding bits: decodes leniently to
	// the same bytes, but is not the canonical encoding.
	last := strings.IndexByte(base64Alphabet, good[len(good)-2])
	nonCanonical := good[:len(good)-2] + string(base64Alphabet[last^1]) + "="
	require.NotEqual(t, good, nonCanonical)
	lenient, err := base64.StdEncoding.DecodeString(nonCanonical[3:])
	require.NoError(t, err)
	require.Equal(t, mac, lenient)

	dotted := "msg.1"
	tests := []struct {
		name, id, ts, sig, wantDetail string
	}{
		{"no headers", "", "", "", "missing svix-id/webhook-id header"},
		{"missing id", "", ts, good, "missing svix-id/webhook-id header"},
		{"missing timestamp", clerkMsgID, "", good, "missing svix-timestamp/webhook-timestamp header"},
		{"missing signature", clerkMsgID, ts, "", "missing svix-signature/webhook-signature header"},
		{"id with '.'", dotted, ts, "v1," + refSvixV1(clerkSecret, dotted, ts, clerkTestBody), "svix-id/webhook-id contains '.' or a control character"},
		{"id with a control character", "msg\x01", ts, good, "svix-id/webhook-id contains '.' or a control character"},
		{"id of 256 bytes", strings.Repeat("m", 256), ts, good, "svix-id/webhook-id is longer than 255 bytes"},
		{"non-numeric timestamp", clerkMsgID, "abc", good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"negative timestamp", clerkMsgID, "-1", good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"signed timestamp", clerkMsgID, "+" + ts, good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"milliseconds overflow", clerkMsgID, "99999999999999999999", good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"fractional timestamp", clerkMsgID, ts + ".0", good, "svix-timestamp/webhook-timestamp is not a unix time"},
		{"v2 only", clerkMsgID, ts, "v2,abc", "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"v1 without signature", clerkMsgID, ts, "v1,", "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"v1 without comma", clerkMsgID, ts, "v1", "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"base64 garbage", clerkMsgID, ts, "v1,!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"base64 garbage of the right length", clerkMsgID, ts, "v1," + strings.Repeat("!", 44), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"31-byte MAC", clerkMsgID, ts, "v1," + base64.StdEncoding.EncodeToString(mac[:31]), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"33-byte MAC", clerkMsgID, ts, "v1," + base64.StdEncoding.EncodeToString(append(mac, 0)), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"unpadded base64", clerkMsgID, ts, strings.TrimSuffix(good, "="), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"url-safe base64", clerkMsgID, ts, "v1," + base64.URLEncoding.EncodeToString(mac), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"hex MAC", clerkMsgID, ts, "v1," + refPaddleH1("k", "1", nil), "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"non-canonical base64", clerkMsgID, ts, nonCanonical, "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"comma separated list", clerkMsgID, ts, good + "," + good, "svix-signature/webhook-signature has no well-formed v1 entry"},
		{"good but junk MAC", clerkMsgID, ts, "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32)), "no v1 signature matches any secret"},
	}
	c, err := NewClerk([]string{clerkSecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireInvalidSignature(t, c, Request{Header: svixHeader(tt.id, tt.ts, tt.sig), Body: clerkTestBody, Now: time.Unix(clerkTS, 0)}, tt.wantDetail)
		})
	}
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func TestParseSvixSignatures(t *testing.T) {
	a := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	b := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 32)))
	tests := []struct {
		name, header string
		want         []string
	}{
		{"empty", "", nil},
		{"one", "v1," + a, []string{"a"}},
		{"two", "v1," + a + " v1," + b, []string{"a", "b"}},
		{"duplicates kept", "v1," + a + " v1," + a, []string{"a", "a"}},
		{"skips other versions", "v1a," + a + " v2," + a + " V1," + a + " v1," + b, []string{"b"}},
		{"skips malformed", "v1,abc v1," + a + "x v1,=" + a[1:] + " v1," + b, []string{"b"}},
		{"extra commas", "v1," + a + ",x v1," + b, []string{"b"}},
		{"tab is no separator", "v1," + a + "\tv1," + b, nil},
		{"spaces everywhere", "   v1," + a + "   ", []string{"a"}},
		{"at most 16", strings.Repeat("v1,"+a+" ", 16) + "v1," + b, strings.Split(strings.Repeat("a", 16), "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sigs := parseSvixSignatures(tt.header, nil)
			require.Len(t, sigs, len(tt.want))
			for i, w := range tt.want {
				require.Equal(t, strings.Repeat(w, 32), string(sigs[i][:]))
			}
		})
	}
}

func TestClerkPayload(t *testing.T) {
	tests := []payloadCase{
		{"not JSON", `{"test": 2432232314`, "invalid payload: body is not JSON: unexpected end of JSON input", "", "", time.Time{}},
		{"array", `[]`, "invalid payload: body is a JSON array, not an object", "", "", time.Time{}},
		{"no type", `{"test": 2432232314}`, "invalid payload: body has no type", "", "", time.Time{}},
		{"empty type", `{"type": ""}`, "invalid payload: body has no type", "", "", time.Time{}},
		{"numeric type", `{"type": 1}`, "invalid payload: type is a JSON number, not a string", "", "", time.Time{}},
		{"type of 129 bytes", `{"type": "` + strings.Repeat("t", 129) + `"}`, "invalid payload: type is longer than 128 bytes", "", "", time.Time{}},
		{"type with LF", `{"type": "user.created\n"}`, "invalid payload: type contains control characters", "", "", time.Time{}},
		{"type of 128 bytes", `{"type": "` + strings.Repeat("t", 128) + `"}`, "", strings.Repeat("t", 128), "", time.Time{}},
		{"no timestamp", `{"type":"user.created"}`, "", "user.created", "", time.Time{}},
		{"string timestamp", `{"type":"user.created","timestamp":"1654012591835"}`, "", "user.created", "", time.Time{}},
		{"fractional timestamp", `{"type":"user.created","timestamp":1654012591835.5}`, "", "user.created", "", time.Time{}},
		{"negative timestamp", `{"type":"user.created","timestamp":-1}`, "", "user.created", "", time.Time{}},
		{"huge timestamp", `{"type":"user.created","timestamp":1e300}`, "", "user.created", "", time.Time{}},
		{"timestamp in ms", `{"type":"user.created","timestamp":1654012591835}`, "", "user.created", "", time.UnixMilli(1654012591835)},
	}
	c, err := NewClerk([]string{clerkSecret}, Options{})
	require.NoError(t, err)
	now := time.Unix(clerkTS, 0)
	testPayloads(t, c, clerkMsgID, now, tests)
}

func TestClerkSampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 123456789, time.UTC)
	c, err := NewClerk([]string{clerkSecret, clerkOldSecret}, Options{})
	require.NoError(t, err)

	type email struct {
		ID           string `json:"id"`
		EmailAddress string `json:"email_address"`
	}
	type data struct {
		ID                    string  `json:"id"`
		Object                string  `json:"object"`
		Deleted               bool    `json:"deleted"`
		FirstName             string  `json:"first_name"`
		LastName              string  `json:"last_name"`
		PrimaryEmailAddressID string  `json:"primary_email_address_id"`
		EmailAddresses        []email `json:"email_addresses"`
		UserID                string  `json:"user_id"`
	}
	type envelope struct {
		Data       data   `json:"data"`
		InstanceID string `json:"instance_id"`
		Object     string `json:"object"`
		Timestamp  int64  `json:"timestamp"`
		Type       string `json:"type"`
	}

	tests := []struct {
		eventType  string
		wantPrefix string
		wantObject string
	}{
		{"user.created", "user_", "user"},
		{"user.updated", "user_", "user"},
		{"user.deleted", "user_", "user"},
		{"session.created", "sess_", "session"},
		{"organization.created", "org_", "organization"},
		{"email.created", "ema_", "email"},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			const eventID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
			body := deterministicSample(t, c.Name(), eventID, tt.eventType, now)

			var env envelope
			require.NoError(t, json.Unmarshal(body, &env))
			require.Equal(t, "event", env.Object)
			require.Equal(t, tt.eventType, env.Type)
			require.Equal(t, now.UnixMilli(), env.Timestamp)
			require.Regexp(t, `^ins_[0-9A-Za-z]{27}$`, env.InstanceID)
			require.True(t, strings.HasPrefix(env.Data.ID, tt.wantPrefix), "data.id %q", env.Data.ID)
			require.Equal(t, tt.wantObject, env.Data.Object)
			switch tt.eventType {
			case "user.created", "user.updated":
				require.Regexp(t, `^user_[0-9A-Za-z]{27}$`, env.Data.ID)
				require.Equal(t, "Ada", env.Data.FirstName)
				require.Equal(t, "Lovelace", env.Data.LastName)
				require.Len(t, env.Data.EmailAddresses, 1)
				require.Equal(t, env.Data.PrimaryEmailAddressID, env.Data.EmailAddresses[0].ID)
				require.Regexp(t, `^idn_`, env.Data.PrimaryEmailAddressID)
				require.Contains(t, env.Data.EmailAddresses[0].EmailAddress, "@example.com")
				require.Greater(t, len(body), 900)
				require.Less(t, len(body), 2000)
			case "user.deleted":
				require.True(t, env.Data.Deleted)
			case "session.created":
				require.Regexp(t, `^user_`, env.Data.UserID)
			}

			h, _, err := c.Sign(eventID, "", body, now)
			require.NoError(t, err)
			require.Equal(t, eventID, h.Get("svix-id"))
			require.Equal(t, "1748781045", h.Get("svix-timestamp"))
			require.Equal(t, "v1,"+refSvixV1(clerkSecret, eventID, "1748781045", body), h.Get("svix-signature"))

			ev, err := c.Verify(Request{Header: h, Body: body, Now: now.Add(time.Minute)})
			require.NoError(t, err)
			require.Equal(t, eventID, ev.ID)
			require.Equal(t, tt.eventType, ev.Type)
			require.True(t, ev.SignedAt.Equal(now.Truncate(time.Second)))
			require.True(t, ev.OccurredAt.Equal(now.Truncate(time.Millisecond)))

			requireRejectedBy(t, NewClerk, clerkOldSecret, Options{}, h, body, now)
		})
	}

	t.Run("given data", func(t *testing.T) {
		body, err := samples.Body(c.Name(), "msg_1", "user.created", []byte(`{"id":"user_1"}`), now)
		require.NoError(t, err)
		var env envelope
		require.NoError(t, json.Unmarshal(body, &env))
		require.Equal(t, "user_1", env.Data.ID)
	})
	t.Run("invalid data", func(t *testing.T) {
		_, err := samples.Body(c.Name(), "msg_1", "user.created", []byte(`nope`), now)
		require.Error(t, err)
	})
	t.Run("invalid svix-id", func(t *testing.T) {
		for _, id := range []string{"", "msg.1", "msg\n1", strings.Repeat("m", 256)} {
			_, _, err := c.Sign(id, "", []byte("{}"), now)
			require.Error(t, err, "id %q", id)
		}
	})
	t.Run("sign before 1970", func(t *testing.T) {
		_, _, err := c.Sign("msg_1", "", []byte("{}"), time.Unix(-1, 0))
		require.Error(t, err)
	})
}
