package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/store"
)

// openDatabase opens a pool on the hub's database (HUB_DATABASE_URL) without
// connecting yet: a malformed URL is an error naming the variable.
func openDatabase(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	return pool, nil
}

// opsEnv is what an operator command connects to.
type opsEnv struct {
	ops  *ops.Ops
	pool *pgxpool.Pool
	nc   *nats.Conn
	// nats says which NATS server was reached, how it was chosen, and
	// what is missing there.
	nats natsTarget
	// announced makes the banner print once (announce).
	announced sync.Once
}

func (e *opsEnv) Close() {
	if e.nc != nil {
		e.nc.Close()
	}
	e.pool.Close()
}

// opsCall is an operator command's one operation: connect (NATS as mode
// says, its problems to stderr), call the operation, close.
func opsCall[T any](ctx context.Context, mode natsMode, stderr io.Writer, call func(*ops.Ops) (T, error)) (T, error) {
	env, _, err := connectOps(ctx, mode, stderr)
	if err != nil {
		var zero T
		return zero, err
	}
	defer env.Close()
	return call(env.ops)
}

// streamCall is opsCall for an operation on the stream: after it, the
// banner (which NATS server and stream) on stderr unless quiet or the
// operation found the operator's mistake; an error from the server says
// what it lacks; and the NATS target, for --json.
func streamCall[T any](ctx context.Context, mode natsMode, stderr io.Writer, quiet bool, call func(*opsEnv) (T, error)) (T, natsTarget, error) {
	env, _, err := connectOps(ctx, mode, stderr)
	if err != nil {
		var zero T
		return zero, natsTarget{}, err
	}
	defer env.Close()
	res, err := call(env)
	if !quiet {
		env.announceUnlessMistake(stderr, err)
	}
	return res, env.nats, env.explain(err)
}

// natsMode is how much an operator command needs NATS.
type natsMode int

const (
	// natsOptional: the command works on the database without it (status
	// then says why the stream part is missing).
	natsOptional natsMode = iota
	// natsRequired: the command fails without a connection.
	natsRequired
)

// Where a command's NATS URL came from.
const (
	fromEnv       = "HUB_NATS_URL"
	fromDevRecord = "hub dev record"
	fromDefault   = "default"
)

// natsTarget is the NATS server an operator command reached and how it
// chose it: HUB_NATS_URL when set, else the record of a running `hub dev`
// (devRecordFile under HUB_DATA_DIR), else the default 127.0.0.1:4222.
// Printed on stderr (announce) and as the "nats" field of --json output.
type natsTarget struct {
	URL         string `json:"url"`
	From        string `json:"from"`             // fromEnv, fromDevRecord or fromDefault
	Record      string `json:"record,omitempty"` // the record's path, when From is fromDevRecord
	PID         int    `json:"pid,omitempty"`    // its hub dev's process id
	Connected   bool   `json:"connected"`
	Stream      string `json:"stream"`
	StreamFound bool   `json:"stream_found"`
	// Problem says what is missing (no server, no JetStream, no stream),
	// on which server, and how to fix it.
	Problem string `json:"problem,omitempty"`
}

// where is the server and the origin of its URL, for messages.
func (t natsTarget) where() string {
	switch t.From {
	case fromDevRecord:
		return fmt.Sprintf("%s (from the hub dev record %s, pid %d)", t.URL, t.Record, t.PID)
	case fromEnv:
		return fmt.Sprintf("%s (from HUB_NATS_URL)", t.URL)
	default:
		return fmt.Sprintf("%s (the default: HUB_NATS_URL is not set and no running `hub dev` is recorded)", t.URL)
	}
}

// announce prints on stderr which server the command works on, once.
func (e *opsEnv) announce(stderr io.Writer) {
	e.announced.Do(func() {
		t := e.nats
		switch {
		case t.StreamFound:
			fmt.Fprintf(stderr, "hub: NATS %s, stream %s\n", t.where(), t.Stream)
		case t.Problem != "":
			fmt.Fprintf(stderr, "hub: %s\n", t.Problem)
		}
	})
}

// announceUnlessMistake is announce after an operation that returned
// err, unless err is the operator's mistake: a usage mistake is one line
// on stderr, its message, with no banner before it.
func (e *opsEnv) announceUnlessMistake(stderr io.Writer, err error) {
	if !e.isMistake(err) {
		e.announce(stderr)
	}
}

// isMistake reports whether err is the operator's mistake rather than the
// system's failure: a bad flag value, an unknown subscriber or
// destination, nothing matched (on a stream that is there: a missing
// stream is the system's).
func (e *opsEnv) isMistake(err error) bool {
	var input *ops.InputError
	switch {
	case err == nil:
		return false
	case errors.As(err, &input), errors.Is(err, errUsage), errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrBadTime),
		errors.Is(err, ops.ErrUnknownSubscriber):
		return true
	}
	return errors.Is(err, ops.ErrNotFound) && (e.nc == nil || e.nats.StreamFound)
}

// explain adds what is missing on the NATS server to err when err comes
// from there (no stream, no JetStream).
func (e *opsEnv) explain(err error) error {
	if err == nil || e.nats.Problem == "" || e.nats.StreamFound {
		return err
	}
	if errors.Is(err, ops.ErrNotFound) || errors.Is(err, ops.ErrNoStream) {
		return fmt.Errorf("%s (%w)", e.nats.Problem, err)
	}
	return err
}

