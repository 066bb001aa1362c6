package provider

import "time"

// Request, and the optional interface Payloader: a provider implements
// Provider and Signer; Payloader adds what the schemes whose bodies are
// not always JSON need. The HTTP server detects it with a type
// assertion, so a provider that does not need it is unaffected.

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
