package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/hookhub/hookhub/hub/provider"
)

// StripeDefaultBaseURL is Stripe's API.
const StripeDefaultBaseURL = "https://api.stripe.com"

// StripeMaxPage is the largest page GET /v1/events returns (limit).
const StripeMaxPage = 100

// StripeConfig configures a Stripe source: BaseURL is
// https://api.stripe.com by default (a trailing /v1, as Stripe's
// documentation writes it, is dropped: the source appends it), Key a
// secret or restricted key (sk_..., rk_...) with read access to events,
// PageSize 1..100 (default 100).
type StripeConfig = APIConfig

// Stripe lists Stripe events: GET /v1/events?created[gte]=..&created[lt]=..
// &limit=..&starting_after=<id>, newest first, while has_more. The body of
// each event is the event object's bytes as the API returned them in the
// data array.
type Stripe struct{ lister }

// stripeQuery asks for the events created in [since, until). Stripe's
// created is in whole seconds: the query covers the seconds the window
// touches, and the engine keeps what lies inside it.
func stripeQuery(q url.Values, pageSize int, since, until time.Time, cursor string) {
	if cursor != "" {
		q.Set("starting_after", cursor)
	}
	q.Set("limit", strconv.Itoa(pageSize))
	if !since.IsZero() {
		q.Set("created[gte]", strconv.FormatInt(since.Unix(), 10))
	}
	if !until.IsZero() {
		lt := until.Unix()
		if until.After(time.Unix(lt, 0)) {
			lt++ // a fraction of a second past lt is still inside the window
		}
		q.Set("created[lt]", strconv.FormatInt(lt, 10))
	}
}

// NewStripe returns a Stripe source; it fails when the key is empty or
// the base URL is not an absolute http(s) URL.
func NewStripe(cfg StripeConfig) (*Stripe, error) {
	return newSource[Stripe](cfg, listing{"stripe", "/v1/events", stripeQuery, parseStripeList}, "a Stripe secret or restricted key with read access to events", StripeDefaultBaseURL, "/v1", StripeMaxPage)
}

// stripeList is a Stripe list object.
type stripeList struct {
	Object  string    `json:"object"`
	Data    pageItems `json:"data"`
	HasMore bool      `json:"has_more"`
}

// ErrBadAnswer wraps every answer of a provider API the sources cannot
// use (not the documented shape).
var ErrBadAnswer = errors.New("unexpected api answer")

// ParseStripeList reads an answer of GET /v1/events (untrusted input). Each
// event's Body is its object's exact bytes; ID, Type and OccurredAt are
// read from them as the Stripe verifier reads a webhook's body, and are
// left empty, with Err saying why (the engine counts the event failed),
// when they cannot be. An OccurredAt that is not plausible now is dropped,
// as the webhook path drops it (plausible). Next is the last event's id
// while has_more is true.
func ParseStripeList(data []byte) (Page, error) {
	return parseStripeList(data, time.Time{}, time.Time{}, time.Now())
}

// The listing asked Stripe for the window: parse keeps every event.
func parseStripeList(data []byte, _, _, now time.Time) (Page, error) {
	var l stripeList
	if err := json.Unmarshal(data, &l); err != nil {
		return Page{}, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	if l.Object != "list" {
		return Page{}, fmt.Errorf("%w: object is %q, not a list", ErrBadAnswer, snippet([]byte(l.Object)))
	}
	page := Page{Events: make([]Event, 0, len(l.Data))}
	for _, raw := range l.Data {
		ev := listedEvent(raw, provider.StripeEvent, "id", now)
		page.Events = append(page.Events, ev)
	}
	if l.HasMore {
		if len(page.Events) == 0 {
			return Page{}, fmt.Errorf("%w: has_more without events", ErrBadAnswer)
		}
		last := page.Events[len(page.Events)-1].ID
		if !validCursor(last) {
			return Page{}, fmt.Errorf("%w: the page's last event has no usable id to continue from", ErrBadAnswer)
		}
		page.Next = last
	}
	return page, nil
}
