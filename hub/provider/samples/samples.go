package samples

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// builders are the body builders of the built-in providers, by name:
// Standard Webhooks providers, mounted under names of the operator's
// choice, are every other name.
var builders = map[string]func(eventID, eventType string, data []byte, now time.Time) ([]byte, error){
	"paddle":  paddle,
	"clerk":   clerk,
	"stripe":  stripe,
	"github":  github,
	"shopify": shopify,
	"twilio":  twilio,
}

// Has reports whether the provider named name has a builder of its own;
// any other name gets Standard Webhooks bodies.
func Has(name string) bool { return builders[name] != nil }

// Body returns a request body for an event of eventType with id eventID,
// as the provider named name sends it at now; any name without a builder
// of its own (Has) is a Standard Webhooks provider. data, when not nil,
// is the event's data object (each builder says where it goes; it must
// be valid JSON, a JSON object for GitHub and Twilio); nil builds a
// realistic one for the type.
func Body(name, eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if b := builders[name]; b != nil {
		return b(eventID, eventType, data, now)
	}
	return standard(name, eventID, eventType, data, now)
}

// Signer is what signs a body: provider.Signer, which every built-in
// provider implements.
type Signer interface {
	Name() string
	Sign(eventID, eventType string, body []byte, now time.Time) (h http.Header, target string, err error)
}

// Delivery is a signed request, ready to POST to the hub's base URL
// followed by Target.
type Delivery struct {
	Header http.Header // includes the body's Content-Type when the provider sends one
	Target string      // the request-target, e.g. "/webhooks/github"
	Body   []byte
}

// New builds a realistic delivery of s: Body(s.Name(), …), signed by s at
// now.
func New(s Signer, eventID, eventType string, data []byte, now time.Time) (Delivery, error) {
	body, err := Body(s.Name(), eventID, eventType, data, now)
	if err != nil {
		return Delivery{}, err
	}
	return Sign(s, eventID, eventType, body, now)
}

// Sign signs body (a sample's or any other) as the event eventID of
// eventType with s at now.
func Sign(s Signer, eventID, eventType string, body []byte, now time.Time) (Delivery, error) {
	h, target, err := s.Sign(eventID, eventType, body, now)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{Header: h, Target: target, Body: body}, nil
}

// sampleData checks a sample's event id and type, then returns data, which
// must be valid JSON, or, when data is nil, the JSON of build(). provider
// prefixes the errors.
func sampleData(provider, eventID, eventType string, data []byte, build func() any) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New(provider + ": sample needs an event id and type")
	}
	if data == nil {
		return json.Marshal(build())
	}
	if !json.Valid(data) {
		return nil, errors.New(provider + ": sample data is not valid JSON")
	}
	return data, nil
}
