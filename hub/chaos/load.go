package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/schema"
)

// Bounds of a load: a run never sends more than MaxEvents events, nor
// for longer than MaxDuration, nor retries an event for longer than
// MaxRetryFor.
const (
	MaxEvents   = 1_000_000
	MaxRate     = 20_000
	MaxDuration = time.Hour
	MaxRetryFor = time.Hour
)

// Kind is an event the load sends: a provider and an event type.
type Kind struct {
	Provider string
	Type     string
}

// Subject is the stream subject the hub publishes the kind under.
func (k Kind) Subject() string { return k.Provider + "." + k.Type }

// DefaultMix is what the load sends, round-robin: the events the example
// subscribers (credits, email, downgrade) act on.
var DefaultMix = []Kind{
	{"paddle", schema.PaddleSubscriptionCreated},
	{"paddle", schema.PaddleSubscriptionUpdated},
	{"clerk", schema.ClerkUserCreated},
	{"paddle", schema.PaddleSubscriptionCanceled},
}

// Signer signs a delivery as its provider does: provider.Signer, which
// every built-in provider implements.
type Signer = samples.Signer

// LoadOptions configure StartLoad. Zero values take defaults.
type LoadOptions struct {
	// Target is the base URL the deliveries are POSTed to (a hub, or the
	// load balancer in front of several).
	Target string
	// Signers sign the deliveries, by provider name: one for every
	// provider of Mix.
	Signers map[string]Signer
	// Mix is what is sent, round-robin. Default DefaultMix.
	Mix []Kind
	// Rate is new events a second, 1..MaxRate. Default 50.
	Rate float64
	// Events is the most events sent, 1..MaxEvents. Default 1,000.
	Events int
	// Duration stops sending new events, whichever of Events and
	// Duration comes first; at most MaxDuration. Default 1 minute.
	Duration time.Duration
	// RetryFor is how long an event is retried until a 2xx answers it,
	// as a provider retries (for days; here bounded, at most
	// MaxRetryFor). Default 2 minutes.
	RetryFor time.Duration
	// DupEvery delivers every DupEvery-th acknowledged event once more,
	// as a provider does whose 2xx was lost on the way back. 0: never;
	// default 10 (set -1 for never).
	DupEvery int
	// Workers is how many deliveries are in flight at most. Default 64.
	Workers int
	// AttemptTimeout bounds one delivery. Default 15 s.
	AttemptTimeout time.Duration
	// RunID prefixes every event id, so that the checker counts only this
	// run's events. Default a random one.
	RunID string
}

