package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors operators hit; the command line turns them into a message and a
// non-zero exit, the admin API into 4xx statuses.
var (
	ErrNotFound          = errors.New("nothing matched")
	ErrUnknownSubscriber = errors.New("unknown subscriber")
	ErrInvalid           = errors.New("invalid request")
	ErrNoStream          = errors.New("JetStream not connected")
)

// Ops runs operator operations against one hub's database and stream.
type Ops struct {
	pool   *pgxpool.Pool
	js     jetstream.JetStream // nil: database-only operations
	stream string
	now    func() time.Time
}

// New returns Ops on the hub's database and, when js is not nil, its
// stream.
func New(pool *pgxpool.Pool, js jetstream.JetStream, stream string) *Ops {
	return &Ops{pool: pool, js: js, stream: stream, now: time.Now}
}

// Now is the clock Ops uses for relative times.
func (o *Ops) Now() time.Time { return o.now() }

func (o *Ops) needStream() error {
	if o.js == nil {
		return ErrNoStream
	}
	return nil
}

// streamErr explains a missing stream.
func (o *Ops) streamErr(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: stream %s not found (is HUB_NATS_URL the hub's NATS server and HUB_STREAM its stream?)", ErrNotFound, o.stream)
	}
	return fmt.Errorf("read stream %s: %w", o.stream, err)
}

// Subscribers lists the subscribers whose tables live in the hub's
// database: every schema holding a processed_messages table (the
// subscriber library creates one per subscriber, named after it).
func (o *Ops) Subscribers(ctx context.Context) ([]string, error) {
	rows, err := o.pool.Query(ctx, `
		SELECT p.table_schema FROM information_schema.tables p
		JOIN information_schema.tables d ON d.table_schema = p.table_schema AND d.table_name = 'dead_letters'
		WHERE p.table_name = 'processed_messages' ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("list subscribers: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list subscribers: %w", err)
	}
	return names, nil
}

// checkSubscriber returns ErrUnknownSubscriber, listing the known ones,
// unless name is one (an InputError if it cannot be a name at all).
func (o *Ops) checkSubscriber(ctx context.Context, name string) error {
	if err := checkSubscriberName(name); err != nil {
		return err
	}
	names, err := o.Subscribers(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		known := strings.Join(names, ", ")
		if known == "" {
			known = "none yet: a subscriber creates its tables when it first runs"
		}
		return fmt.Errorf("%w %s (known: %s)", ErrUnknownSubscriber, quote(name), known)
	}
	return nil
}
