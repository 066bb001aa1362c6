package destination

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
	"unicode/utf8"

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
// now. data is ev.Data byte for byte when it is a JSON value; a form body
// (Twilio's application/x-www-form-urlencoded) becomes an object of its
// fields, each a string, or an array of strings when repeated. A body
// that is neither cannot be enveloped: the error wraps
// subscriber.ErrDecode and is permanent (subscriber.Permanent).
func Body(p Payload, ev subscriber.Event) ([]byte, error) {
	if p == PayloadRaw {
		return ev.Data, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if !json.Valid(data) {
		form, ok := formObject(ev.Data)
		if !ok {
			return nil, subscriber.Permanent(fmt.Errorf("%w: %s %s: the body is neither JSON nor a form, and cannot be enveloped (payload: raw sends it as it is)",
				subscriber.ErrDecode, ev.Provider, ev.EventID))
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
// text: non-empty, printable ASCII without spaces, every field "name=value"
// with a non-empty name, valid escapes, and UTF-8 once decoded.
func isForm(body []byte) bool {
	_, ok := parseForm(body)
	return ok
}

func parseForm(body []byte) (url.Values, bool) {
	if len(body) == 0 {
		return nil, false
	}
	for _, c := range body {
		if c <= ' ' || c >= 0x7f {
			return nil, false
		}
	}
	for _, field := range bytes.Split(body, []byte("&")) {
		name, _, ok := bytes.Cut(field, []byte("="))
		if !ok || len(name) == 0 {
			return nil, false
		}
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, false
	}
	for k, vs := range v {
		if k == "" || !utf8.ValidString(k) {
			return nil, false
		}
		for _, s := range vs {
			if !utf8.ValidString(s) {
				return nil, false
			}
		}
	}
	return v, true
}

// formObject renders a form body as a JSON object: a field's value, or an
// array of its values when it is repeated (in body order).
func formObject(body []byte) ([]byte, bool) {
	v, ok := parseForm(body)
	if !ok {
		return nil, false
	}
	obj := make(map[string]any, len(v))
	for k, vs := range v {
		if len(vs) == 1 {
			obj[k] = vs[0]
		} else {
			obj[k] = vs
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
}
