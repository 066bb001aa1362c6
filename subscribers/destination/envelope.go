package destination

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Content types of the bodies Body returns.
const (
	ContentTypeJSON  = "application/json"
	ContentTypeForm  = "application/x-www-form-urlencoded"
	ContentTypeOctet = "application/octet-stream"
)

// Body returns what is POSTed to a destination for ev: for PayloadRaw,
// ev.Data exactly; otherwise the envelope, the Standard Webhooks payload
// shape (schema: schema/jsonschema/destination-envelope.json):
//
//	{"type":"<provider>.<event_type>","timestamp":"<RFC 3339 UTC>","data":<the event>}
//
// timestamp is when the event occurred if the provider says so
// (ev.OccurredAt), else when the hub received it (ev.ReceivedAt), else
// now. data is ev.Data byte for byte when it is a JSON value; any other
// body is a form (Twilio's application/x-www-form-urlencoded) and becomes
// the object schema.FormJSON makes of it, as the hub's archive has it. A
// body that is not even a form (a bad escape) cannot be enveloped: the
// error wraps subscriber.ErrDecode and is permanent (subscriber.Permanent).
func Body(p Payload, ev subscriber.Event) ([]byte, error) {
	if p == PayloadRaw {
		return ev.Data, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if !json.Valid(data) {
		form, err := schema.FormJSON(ev.Data)
		if err != nil {
			return nil, subscriber.Permanent(fmt.Errorf("%w: %s %s: the body is neither JSON nor a form (%v), and cannot be enveloped (payload: raw sends it as it is)",
				subscriber.ErrDecode, ev.Provider, ev.EventID, err))
		}
		data = form
	}
	typ := ev.Subject
	if ev.Provider != "" && ev.EventType != "" {
		typ = ev.Provider + "." + ev.EventType
	}
	at := ev.OccurredAt
	if at.IsZero() {
		at = ev.ReceivedAt
	}
	if at.IsZero() {
		at = time.Now()
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(typ) + 80)
	b.WriteString(`{"type":`)
	b.Write(jsonString(typ))
	b.WriteString(`,"timestamp":"`)
	b.WriteString(at.UTC().Format(time.RFC3339Nano))
	b.WriteString(`","data":`)
	b.Write(data)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ContentType is the Content-Type of Body(p, ev): application/json for
// the envelope; for a raw payload, application/json when ev.Data is JSON,
// application/x-www-form-urlencoded when it is a form, else
// application/octet-stream (the hub does not keep the provider's
// Content-Type).
func ContentType(p Payload, ev subscriber.Event) string {
	switch {
	case p != PayloadRaw, json.Valid(ev.Data):
		return ContentTypeJSON
	case isForm(ev.Data):
		return ContentTypeForm
	}
	return ContentTypeOctet
}

// jsonString is s as a JSON string, without HTML escaping.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// isForm reports whether body looks like application/x-www-form-urlencoded
// text, as a form on the wire is: non-empty, printable ASCII without
// spaces, and a form to schema.FormJSON.
func isForm(body []byte) bool {
	if len(body) == 0 || bytes.ContainsFunc(body, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return false
	}
	_, err := url.ParseQuery(string(body))
	return err == nil
}
