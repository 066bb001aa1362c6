package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/internal/natsembed"
	"github.com/hookhub/hookhub/schema"
)

// publisher publishes events straight to the stream in the hub's message
// shape (schema.Metadata headers, Nats-Msg-Id "paddle:<event id>"), each
// with the same Paddle sample body, and notes when each was published.
type publisher struct {
	body    []byte
	subject string
	sentAt  []atomic.Int64 // unix nanos
}

func newPublisher(n int) (*publisher, error) {
	subject, err := schema.Subject("paddle", "subscription.created")
	if err != nil {
		return nil, err
	}
	body, err := samples.Body("paddle", eventID(0), "subscription.created", nil, time.Now())
	if err != nil {
		return nil, err
	}
	return &publisher{body: body, subject: subject, sentAt: make([]atomic.Int64, n)}, nil
}

func (p *publisher) msg(i int, now time.Time) *nats.Msg {
	md := schema.Metadata{
		MsgID: schema.MsgID("paddle", eventID(i)), EventID: eventID(i), Provider: "paddle",
		EventType: "subscription.created", ArchiveID: uuid.NewString(), ReceivedAt: now, OccurredAt: now.Add(-time.Second),
	}
	return &nats.Msg{Subject: p.subject, Header: md.Header(), Data: p.body}
}

