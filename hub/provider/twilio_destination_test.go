package provider

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// FuzzTwilioDestinationDelivers: every Twilio body the hub accepts (a
// signed request Verify takes and PayloadJSON archives) is delivered by an
// envelope destination (destination.Body does not refuse it), and the
// envelope's data is the archive's payload: the hub and the destinations
// read a form by one rule (schema.FormJSON).
func FuzzTwilioDestinationDelivers(f *testing.F) {
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	if err != nil {
		f.Fatal(err)
	}
	sample, err := samples.Body(tw.Name(), "evt_1", "message.delivered", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample, "sms.status")
	// Forms a destination used to refuse: a space, bytes that are not
	// UTF-8, an empty parameter, a name without '=', a newline, no body.
	for _, b := range []string{"A=b c", "A=%FF&B=%C3", "A=b&&C=d", "A=1&B", "MessageSid=SM1&SmsStatus=sent\n",
		"", "Body=%3Cb%3E+%26", "A=1&A=2&%FF=3", `{"a":1}`, " [1]", "a=1", "A=%zz"} {
		f.Add([]byte(b), "sms.status")
	}
	f.Fuzz(func(t *testing.T, body []byte, typ string) {
		h, target, err := tw.Sign("evt_1", typ, body, fuzzNow)
		if err != nil {
			return // not signable: no request the hub could accept
		}
		ev, err := tw.Verify(Request{Header: h, Body: body, URI: target, Now: fuzzNow})
		if err != nil {
			return
		}
		payload, err := tw.PayloadJSON(body)
		if err != nil {
			t.Fatalf("accepted %q, archived nothing: %v", body, err)
		}
		in := subscriber.Event{Metadata: schema.Metadata{Provider: tw.Name(), EventType: ev.Type, EventID: ev.ID}, Data: body}
		env, err := destination.Body(destination.PayloadEnvelope, in)
		if err != nil {
			t.Fatalf("accepted %q, a destination refuses it: %v", body, err)
		}
		var got struct{ Data any }
		var want any
		if err := json.Unmarshal(env, &got); err != nil {
			t.Fatalf("envelope %q: %v", env, err)
		}
		if err := json.Unmarshal(payload, &want); err != nil {
			t.Fatalf("payload %q: %v", payload, err)
		}
		if !reflect.DeepEqual(got.Data, want) {
			t.Fatalf("body %q: the destination sends data %s, the archive has %s", body, env, payload)
		}
	})
}
