package chaos

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/email"
)

// Subscription is a subscriber the checker counts: its schema holds the
// subscriber library's processed_messages, and Effects (optional) is the
// table, in that schema, of its side effects, one row per event at most,
// keyed by event_id.
type Subscription struct {
	Name     string
	Subjects []string
	Effects  string
}

// DefaultSubscriptions are the example subscribers and their side effects.
var DefaultSubscriptions = []Subscription{
	{Name: credits.Name, Subjects: []string{credits.Subject}, Effects: "ledger"},
	{Name: email.Name, Subjects: []string{email.SubjectUserCreated, email.SubjectSubscriptionCanceled}, Effects: "outbox"},
	{Name: downgrade.Name, Subjects: []string{downgrade.SubjectCreated, downgrade.SubjectUpdated, downgrade.SubjectCanceled}, Effects: "plan_changes"},
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (s Subscription) validate() error {
	if !identRE.MatchString(s.Name) {
		return fmt.Errorf("chaos: subscriber %q is not a schema name (lowercase letters, digits, _)", s.Name)
	}
	if s.Effects != "" && !identRE.MatchString(s.Effects) {
		return fmt.Errorf("chaos: subscriber %s: effects table %q is not a table name", s.Name, s.Effects)
	}
	if len(s.Subjects) == 0 {
		return fmt.Errorf("chaos: subscriber %s consumes no subject", s.Name)
	}
	return nil
}

func (s Subscription) consumes(subject string) bool { return slices.Contains(s.Subjects, subject) }

// CheckOptions configure Check.
type CheckOptions struct {
	// Pool reaches the hub's database, which holds the archive and the
	// subscribers' schemas.
	Pool *pgxpool.Pool
	// JetStream and Stream reach the hub's stream; FromSeq is its first
	// sequence that can hold the run's events (StreamMark before the run).
	JetStream jetstream.JetStream
	Stream    string
	FromSeq   uint64
	// Subscribers are counted; default DefaultSubscriptions.
	Subscribers []Subscription
	// Settle bounds the wait for the stream and the subscribers to catch
	// up with what was acknowledged. Default 2 minutes.
	Settle time.Duration
	// Progress, when not nil, is called after each look that found
	// something missing.
	Progress func(missing int)
}

// StreamMark returns the sequence the next message of stream will get:
// the checker's FromSeq for a run about to start.
func StreamMark(ctx context.Context, js jetstream.JetStream, stream string) (uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("chaos: stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("chaos: stream %s: %w", stream, err)
	}
	return info.State.LastSeq + 1, nil
}

// findings is what one look at the archive, the stream and the
// subscribers found of the run's events, by "<provider>:<event_id>".
type findings struct {
	archived  map[string]bool
	deduped   map[string]bool
	stream    map[string]int
	processed map[string]map[string]bool // subscriber → id
	dead      map[string]map[string]bool
	effects   map[string]map[string]int
}

// Check compares what the load was answered with what the archive, the
// stream and the subscribers hold, waiting up to Settle for them to catch
// up, and returns the report.
func Check(ctx context.Context, o CheckOptions, events []Event) (Report, error) {
	if o.Subscribers == nil {
		o.Subscribers = DefaultSubscriptions
	}
	for _, s := range o.Subscribers {
		if err := s.validate(); err != nil {
			return Report{}, err
		}
	}
	setDefault(&o.Settle, 2*time.Minute)
	deadline := time.Now().Add(o.Settle)
	for {
		f, err := look(ctx, o, events)
		if err != nil {
			return Report{}, err
		}
		r := report(o, events, f)
		if r.Lost == 0 || time.Now().After(deadline) {
			return r, nil
		}
		if o.Progress != nil {
			o.Progress(r.Lost)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func look(ctx context.Context, o CheckOptions, events []Event) (findings, error) {
	f := findings{processed: map[string]map[string]bool{}, dead: map[string]map[string]bool{}, effects: map[string]map[string]int{}}
	byProvider := map[string][]string{}
	for _, ev := range events {
		byProvider[ev.Provider] = append(byProvider[ev.Provider], ev.ID)
	}
	var err error
	if f.archived, err = present(ctx, o.Pool, "SELECT provider, event_id FROM webhook_events WHERE provider = $1 AND event_id = ANY($2)", byProvider); err != nil {
		return f, fmt.Errorf("chaos: read the archive: %w", err)
	}
	if f.deduped, err = present(ctx, o.Pool, "SELECT provider, event_id FROM processed_webhook_events WHERE provider = $1 AND event_id = ANY($2)", byProvider); err != nil {
		return f, fmt.Errorf("chaos: read the dedup table: %w", err)
	}
	for _, s := range o.Subscribers {
		schemaName := pgx.Identifier{s.Name}.Sanitize()
		if f.processed[s.Name], err = present(ctx, o.Pool, "SELECT provider, event_id FROM "+schemaName+".processed_messages WHERE provider = $1 AND event_id = ANY($2)", byProvider); err != nil {
			return f, fmt.Errorf("chaos: read %s's processed messages: %w", s.Name, err)
		}
		if f.dead[s.Name], err = present(ctx, o.Pool, "SELECT provider, event_id FROM "+schemaName+".dead_letters WHERE provider = $1 AND event_id = ANY($2)", byProvider); err != nil {
			return f, fmt.Errorf("chaos: read %s's dead letters: %w", s.Name, err)
		}
		if s.Effects != "" {
			if f.effects[s.Name], err = effects(ctx, o.Pool, schemaName+"."+pgx.Identifier{s.Effects}.Sanitize(), events); err != nil {
				return f, fmt.Errorf("chaos: read %s's side effects: %w", s.Name, err)
			}
		}
	}
	if f.stream, err = readStream(ctx, o.JetStream, o.Stream, o.FromSeq, events); err != nil {
		return f, err
	}
	return f, nil
}

// present returns the "<provider>:<event_id>" of the rows query finds for
// each provider's ids, in chunks.
func present(ctx context.Context, pool *pgxpool.Pool, query string, byProvider map[string][]string) (map[string]bool, error) {
	out := map[string]bool{}
	for provider, ids := range byProvider {
		for chunk := range slices.Chunk(ids, 10_000) {
			rows, err := pool.Query(ctx, query, provider, chunk)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var p, id string
				if err := rows.Scan(&p, &id); err != nil {
					rows.Close()
					return nil, err
				}
				out[schema.MsgID(p, id)] = true
			}
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// effects counts the rows of table by event id, for the run's events.
func effects(ctx context.Context, pool *pgxpool.Pool, table string, events []Event) (map[string]int, error) {
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	out := map[string]int{}
	for chunk := range slices.Chunk(ids, 10_000) {
		rows, err := pool.Query(ctx, "SELECT event_id, count(*) FROM "+table+" WHERE event_id = ANY($1) GROUP BY event_id", chunk)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = n
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readStream counts the messages of the run's events in stream from
// sequence from, by Nats-Msg-Id (republished copies apart): it reads
// headers only, with the hub's one stream scanner (relay.Scan), up to the
// last sequence the stream had when the read began.
func readStream(ctx context.Context, js jetstream.JetStream, stream string, from uint64, events []Event) (map[string]int, error) {
	want := make(map[string]bool, len(events))
	var subjects []string
	for _, ev := range events {
		want[schema.MsgID(ev.Provider, ev.ID)] = true
		if !slices.Contains(subjects, ev.Subject()) {
			subjects = append(subjects, ev.Subject())
		}
	}
	out := map[string]int{}
	if len(subjects) == 0 {
		return out, nil
	}
	scan := relay.Scan{Stream: stream, Subjects: subjects, StartSeq: max(from, 1), HeadersOnly: true}
	_, err := scan.Run(ctx, js, func(m relay.ScanMsg) error {
		h := m.Msg.Headers()
		if id := h.Get(schema.HeaderMsgID); want[id] && h.Get(schema.HeaderRepublish) == "" {
			out[id]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return out, nil
}

// idList keeps the first few ids of a list for a report.
type idList struct {
	IDs []string `json:"ids,omitempty"`
	N   int      `json:"count"`
}

func (l *idList) add(id string) {
	l.N++
	if len(l.IDs) < 20 {
		l.IDs = append(l.IDs, id)
	}
}

func (l idList) String() string {
	if l.N == 0 {
		return "0"
	}
	more := ""
	if l.N > len(l.IDs) {
		more = fmt.Sprintf(", … %d more", l.N-len(l.IDs))
	}
	return fmt.Sprintf("%d (%s%s)", l.N, strings.Join(l.IDs, ", "), more)
}
