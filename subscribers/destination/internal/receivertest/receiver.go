package receivertest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// MaxBody caps a delivery's body; a larger one is answered 413.
const MaxBody = 1 << 20

// maxRecords caps the requests a receiver remembers (as receiver.mjs does).
const maxRecords = 10000

// Receiver is what Node and Go both are.
type Receiver interface {
	// URL is the base URL to deliver to (any path but /_control and
	// /_received).
	URL() string
	// Control replaces the receiver's behaviour and restarts the per-id
	// attempt counts; the zero Control answers 200.
	Control(t testing.TB, c Control)
	// Received returns every delivery request so far, in arrival order.
	Received(t testing.TB) []Received
	// Accepted returns the number of unique webhook-ids answered 2xx.
	Accepted(t testing.TB) int
}

// Control is a receiver's behaviour. A verified delivery is answered, in
// this order: FailStatus for the first FailFirst attempts of its
// webhook-id, 410 when Gone, else Status; a 2xx for an id already answered
// 2xx is a 200 flagged Duplicate.
type Control struct {
	FailFirst  int           // attempts of each webhook-id answered FailStatus
	FailStatus int           // default 500
	Status     int           // default 200
	Delay      time.Duration // waited before answering
	Gone       bool          // answer 410

	// Go receiver only; Node.Control fails the test when one is set.
	Hang         bool // never answer (until the client gives up or the test ends)
	EndlessBody  bool // answer 200 with a body that never ends
	RedirectLoop bool // answer 302 to the URL requested
	// Handler, when set, answers every delivery (verified or not) in place
	// of the rules above; the request's body is the one received, already
	// recorded with its verdict and the status it answers (never counted
	// in Accepted).
	Handler http.HandlerFunc
}

// controlJSON is Control on the wire (receiver.mjs's POST /_control).
type controlJSON struct {
	FailFirst  int  `json:"fail_first"`
	FailStatus int  `json:"fail_status"`
	Status     int  `json:"status"`
	DelayMS    int  `json:"delay_ms"`
	Gone       bool `json:"gone"`
}

func (c Control) wire() controlJSON {
	w := controlJSON{FailFirst: c.FailFirst, FailStatus: c.FailStatus, Status: c.Status,
		DelayMS: int(c.Delay / time.Millisecond), Gone: c.Gone}
	if w.FailStatus == 0 {
		w.FailStatus = http.StatusInternalServerError
	}
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w
}

// Received is one delivery request as the receiver saw it.
type Received struct {
	ID           string            `json:"id"`        // webhook-id
	Timestamp    string            `json:"timestamp"` // webhook-timestamp
	Type         string            `json:"type"`      // the body's "type" when it is a JSON object with one
	VerifiedStd  bool              `json:"verified_std"`
	VerifiedSvix bool              `json:"verified_svix"`
	Status       int               `json:"status_sent"` // 0: no answer (Hang) or unknown
	Duplicate    bool              `json:"duplicate"`   // the id had been answered 2xx before
	Headers      map[string]string `json:"headers"`     // hookhub-* headers, lower-case names
	BodySHA256   string            `json:"body_sha256"` // hex
}

// record describes the request r with body, verdict not yet set.
func record(r *http.Request, body []byte) Received {
	rec := Received{
		ID:        r.Header.Get("webhook-id"),
		Timestamp: r.Header.Get("webhook-timestamp"),
		Headers:   map[string]string{},
	}
	for k, v := range r.Header {
		if k = strings.ToLower(k); strings.HasPrefix(k, "hookhub-") && len(v) > 0 {
			rec.Headers[k] = v[0]
		}
	}
	var typed struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(body, &typed) == nil {
		rec.Type, _ = typed.Type.(string)
	}
	sum := sha256.Sum256(body)
	rec.BodySHA256 = hex.EncodeToString(sum[:])
	return rec
}

// answer is the status Control c gives the n-th verified attempt of an id.
func (c controlJSON) answer(n int) int {
	switch {
	case n <= c.FailFirst:
		return c.FailStatus
	case c.Gone:
		return http.StatusGone
	}
	return c.Status
}

func is2xx(status int) bool { return status >= 200 && status < 300 }
