package destination_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// sample is a body of the hub's samples (hub/provider/samples) for one
// provider and event type.
type sample struct {
	provider, eventType string
	body                []byte
}

// hubSamples returns the samples of every provider the hub knows, sorted:
// testdata/samples.json, which the hub's TestDestinationSamplesAreCurrent
// keeps equal to what hub/provider/samples builds (the subscriber side
// imports nothing from hub/).
func hubSamples(t testing.TB) []sample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "samples.json"))
	if err != nil {
		t.Fatal(err)
	}
	var byProvider map[string]map[string]string
	if err := json.Unmarshal(raw, &byProvider); err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, prov := range slices.Sorted(maps.Keys(byProvider)) {
		for _, typ := range slices.Sorted(maps.Keys(byProvider[prov])) {
			out = append(out, sample{prov, typ, []byte(byProvider[prov][typ])})
		}
	}
	if len(out) == 0 {
		t.Fatal("testdata/samples.json holds no sample")
	}
	return out
}

func event(prov, typ string, data []byte, received, occurred time.Time) subscriber.Event {
	return subscriber.Event{
		Metadata: schema.Metadata{
			MsgID: prov + ":evt_1", EventID: "evt_1", Provider: prov, EventType: typ,
			ArchiveID: "42", ReceivedAt: received, OccurredAt: occurred,
		},
		Subject: prov + "." + typ,
		Data:    data,
	}
}