func (o *LoadOptions) defaults() error {
	if o.Target == "" {
		return errors.New("chaos: load needs a target URL")
	}
	if o.Mix == nil {
		o.Mix = DefaultMix
	}
	if len(o.Mix) == 0 {
		return errors.New("chaos: load needs at least one event kind")
	}
	for _, k := range o.Mix {
		if o.Signers[k.Provider] == nil {
			return fmt.Errorf("chaos: no signer for provider %q", k.Provider)
		}
	}
	setDefault(&o.Rate, 50)
	setDefault(&o.Events, 1000)
	setDefault(&o.Duration, time.Minute)
	setDefault(&o.RetryFor, 2*time.Minute)
	setDefault(&o.DupEvery, 10)
	setDefault(&o.Workers, 64)
	setDefault(&o.AttemptTimeout, 15*time.Second)
	switch {
	case !(o.Rate >= 0.1 && o.Rate <= MaxRate):
		return fmt.Errorf("chaos: rate %v out of range 0.1..%d", o.Rate, MaxRate)
	case o.Events < 1 || o.Events > MaxEvents:
		return fmt.Errorf("chaos: events %d out of range 1..%d", o.Events, MaxEvents)
	case o.Duration < 0 || o.Duration > MaxDuration:
		return fmt.Errorf("chaos: duration %s out of range 0..%s", o.Duration, MaxDuration)
	case o.RetryFor < 0 || o.RetryFor > MaxRetryFor:
		return fmt.Errorf("chaos: retry-for %s out of range 0..%s", o.RetryFor, MaxRetryFor)
	case o.Workers < 1 || o.Workers > 4096:
		return fmt.Errorf("chaos: workers %d out of range 1..4096", o.Workers)
	}
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	if !validRunID(o.RunID) {
		return fmt.Errorf("chaos: run id %q: use 1-32 letters and digits", o.RunID)
	}
	o.Target = strings.TrimRight(o.Target, "/")
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// NewRunID returns a fresh run id: 12 letters and digits.
func NewRunID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

func validRunID(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Event is one event the load sent, and what became of its deliveries.
type Event struct {
	Kind
	ID      string
	created time.Time
	// Acked is set once a 2xx answered a delivery of the event; AckedAt
	// is when, since the load started.
	Acked   bool
	AckedAt time.Duration
	// Attempts counts the deliveries, duplicates included.
	Attempts int
	// LastError is the last refusal or transport error (empty when the
	// last attempt was answered 2xx).
	LastError string
}

// LoadProgress is a snapshot of a running load.
type LoadProgress struct {
	Elapsed time.Duration
	// Sent is the events sent so far; Acked those answered 2xx; Pending
	// those (and duplicates) still being retried.
	Sent, Acked, Pending int
	// Attempts counts every delivery; Refused the non-2xx answers;
	// Errors the transport errors (connection refused or reset, time-out).
	Attempts, Refused, Errors int64
	// LongestGap is the longest time without any 2xx while sending.
	LongestGap time.Duration
}

// Load sends signed events at a fixed rate and retries each as a provider
// does, until a 2xx answers it: StartLoad, then Wait.
type Load struct {
	o      LoadOptions
	client *http.Client
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	events  []*Event
	acked   int
	lastAck time.Time
	gap     time.Duration

	work     chan *task
	pending  sync.WaitGroup
	npending atomic.Int64
	sending  chan struct{} // closed when no new event will be sent
	workers  sync.WaitGroup

	attempts, refused, errs atomic.Int64
}

type task struct {
	ev  *Event
	dup bool
	n   int // attempts of this task so far
}

// StartLoad validates o and starts sending. Cancelling ctx stops it.
func StartLoad(ctx context.Context, o LoadOptions) (*Load, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Load{o: o, start: time.Now(), ctx: ctx, cancel: cancel,
		client: &http.Client{Timeout: o.AttemptTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: o.Workers, DisableCompression: true}},
		// Room for every event: a provider keeps sending new events while
		// earlier ones wait for their retries, whatever the hub answers.
		work:    make(chan *task, o.Events),
		sending: make(chan struct{})}
	l.lastAck = l.start
	for range o.Workers {
		l.workers.Add(1)
		go l.worker()
	}
	go l.dispatch()
	return l, nil
}

// RunID is the run's id, which every event id holds.
func (l *Load) RunID() string { return l.o.RunID }

// dispatch sends the events at the rate until Events or Duration.
func (l *Load) dispatch() {
	defer close(l.sending)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for sent < l.o.Events {
		select {
		case <-l.ctx.Done():
			return
		case now := <-tick.C:
			elapsed := now.Sub(l.start)
			if elapsed >= l.o.Duration {
				return
			}
			due := min(int(elapsed.Seconds()*l.o.Rate)+1, l.o.Events)
			for ; sent < due; sent++ {
				k := l.o.Mix[sent%len(l.o.Mix)]
				ev := &Event{Kind: k, ID: eventID(k.Provider, l.o.RunID, sent), created: time.Now()}
				l.mu.Lock()
				l.events = append(l.events, ev)
				l.mu.Unlock()
				l.pending.Add(1)
				l.npending.Add(1)
				if !l.enqueue(&task{ev: ev}) {
					return
				}
			}
		}
	}
}

// eventID is the n-th event id of run, in the provider's style.
func eventID(provider, run string, n int) string {
	prefix := "evt_"
	if provider == "clerk" {
		prefix = "msg_"
	}
	return prefix + "chaos" + run + "_" + strconv.Itoa(n)
}

// enqueue hands t to a worker, or resolves it when the load is stopped.
func (l *Load) enqueue(t *task) bool {
	select {
	case l.work <- t:
		return true
	case <-l.ctx.Done():
		l.resolve()
		return false
	}
}

func (l *Load) resolve() {
	l.npending.Add(-1)
	l.pending.Done()
}

func (l *Load) worker() {
	defer l.workers.Done()
	for {
		select {
		case <-l.ctx.Done():
			return
		case t := <-l.work:
			l.attempt(t)
		}
	}
}

// attempt delivers t once; on a 2xx it is resolved (and a duplicate may
// follow), otherwise retried after a backoff until RetryFor.
func (l *Load) attempt(t *task) {
	t.n++
	l.attempts.Add(1)
	status, err := l.post(t.ev)
	now := time.Now()
	l.mu.Lock()
	t.ev.Attempts++
	ok := err == nil && status/100 == 2
	switch {
	case ok:
		t.ev.LastError = ""
		if !t.ev.Acked {
			t.ev.Acked, t.ev.AckedAt = true, now.Sub(l.start)
			l.acked++
		}
		if g := now.Sub(l.lastAck); g > l.gap && !l.doneSending() {
			l.gap = g
		}
		l.lastAck = now
	case err != nil:
		t.ev.LastError = err.Error()
	default:
		t.ev.LastError = "HTTP " + strconv.Itoa(status)
	}
	dup := ok && !t.dup && l.o.DupEvery > 0 && l.acked%l.o.DupEvery == 0
	l.mu.Unlock()
	switch {
	case !ok && err != nil:
		l.errs.Add(1)
	case !ok:
		l.refused.Add(1)
	}
	if dup {
		l.pending.Add(1)
		l.npending.Add(1)
		l.later(&task{ev: t.ev, dup: true}, time.Duration(rand.Int64N(int64(time.Second))))
	}
	if ok || time.Since(t.ev.created) >= l.o.RetryFor {
		l.resolve()
		return
	}
	l.later(t, backoff.Jitter(backoff.Exp(100*time.Millisecond, 2*time.Second, t.n-1), rand.Float64()))
}

func (l *Load) doneSending() bool {
	select {
	case <-l.sending:
		return true
	default:
		return false
	}
}

// later enqueues t after d, or resolves it when the load stops first.
func (l *Load) later(t *task, d time.Duration) {
	time.AfterFunc(d, func() { l.enqueue(t) })
}

// post signs and POSTs one delivery of ev, and returns the answer's
// status. The body is the sample of the event's creation time, the same
// on every attempt; the signature is made anew, as providers do.
func (l *Load) post(ev *Event) (int, error) {
	s := l.o.Signers[ev.Provider]
	body, err := samples.Body(s.Name(), ev.ID, ev.Type, nil, ev.created)
	if err != nil {
		return 0, err
	}
	d, err := samples.Sign(s, ev.ID, ev.Type, body, time.Now())
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(l.ctx, http.MethodPost, l.o.Target+d.Target, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header = d.Header
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Progress returns what the load did so far.
func (l *Load) Progress() LoadProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LoadProgress{Elapsed: time.Since(l.start), Sent: len(l.events), Acked: l.acked,
		Pending: int(l.npending.Load()), Attempts: l.attempts.Load(), Refused: l.refused.Load(),
		Errors: l.errs.Load(), LongestGap: l.gap}
}

// Sending returns a channel closed once the load sends no new event.
func (l *Load) Sending() <-chan struct{} { return l.sending }

// Wait waits until every event was answered 2xx or given up (after
// RetryFor), or ctx is done, then stops the load and returns its events.
func (l *Load) Wait(ctx context.Context) []Event {
	done := make(chan struct{})
	go func() {
		select {
		case <-l.sending:
		case <-l.ctx.Done():
		}
		l.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	l.cancel()
	l.workers.Wait()
	for {
		select {
		case <-l.work: // never attempted: resolved as given up
			l.resolve()
			continue
		default:
		}
		break
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Event, len(l.events))
	for i, ev := range l.events {
		out[i] = *ev
	}
	return out
}