// connectOps connects to the hub's database and to NATS (see natsTarget
// for how the server is chosen; an operator command never starts an
// embedded server). Stale `hub dev` records are reported on stderr and
// ignored. With natsRequired, no connection is an error.
func connectOps(ctx context.Context, mode natsMode, stderr io.Writer) (*opsEnv, service.Config, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, cfg, err
	}
	pool, err := openDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, cfg, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, cfg, fmt.Errorf("connect to the hub's database (HUB_DATABASE_URL): %w", err)
	}
	env := &opsEnv{pool: pool}
	var js jetstream.JetStream
	env.nc, env.nats = dialOpsNATS(cfg, stderr)
	if env.nc == nil && mode == natsRequired {
		pool.Close()
		return nil, cfg, errors.New(env.nats.Problem)
	}
	if env.nc != nil {
		js, err = jetstream.New(env.nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
		if err != nil {
			env.Close()
			return nil, cfg, err
		}
		checkStream(ctx, js, &env.nats, devRecordPath(cfg.DataDir))
	}
	st := store.New(pool)
	// What the audit trail could not record is said on stderr.
	oc := ops.Config{Archive: st, Subscribers: pool, JetStream: js, Stream: env.nats.Stream,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if js != nil {
		// Republished copies are built by the hub's own publisher, as the
		// originals were. This relay only republishes: it never claims.
		rl, err := relay.New(st, js, relay.Config{Stream: env.nats.Stream, DuplicateWindow: cfg.DuplicateWindow})
		if err != nil {
			env.Close()
			return nil, cfg, err
		}
		oc.Republisher = rl
	}
	env.ops = ops.New(oc)
	return env, cfg, nil
}

// Connect timeouts: HUB_NATS_URL is what the operator asked for; the
// record and the default are guesses, tried briefly.
const (
	natsConnectTimeout = 5 * time.Second
	natsProbeTimeout   = 2 * time.Second
)

func dialNATS(url string, timeout time.Duration) (*nats.Conn, error) {
	return nats.Connect(url, nats.Name("hookhub-operator"), nats.Timeout(timeout))
}

// dialOpsNATS chooses the NATS server (see natsTarget) and connects to
// it. It returns a nil connection, and the reason in the target's
// Problem, when none answers.
func dialOpsNATS(cfg service.Config, stderr io.Writer) (*nats.Conn, natsTarget) {
	t := natsTarget{Stream: cfg.Stream}
	path := devRecordPath(cfg.DataDir)
	if cfg.NATSURL != "" {
		t.URL, t.From = cfg.NATSURL, fromEnv
		nc, err := dialNATS(t.URL, natsConnectTimeout)
		if err != nil {
			t.Problem = fmt.Sprintf("connect to NATS at %s: %v", t.where(), err)
			return nil, t
		}
		t.Connected = true
		return nc, t
	}
	rec, err := readDevRecord(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		fmt.Fprintf(stderr, "hub: ignoring %s: %v\n", path, err)
	case !processAlive(rec.PID):
		fmt.Fprintf(stderr, "hub: ignoring the stale hub dev record %s: its process (pid %d) is not running; trying the default %s\n", path, rec.PID, defaultNATSURL)
	default:
		nc, err := dialNATS(rec.NATSURL, natsProbeTimeout)
		if err != nil {
			fmt.Fprintf(stderr, "hub: ignoring the stale hub dev record %s: nothing answers at its NATS URL %s (%v); trying the default %s\n", path, rec.NATSURL, err, defaultNATSURL)
			break
		}
		t.URL, t.From, t.Record, t.PID, t.Connected = rec.NATSURL, fromDevRecord, path, rec.PID, true
		if rec.Stream != "" && !envSet("STREAM") {
			t.Stream = rec.Stream
		}
		return nc, t
	}
	t.URL, t.From = defaultNATSURL, fromDefault
	nc, err := dialNATS(t.URL, natsProbeTimeout)
	if err != nil {
		t.Problem = fmt.Sprintf("no NATS server: HUB_NATS_URL is not set, no running `hub dev` is recorded in %s, and nothing answers at the default %s (%v). "+
			"Start `hub dev` (it records its NATS URL there), or set HUB_NATS_URL to the server the hub uses", path, defaultNATSURL, err)
		return nil, t
	}
	t.Connected = true
	return nc, t
}

// checkStream looks the stream up on the server reached and, when it is
// not there, sets t.Problem: which server, what is missing, how to fix it.
func checkStream(ctx context.Context, js jetstream.JetStream, t *natsTarget, recordPath string) {
	ctx, cancel := context.WithTimeout(ctx, natsConnectTimeout)
	defer cancel()
	_, err := js.Stream(ctx, t.Stream)
	if err == nil {
		t.StreamFound = true
		return
	}
	var fix string
	switch t.From {
	case fromEnv:
		fix = "check that HUB_NATS_URL is the server the hub publishes to, and HUB_STREAM its stream"
	case fromDevRecord:
		fix = fmt.Sprintf("that `hub dev` (pid %d) has not created it: see its log, or restart it", t.PID)
	default:
		fix = fmt.Sprintf("this is not the hub's server. Start `hub dev` (it records its NATS URL in %s for the other commands), "+
			"or set HUB_NATS_URL to the server the hub publishes to", recordPath)
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		t.Problem = fmt.Sprintf("stream %s not found on the NATS server reached, %s: %s", t.Stream, t.where(), fix)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		t.Problem = fmt.Sprintf("the NATS server reached, %s, has no JetStream (so no stream %s): %s", t.where(), t.Stream, fix)
	default:
		t.Problem = fmt.Sprintf("cannot look up stream %s on the NATS server reached, %s: %v", t.Stream, t.where(), err)
	}
}