// Envelopes built from every provider's sample body validate against
// schema/jsonschema/destination-envelope.json, carry the body as data
// (byte for byte when it is JSON), and raw payloads are the body itself.
func TestEnvelopeOfEverySample(t *testing.T) {
	sch := loadSchema(t, "jsonschema/destination-envelope.json")
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	received := now.Add(2 * time.Second)
	for _, smp := range hubSamples(t) {
		name, typ, body := smp.provider, smp.eventType, smp.body
		t.Run(name+"."+typ, func(t *testing.T) {
			for _, occurred := range []time.Time{{}, now} {
				ev := event(name, typ, body, received, occurred)
				env, err := destination.Body(destination.PayloadEnvelope, ev)
				if err != nil {
					t.Fatal(err)
				}
				if err := validate(sch, env); err != nil {
					t.Fatalf("envelope does not match the schema: %v\n%s", err, env)
				}
				var got struct {
					Type      string          `json:"type"`
					Timestamp string          `json:"timestamp"`
					Data      json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal(env, &got); err != nil {
					t.Fatal(err)
				}
				want := received
				if !occurred.IsZero() {
					want = occurred
				}
				if got.Type != name+"."+typ || got.Timestamp != want.Format(time.RFC3339Nano) {
					t.Errorf("type %q timestamp %q", got.Type, got.Timestamp)
				}
				if json.Valid(body) {
					if !bytes.Contains(env, bytes.TrimSpace(body)) {
						t.Errorf("data is not the body byte for byte")
					}
				} else {
					var fields map[string]any
					if err := json.Unmarshal(got.Data, &fields); err != nil || len(fields) == 0 {
						t.Errorf("form data = %s, %v", got.Data, err)
					}
				}
				if ct := destination.ContentType(destination.PayloadEnvelope, ev); ct != "application/json" {
					t.Errorf("envelope content type %q", ct)
				}
				raw, err := destination.Body(destination.PayloadRaw, ev)
				if err != nil || !bytes.Equal(raw, body) {
					t.Fatalf("raw = %q, %v", raw, err)
				}
			}
		})
	}
}

func TestEnvelopeForm(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	ev := event("twilio", "sms.status", []byte("MessageSid=SM1&To=%2B15551234&Tag=a&Tag=b&Body=%3Cb%3E+%26+%C3%A9&Empty="), at, time.Time{})
	env, err := destination.Body(destination.PayloadEnvelope, ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"twilio.sms.status","timestamp":"2026-01-02T02:04:05.000000006Z","data":{"Body":"<b> & é","Empty":"","MessageSid":"SM1","Tag":["a","b"],"To":"+15551234"}}`
	if string(env) != want {
		t.Fatalf("envelope\n got %s\nwant %s", env, want)
	}
	for _, tc := range []struct {
		p    destination.Payload
		data string
		want string
	}{
		{destination.PayloadRaw, "a=b&c=d", "application/x-www-form-urlencoded"},
		{destination.PayloadRaw, `{"a":1}`, "application/json"},
		{destination.PayloadRaw, " [1] ", "application/json"},
		{destination.PayloadRaw, "\x00\x01binary", "application/octet-stream"},
		{destination.PayloadRaw, "", "application/octet-stream"},
		{destination.PayloadEnvelope, "a=b", "application/json"},
	} {
		if got := destination.ContentType(tc.p, event("p", "t", []byte(tc.data), at, at)); got != tc.want {
			t.Errorf("ContentType(%s, %q) = %q, want %q", tc.p, tc.data, got, tc.want)
		}
	}
}

// A body that is not even a form (a bad escape, a ';') cannot be
// enveloped: a permanent decode error. A raw destination still gets it,
// exactly. Any other body is a form, read as the hub's archive reads it
// (schema.FormJSON): lenient, so that a destination delivers every
// Twilio event the hub accepted.
func TestEnvelopeRefusesOtherBodies(t *testing.T) {
	for _, data := range []string{"a=%zz", "%", "a;b=1", "{not json%"} {
		ev := event("p", "t", []byte(data), time.Now(), time.Time{})
		_, err := destination.Body(destination.PayloadEnvelope, ev)
		if !errors.Is(err, subscriber.ErrDecode) || !subscriber.IsPermanent(err) {
			t.Errorf("Body(%q) err = %v, want a permanent ErrDecode", data, err)
		}
		raw, err := destination.Body(destination.PayloadRaw, ev)
		if err != nil || string(raw) != data {
			t.Errorf("raw Body(%q) = %q, %v", data, raw, err)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for data, want := range map[string]string{
		"":            `{}`,
		"hello world": `{"hello world":""}`,
		"\xff\xfe":    `{"%FF%FE":""}`,
		"A=b&&C=d":    `{"A":"b","C":"d"}`,
		"=x":          `{"":"x"}`,
		"A=%ff":       `{"A":"\ufffd"}`,
		"A=b\n":       `{"A":"b\n"}`,
	} {
		env, err := destination.Body(destination.PayloadEnvelope, event("p", "t", []byte(data), at, time.Time{}))
		if err != nil || string(env) != `{"type":"p.t","timestamp":"2026-01-02T03:04:05Z","data":`+want+`}` {
			t.Errorf("Body(%q) = %s, %v; want data %s", data, env, err, want)
		}
	}
}

func TestEnvelopeJSONValues(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, data := range []string{`"s"`, `[1,2]`, `null`, `{"html":"<&>","n":1.50}`} {
		env, err := destination.Body(destination.PayloadEnvelope, event("p", "t", []byte("\n"+data+" "), at, time.Time{}))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"type":"p.t","timestamp":"2026-01-02T03:04:05Z","data":` + data + `}`
		if string(env) != want {
			t.Errorf("got %s want %s", env, want)
		}
	}
	// Without metadata the subject names the type.
	ev := subscriber.Event{Subject: "p.t", Data: []byte(`{}`)}
	env, err := destination.Body(destination.PayloadEnvelope, ev)
	if err != nil || !strings.HasPrefix(string(env), `{"type":"p.t","timestamp":"`) {
		t.Fatalf("%s, %v", env, err)
	}
}

// loadSchema reads one of schema.JSONSchemas.
func loadSchema(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := schema.JSONSchemas.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema = %v", s["$schema"])
	}
	return s
}

// validate checks doc against sch, for the keywords the hub's schemas use:
// type, required, properties, additionalProperties (false), items, const,
// enum, pattern, minLength, minimum and format date-time. Any other
// keyword fails the test, so the schema cannot outgrow the check.
func validate(sch map[string]any, doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return check(sch, v, "$")
}

