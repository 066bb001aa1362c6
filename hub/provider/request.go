package provider

import (
	"net/http"
	"time"
)

// Optional interfaces. A provider implements Provider and Sender; the
// ones below add what some schemes need beyond headers and body. The HTTP
// server and `hub send` detect them with type assertions, so a provider
// that does not need one is unaffected.

// Request is everything the HTTP server knows about a delivery: what
// Provider.Verify authenticates.
type Request struct {
	Header Header
	Body   []byte // the raw body, as received
	// URI is the request-target exactly as received on the request line:
	// the path and the raw, undecoded query, e.g.
	// "/webhooks/twilio?type=sms.status". It must not be rebuilt from a
	// parsed URL: the query's exact bytes may be signed. The returned
	// Event may share its memory (a type read from the query), so it must
	// not alias a buffer reused after the request.
	URI string
	Now time.Time
}

// Payloader is implemented by providers whose bodies are not always JSON
// (Twilio's and GitHub's form-encoded deliveries). The archive's payload
// column is JSONB; for these providers the server archives PayloadJSON's
// result there instead of the body. The body column and the published
// message keep the exact bytes received, so subscribers can re-verify
// them. PayloadJSON is called only on a body its provider's Verify
// accepted; it returns valid JSON, never modifies body, and reports
// failures (which a verified body never causes) wrapping ErrPayload.
type Payloader interface {
	PayloadJSON(body []byte) ([]byte, error)
}

// TypedSender is implemented by Senders whose event type travels outside
// the body: in a header (GitHub's X-GitHub-Event, Shopify's
// X-Shopify-Topic) or in the URL (Twilio's ?type=). Their Sign cannot set
// it. `hub send` must call SignTyped instead of Sign when the sender
// implements it, and POST to the hub's base URL followed by target, a
// request-target such as "/webhooks/github" or
// "/webhooks/twilio?type=sms.status". The returned headers include the
// body's Content-Type, which the caller must keep.
type TypedSender interface {
	Sender
	SignTyped(eventID, eventType string, body []byte, now time.Time) (h http.Header, target string, err error)
}