// publishAll publishes events [from, to) as fast as JetStream takes them.
func (p *publisher) publishAll(ctx context.Context, js jetstream.JetStream, from, to int) error {
	for i := from; i < to; i++ {
		now := time.Now()
		p.sentAt[i].Store(now.UnixNano())
		if _, err := js.PublishMsgAsync(p.msg(i, now), jetstream.WithExpectStream(schema.DefaultStream), jetstream.WithStallWait(30*time.Second)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return p.complete(ctx, js)
}

// publishPaced publishes events [from, to) at rate per second: event i at
// its due time, or at once when the publisher is behind.
func (p *publisher) publishPaced(ctx context.Context, js jetstream.JetStream, from, to int, rate float64) error {
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := from; i < to; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d := time.Until(start.Add(time.Duration(i-from) * interval)); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		p.sentAt[i].Store(now.UnixNano())
		if _, err := js.PublishMsgAsync(p.msg(i, now), jetstream.WithExpectStream(schema.DefaultStream), jetstream.WithStallWait(30*time.Second)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return p.complete(ctx, js)
}

func (p *publisher) complete(ctx context.Context, js jetstream.JetStream) error {
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	if n := js.PublishAsyncPending(); n > 0 {
		return fmt.Errorf("publish: %d messages not acknowledged", n)
	}
	return nil
}

// receiver is the trivial local endpoint the destination delivers to: it
// reads each request's body, notes when each webhook-id ("paddle:evt_bench_<i>")
// first arrived and answers 204. It verifies no signature: its CPU is the
// bench process's, and is kept small.
type receiver struct {
	url          string
	srv          *http.Server
	first        []atomic.Int64 // unix nanos of event i's first receipt
	received     atomic.Int64   // distinct events
	dups         atomic.Int64   // requests for an event already received
	foreign      atomic.Int64   // requests with another webhook-id
	once         sync.Once
	firstReceipt chan struct{} // closed at the first receipt
}

func startReceiver(n int) (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + l.Addr().String() + "/hook", first: make([]atomic.Int64, n), firstReceipt: make(chan struct{})}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	labelled("receiver", func() { go func() { _ = rc.srv.Serve(l) }() })
	return rc, nil
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now().UnixNano()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	i, ok := eventIndex(r.Header.Get("webhook-id"))
	switch {
	case !ok || i >= len(rc.first):
		rc.foreign.Add(1)
	case rc.first[i].CompareAndSwap(0, at):
		rc.received.Add(1)
		rc.once.Do(func() { close(rc.firstReceipt) })
	default:
		rc.dups.Add(1)
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitFor waits until every event of [from, to) was received, for at most
// timeout, or until the destinations process exits.
func (rc *receiver) waitFor(ctx context.Context, from, to int, timeout time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(timeout)
	next := from
	for {
		for next < to && rc.first[next].Load() != 0 {
			next++
		}
		if next == to {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d events not received after %s", to-from-rc.distinct(from, to), to-from, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			return fmt.Errorf("the destinations process exited: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// distinct counts the events of [from, to) received.
func (rc *receiver) distinct(from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if rc.first[i].Load() != 0 {
			n++
		}
	}
	return n
}

// span is the first and the last first receipt among [from, to).
func (rc *receiver) span(from, to int) (first, last int64) {
	for i := from; i < to; i++ {
		at := rc.first[i].Load()
		if at == 0 {
			continue
		}
		if first == 0 || at < first {
			first = at
		}
		last = max(last, at)
	}
	return first, last
}

func (rc *receiver) close() { _ = rc.srv.Close() }

// destProcess is a running destinations process.
type destProcess struct {
	cmd    *exec.Cmd
	exited chan error // receives the process's exit (once)
	done   chan struct{}
}

func (d *destProcess) pid() int { return d.cmd.Process.Pid }

// startDestinations writes a destinations file with one destination,
// forwarding everything the bench publishes (paddle.>) to url, the
// backlog published before it started included (start: all), and starts
// the destinations process on it.
func startDestinations(ctx context.Context, cfg DestinationsConfig, dir, dbURL, natsURL, url string) (*destProcess, error) {
	file := filepath.Join(dir, "destinations.yaml")
	spec := fmt.Sprintf("destinations:\n  - name: %s\n    url: %s\n    subjects: [\"paddle.>\"]\n    secret_env: %s\n    concurrency: %d\n    start: all\n",
		destName, url, destSecretEnv, cfg.Concurrency)
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.DestinationsCommand[0], cfg.DestinationsCommand[1:]...)
	// The bench's own settings last: when a variable is listed twice the
	// last value wins.
	cmd.Env = append(slices.Clip(os.Environ()),
		"DESTINATIONS_FILE="+file, "DESTINATIONS_DATABASE_URL="+dbURL, "DESTINATIONS_NATS_URL="+natsURL,
		"DESTINATIONS_STREAM="+schema.DefaultStream, "DESTINATIONS_HTTP_ADDR="+httpAddr,
		"DESTINATIONS_DATABASE_MAX_CONNS="+strconv.Itoa(cfg.Concurrency+4), "DESTINATIONS_LOG_LEVEL=warn",
		"DESTINATIONS_OTEL_ENABLED=false", destSecretEnv+"="+destSecret)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start destinations: %w", err)
	}
	d := &destProcess{cmd: cmd, exited: make(chan error, 1), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		d.exited <- err
		close(d.done)
	}()
	return d, nil
}

// stop interrupts the process and waits for it (killing it after 30 s).
func (d *destProcess) stop() {
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// waitConsumer waits until the stream has the durable consumer name.
func waitConsumer(ctx context.Context, js jetstream.JetStream, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := js.Consumer(ctx, schema.DefaultStream, name)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consumer %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// BuildDestinations builds the destinations command into dir with the go
// tool, from the module the working directory is in.
func BuildDestinations(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "destinations")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hookhub/hookhub/subscribers/destination/cmd/destinations").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build the destinations command (run from the hookhub module, or pass its binary): %w\n%s", err, out)
	}
	return bin, nil
}

// startNATS starts the bench's embedded JetStream server, storing in dir.
func startNATS(dir string) (ns *natsembed.Server, err error) {
	labelled("nats-server", func() {
		ns, err = natsembed.Start(natsembed.Options{Port: -1, StoreDir: dir, MaxStore: 4 << 30})
	})
	return ns, err
}

// loadAverage is the machine's 1-minute load average, or 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