func check(sch map[string]any, v any, at string) error {
	keys := make([]string, 0, len(sch))
	for k := range sch {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rule := sch[k]
		switch k {
		case "$schema", "$id", "title", "description":
		case "type":
			types := []any{rule}
			if l, ok := rule.([]any); ok {
				types = l
			}
			ok := false
			for _, typ := range types {
				ok = ok || jsonType(v, typ.(string))
			}
			if !ok {
				return fmt.Errorf("%s: %T is not of type %v", at, v, rule)
			}
		case "required":
			obj, _ := v.(map[string]any)
			for _, name := range rule.([]any) {
				if _, ok := obj[name.(string)]; !ok {
					return fmt.Errorf("%s: %s is required", at, name)
				}
			}
		case "properties":
			obj, _ := v.(map[string]any)
			for name, sub := range rule.(map[string]any) {
				if pv, ok := obj[name]; ok {
					if err := check(sub.(map[string]any), pv, at+"."+name); err != nil {
						return err
					}
				}
			}
		case "additionalProperties":
			if rule != false {
				return fmt.Errorf("%s: additionalProperties %v not supported by the test", at, rule)
			}
			props, _ := sch["properties"].(map[string]any)
			obj, _ := v.(map[string]any)
			for name := range obj {
				if _, ok := props[name]; !ok {
					return fmt.Errorf("%s: property %s is not allowed", at, name)
				}
			}
		case "items":
			arr, _ := v.([]any)
			for i, item := range arr {
				if err := check(rule.(map[string]any), item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		case "const":
			if fmt.Sprint(v) != fmt.Sprint(rule) {
				return fmt.Errorf("%s: %v is not %v", at, v, rule)
			}
		case "enum":
			ok := false
			for _, e := range rule.([]any) {
				ok = ok || fmt.Sprint(v) == fmt.Sprint(e)
			}
			if !ok {
				return fmt.Errorf("%s: %v is not one of %v", at, v, rule)
			}
		case "pattern":
			if s, ok := v.(string); ok && !regexp.MustCompile(rule.(string)).MatchString(s) {
				return fmt.Errorf("%s: %q does not match %s", at, s, rule)
			}
		case "minLength":
			if s, ok := v.(string); ok && float64(len([]rune(s))) < rule.(float64) {
				return fmt.Errorf("%s: %q is shorter than %v", at, s, rule)
			}
		case "minimum":
			if n, ok := v.(json.Number); ok {
				if f, _ := n.Float64(); f < rule.(float64) {
					return fmt.Errorf("%s: %v < %v", at, n, rule)
				}
			}
		case "format":
			if rule != "date-time" {
				return fmt.Errorf("%s: format %v not supported by the test", at, rule)
			}
			if s, ok := v.(string); ok {
				if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
					return fmt.Errorf("%s: %q is not a date-time", at, s)
				}
			}
		default:
			return fmt.Errorf("%s: keyword %s not supported by the test", at, k)
		}
	}
	return nil
}

func jsonType(v any, typ string) bool {
	switch v := v.(type) {
	case map[string]any:
		return typ == "object"
	case []any:
		return typ == "array"
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case nil:
		return typ == "null"
	case json.Number:
		if typ == "integer" {
			_, err := v.Int64()
			return err == nil
		}
		return typ == "number"
	}
	return false
}

// The validator itself refuses what the schema forbids.
func TestEnvelopeSchemaRefuses(t *testing.T) {
	t.Parallel()
	sch := loadSchema(t, "jsonschema/destination-envelope.json")
	for _, doc := range []string{
		`{"type":"p.t","timestamp":"2026-01-02T03:04:05Z"}`,
		`{"type":"p","timestamp":"2026-01-02T03:04:05Z","data":{}}`,
		`{"type":"p.t","timestamp":"yesterday","data":{}}`,
		`{"type":"p.t","timestamp":"2026-01-02T03:04:05Z","data":{},"extra":1}`,
		`[]`,
	} {
		if err := validate(sch, []byte(doc)); err == nil {
			t.Errorf("%s validates", doc)
		}
	}
}
