package backfill

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/hookhub/hookhub/hub/provider"
)

// PaddleDefaultBaseURL is Paddle's API (a sandbox account's is
// https://sandbox-api.paddle.com).
const PaddleDefaultBaseURL = "https://api.paddle.com"

// PaddleMaxPage is the largest page GET /events returns (per_page).
const PaddleMaxPage = 200

// PaddleConfig configures a Paddle source: BaseURL is
// https://api.paddle.com by default, or https://sandbox-api.paddle.com
// for a sandbox account, Key an API key with the event.read permission,
// PageSize 1..200 (default 200).
type PaddleConfig = APIConfig

// Paddle lists Paddle Billing events: GET /events?order_by=id[DESC]
// &per_page=..&after=<cursor>, newest first, while meta.pagination.has_more.
// The API cannot filter by time (it keeps 90 days): the source drops what
// lies outside the window and stops paging at the first page whose oldest
// event occurred before it. The body of each event is the event entity's
// bytes as the API returned them in the data array.
type Paddle struct{ lister }

// paddleQuery asks for a page newest first: Paddle cannot filter by time.
func paddleQuery(q url.Values, pageSize int, _, _ time.Time, cursor string) {
	q.Set("order_by", "id[DESC]")
	q.Set("per_page", strconv.Itoa(pageSize))
	if cursor != "" {
		q.Set("after", cursor)
	}
}

// NewPaddle returns a Paddle source; it fails when the key is empty or the
// base URL is not an absolute http(s) URL.
func NewPaddle(cfg PaddleConfig) (*Paddle, error) {
	return newSource[Paddle](cfg, listing{"paddle", "/events", paddleQuery, parsePaddleList}, "a Paddle API key with the event.read permission", PaddleDefaultBaseURL, "", PaddleMaxPage)
}

// paddleList is a Paddle list answer.
type paddleList struct {
	Data pageItems `json:"data"`
	Meta struct {
		Pagination *struct {
			Next    string `json:"next"`
			HasMore bool   `json:"has_more"`
		} `json:"pagination"`
	} `json:"meta"`
}

// ParsePaddleList reads an answer of GET /events (untrusted input), newest
// first, keeping the events that occurred in [since, until) (an event
// without a readable occurred_at is kept: the engine decides). Each event's
// Body is its entity's exact bytes; ID, Type and OccurredAt are read from
// them as the Paddle verifier reads a webhook's body, and left empty, with
// Err saying why (the engine counts the event failed), when they cannot
// be. An occurred_at that is not plausible now is dropped, as the webhook
// path drops it (plausible): such an event is kept, as one without a
// time, and does not end the paging. Next is the after
// parameter of meta.pagination.next (never the URL itself: the source
// builds its own requests) while has_more is true and the page's oldest
// event is not older than since.
func ParsePaddleList(data []byte, since, until time.Time) (Page, error) {
	return parsePaddleList(data, since, until, time.Now())
}

func parsePaddleList(data []byte, since, until, now time.Time) (Page, error) {
	var l paddleList
	if err := json.Unmarshal(data, &l); err != nil {
		return Page{}, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	if l.Meta.Pagination == nil {
		return Page{}, fmt.Errorf("%w: no meta.pagination", ErrBadAnswer)
	}
	page := Page{Events: make([]Event, 0, len(l.Data))}
	var oldest time.Time
	var lastID string
	ascending := false
	for _, raw := range l.Data {
		ev := listedEvent(raw, provider.PaddleEvent, "event_id", now)
		// Paddle's ids sort as they were created: asked id[DESC], each id
		// is below the one before. One above it means the API listed
		// oldest first (order_by ignored), and the stop rule below would
		// end the listing on its first page, the window unread.
		if ev.Invalid == nil && lastID != "" && len(ev.ID) == len(lastID) && ev.ID > lastID {
			ascending = true
		}
		lastID = ev.ID
		if !ev.OccurredAt.IsZero() {
			oldest = ev.OccurredAt
			if (!since.IsZero() && ev.OccurredAt.Before(since)) || (!until.IsZero() && !ev.OccurredAt.Before(until)) {
				continue
			}
		}
		page.Events = append(page.Events, ev)
	}
	if ascending && l.Meta.Pagination.HasMore {
		return Page{}, fmt.Errorf("%w: events are not newest first (order_by id[DESC] not honoured)", ErrBadAnswer)
	}
	pastSince := !since.IsZero() && !oldest.IsZero() && oldest.Before(since)
	if !l.Meta.Pagination.HasMore || pastSince {
		return page, nil
	}
	if len(l.Data) == 0 {
		return Page{}, fmt.Errorf("%w: has_more without events", ErrBadAnswer)
	}
	next := lastID
	if u, err := url.Parse(l.Meta.Pagination.Next); err == nil {
		if after := u.Query().Get("after"); after != "" {
			next = after
		}
	}
	if !validCursor(next) {
		return Page{}, fmt.Errorf("%w: no usable cursor to continue from", ErrBadAnswer)
	}
	page.Next = next
	return page, nil
}
