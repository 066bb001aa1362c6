package samples

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
	"github.com/hookhub/hookhub/internal/jsontext"
)

// Twilio statuses, for samples.
var (
	twilioMessageStatuses = []string{"accepted", "scheduled", "canceled", "queued", "sending", "sent", "failed", "delivered", "undelivered", "receiving", "received", "read", "partially_delivered"}
	twilioCallStatuses    = []string{"queued", "initiated", "ringing", "in-progress", "completed", "busy", "failed", "no-answer", "canceled"}
)

// twilioSID derives a Twilio SID (two letters and 32 hex digits) from seed.
func twilioSID(prefix, seed string) string {
	return prefix + derive.String(prefix+"/"+seed, 32, "0123456789abcdef")
}

// twilio returns a form-encoded Twilio request body. Types whose first
// token is call, calls or voice give a voice call webhook, every other
// type a messaging one. The status is the type's second token when it is
// a Twilio status ("message.delivered", "call.completed"; the default is
// received for messages, ringing for calls), so that Verify infers the
// same type when the URL carries none. SIDs depend only on eventID, so the
// output is deterministic given its inputs. data, when not nil, must be a
// JSON object of strings, numbers, booleans or nulls: its members replace
// parameters of the same name (null removes one).
func twilio(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("twilio: sample needs an event id and type")
	}
	kind, action, _ := strings.Cut(eventType, ".")
	account := twilioSID("AC", "account")
	form := url.Values{}
	set := func(kv ...string) {
		for i := 0; i+1 < len(kv); i += 2 {
			form.Set(kv[i], kv[i+1])
		}
	}
	set("AccountSid", account, "ApiVersion", "2010-04-01",
		"From", "+14155550123", "FromCity", "SAN FRANCISCO", "FromState", "CA", "FromZip", "94105", "FromCountry", "US",
		"To", "+442071838750", "ToCity", "", "ToState", "", "ToZip", "", "ToCountry", "GB")
	switch kind {
	case "call", "calls", "voice":
		status := "ringing"
		if slices.Contains(twilioCallStatuses, action) {
			status = action
		}
		set("CallSid", twilioSID("CA", eventID), "CallStatus", status, "Direction", "inbound",
			"Caller", "+14155550123", "CallerCity", "SAN FRANCISCO", "CallerState", "CA", "CallerZip", "94105", "CallerCountry", "US",
			"Called", "+442071838750", "CalledCity", "", "CalledState", "", "CalledZip", "", "CalledCountry", "GB",
			"StirVerstat", "TN-Validation-Passed-A",
			"CallToken", `{"parentCallInfoToken":"eyJhbGciOiJFUzI1NiJ9.`+derive.String("token/"+eventID, 160, base62)+`","identityHeaderTokens":[]}`)
		if status == "completed" {
			set("CallDuration", "42", "Duration", "1", "SipResponseCode", "200",
				"CallbackSource", "call-progress-events", "SequenceNumber", "3",
				"Timestamp", now.UTC().Format(time.RFC1123Z))
		}
	default:
		status := "received"
		if slices.Contains(twilioMessageStatuses, action) {
			status = action
		}
		sid := twilioSID("SM", eventID)
		set("MessageSid", sid, "SmsSid", sid, "SmsMessageSid", sid, "SmsStatus", status,
			"MessagingServiceSid", twilioSID("MG", "service"), "NumMedia", "0", "NumSegments", "1", "ReferralNumMedia", "0",
			"Body", "Hi! Is the analytical engine still available for a demo on Thursday afternoon? It would be great to bring two colleagues along.")
		if status != "received" {
			set("MessageStatus", status, "ChannelToAddress", "+44207183XXXX", "ChannelPrefix", "sms",
				"ChannelInstallSid", twilioSID("XE", "channel"), "StructuredMessage", "false")
		}
		if status == "failed" || status == "undelivered" {
			set("ErrorCode", "30003", "ErrorMessage", "Unreachable destination handset")
		}
	}
	if data != nil {
		var members map[string]json.RawMessage
		if jsontext.FirstNonSpace(data) != '{' || json.Unmarshal(data, &members) != nil {
			return nil, errors.New("twilio: sample data is not a JSON object")
		}
		for name, raw := range members {
			var s string
			switch {
			case string(raw) == "null":
				form.Del(name)
				continue
			case raw[0] == '"':
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, err
				}
			case raw[0] == '{' || raw[0] == '[':
				return nil, fmt.Errorf("twilio: sample data member %q is not a string, number or boolean", name)
			default:
				s = string(raw)
			}
			form.Set(name, s)
		}
	}
	return []byte(form.Encode()), nil
}
