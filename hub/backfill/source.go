package backfill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/provider"
)

// Event is one event as a provider's API lists it.
type Event struct {
	// ID and Type are the event's id and type exactly as the hub's
	// verifier extracts them from the same event's webhook (hub/provider),
	// so the dedup row of a webhook and of a backfilled copy coincide.
	ID   string
	Type string
	// OccurredAt is when the provider says the event happened (zero if
	// unknown); it drives the checkpoint and the --since/--until window.
	OccurredAt time.Time
	// OccurredAtAPIOnly: the event's webhook carries no time the hub's
	// verifier reads, and OccurredAt is only what the API says (GitHub's
	// delivered_at). It then places the event in the window but is not
	// archived (no Hub-Occurred-At), as the webhook's copy would have
	// none either.
	OccurredAtAPIOnly bool
	// Entities are the business objects the event is about, as the
	// hub's verifier names them from the same event's webhook
	// (hub/provider), so that a backfilled copy is found by the same
	// entity search as its webhook would be.
	Entities []hub.Entity
	// Body is the event object's bytes as the API returned them (archived
	// as the body). Empty when the listing does not carry it: then the
	// source implements Fetcher.
	Body []byte
	// Invalid, when set, is why the API's item cannot be ingested (it is
	// malformed, or its id or type would be refused by the webhook path:
	// the reason the engine counts and logs); ID is still set when the
	// item's id could be read. Such an event is counted failed with its id
	// and reason when the hub does not have it, and skipped: it never
	// fails its page.
	Invalid error
}

// Page is one page of a listing. Next is the cursor of the following page,
// "" when there is none. Events are in the provider's order, newest first
// (every source's): the engine ends a listing at a page whose events all
// occurred before the window.
type Page struct {
	Events []Event
	Next   string
}

// Source lists one provider's events through its API.
type Source interface {
	// Provider is the hub's provider name ("stripe", "paddle", "github").
	Provider() string
	// List returns the page at cursor ("" = first page) of the events that
	// occurred within [since, until). A source whose API cannot filter by
	// time returns more and the engine filters; it must still stop paging
	// (Next == "") once it is past since.
	List(ctx context.Context, since, until time.Time, cursor string) (Page, error)
}

// Fetcher is implemented by sources whose listing lacks the event bodies
// (GitHub's deliveries): the engine fetches only the missing events' bodies.
type Fetcher interface {
	Fetch(ctx context.Context, ev Event) (Event, error)
}

// Redeliverer is implemented by sources that can ask the provider to send
// an event's webhook again (GitHub's redeliver attempts). The engine uses
// it only when told to (Request.Redeliver, --redeliver), and then ingests
// nothing itself; by default it ingests the API's copy.
type Redeliverer interface {
	Redeliver(ctx context.Context, ev Event) error
}

// Sentinel errors sources return (wrapped), for the engine and the CLI to
// branch on.
var (
	// ErrUnauthorized: the API refused the credentials (401/403). The
	// error text names the variable holding them.
	ErrUnauthorized = errors.New("provider api refused the credentials")
	// ErrRateLimited: 429 still after the retries allowed.
	ErrRateLimited = errors.New("provider api rate limit")
	// ErrNoRedeliver: a redelivering run of a source that cannot ask its
	// provider to send a webhook again (not a Redeliverer).
	ErrNoRedeliver = errors.New("the provider cannot redeliver webhooks")
)

// listedEvent is an item of a listing (raw, its exact bytes) as an Event:
// its id, type, entities and time (dropped when not plausible now) as read,
// the provider verifier's reading of a webhook body, finds them; when read
// refuses it, the id under idKey (itemID) and the reason, and the engine
// counts the event failed.
func listedEvent(raw []byte, read func([]byte) (provider.Event, error), idKey string, now time.Time) Event {
	ev := Event{Body: raw}
	if pe, err := read(raw); err == nil {
		ev.ID, ev.Type, ev.OccurredAt, ev.Entities = pe.ID, pe.Type, plausible(pe.OccurredAt, now), pe.Entities
	} else {
		ev.ID, ev.Invalid = itemID(raw, idKey), err
	}
	return ev
}

// itemID reads the string member key of a JSON object the provider's own
// reading refused (a malformed item), so the engine can name it: "" when
// there is none, or it is not usable as an id.
func itemID(raw []byte, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var id string
	if json.Unmarshal(m[key], &id) != nil || provider.CheckEventID(id) != nil {
		return ""
	}
	return id
}

// MaxPageItems bounds the items one page of a provider's listing may hold
// (the APIs give at most 200: Stripe 100, Paddle 200, GitHub 100). A page
// with more is refused as it is decoded, before its items are kept: a
// 32 MiB answer of millions of tiny items would otherwise take gigabytes
// before the run's bound on events (Config.MaxEvents) is checked.
const MaxPageItems = 1000

// pageItems is a listing's JSON array of items (or null), each kept as its
// exact bytes, at most MaxPageItems of them.
type pageItems []json.RawMessage

// UnmarshalJSON decodes the array item by item, failing at the item past
// MaxPageItems.
func (p *pageItems) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*p = nil
		return nil
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items are a JSON %v, not an array", tok)
	}
	var items []json.RawMessage
	for dec.More() {
		if len(items) == MaxPageItems {
			return fmt.Errorf("more than %d items in one page", MaxPageItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		items = append(items, raw)
	}
	*p = items
	return nil
}
