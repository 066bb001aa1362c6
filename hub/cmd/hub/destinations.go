package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

const destinationsUsage = `Usage: hub destinations list [--json]
       hub destinations status NAME [--attempts N] [--json]
       hub destinations pause NAME [--reason TEXT] [--json]
       hub destinations resume NAME [--reason TEXT] [--json]
       hub destinations retry-now NAME [--json]
       hub destinations test NAME [--file PATH] [--json]

Destinations deliver events to HTTP endpoints (see docs/destinations.md).

  list    every destination: state, backlog, waiting events, last success, the last
          hour's failures and p99 latency, URL
  status  one destination in full: its state with the reason and since when, and its
          last attempts, whatever their event
  pause   stop delivering: the running destination takes no new event within seconds;
          events wait in the stream
  resume  deliver again, after a pause or after the endpoint answered 410 Gone (disabled)
  retry-now  end the wait of the events waiting for a retry (a backoff, a Retry-After):
          they are sent within seconds
  test    POST a signed sample event to the destination's endpoint, as the running
          destination would, and print the answer (exit 0 on 2xx, 1 otherwise)

The state, attempts and figures are read from the hub's database (HUB_DATABASE_URL); the
backlog from the destination's JetStream consumer (HUB_NATS_URL, or the running ` + "`hub dev`" + `
recorded in HUB_DATA_DIR, or 127.0.0.1:4222): without NATS, list and status say it is unknown.
`

func runDestinations(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAction(ctx, args, "destinations", destinationsUsage, []command{
		{name: "list", run: runDestinationsList}, {name: "status", run: runDestinationsStatus},
		{name: "pause", run: destinationsSetState("pause")}, {name: "resume", run: destinationsSetState("resume")},
		{name: "retry-now", run: runDestinationsRetryNow}, {name: "test", run: runDestinationsTest}}, stdout, stderr)
}

// destinationView is a destination as list and status print it (--json:
// these names).
type destinationView struct {
	Name       string    `json:"name"`
	URL        string    `json:"url"`
	Subjects   []string  `json:"subjects"`
	State      string    `json:"state"`
	Reason     string    `json:"reason,omitempty"`
	StateSince time.Time `json:"state_since,omitzero"`
	// LastSuccess and LastAttempt are absent when there was none (since
	// the attempts were last purged).
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	Attempts1h  int64     `json:"attempts_1h"`
	Failures1h  int64     `json:"failures_1h"`
	P99ms1h     float64   `json:"p99_ms_1h"`
	// Waiting is the events parked for a retry (or, ordered, behind one),
	// out of the stream; NextDue when the next is due (absent when none).
	Waiting int64     `json:"waiting"`
	NextDue time.Time `json:"next_due,omitzero"`
	// Backlog is the consumer's NumPending + NumAckPending: the events
	// not yet delivered. Absent when unknown (BacklogUnknown says why).
	Backlog        *uint64 `json:"backlog,omitempty"`
	Pending        uint64  `json:"pending,omitempty"`
	AckPending     int     `json:"ack_pending,omitempty"`
	BacklogUnknown string  `json:"backlog_unknown,omitempty"`
	// RecentAttempts (status only) are the last attempts, oldest first.
	RecentAttempts []destination.Attempt `json:"recent_attempts,omitempty"`
}

func viewOf(st destination.Status) destinationView {
	return destinationView{Name: st.Name, URL: destination.RedactURL(st.URL), Subjects: st.Subjects, State: string(st.State), Reason: st.Reason,
		StateSince: st.ChangedAt, LastSuccess: st.LastSuccess, LastAttempt: st.LastAttempt,
		Attempts1h: st.Attempts1h, Failures1h: st.Failures1h, P99ms1h: float64(st.P99.Microseconds()) / 1000,
		Waiting: st.Waiting.Events, NextDue: st.Waiting.NextDue}
}

// backlogReader reads destinations' consumers; a nil js (NATS not
// reached, or no stream there) leaves every backlog unknown, saying why.
type backlogReader struct {
	js      jetstream.JetStream
	stream  string
	problem string
}

func newBacklogReader(env *opsEnv) backlogReader {
	b := backlogReader{stream: env.nats.Stream}
	switch {
	case env.nc == nil || !env.nats.StreamFound:
		b.problem = cmp.Or(env.nats.Problem, "NATS not reached")
	default:
		js, err := jetstream.New(env.nc)
		if err != nil {
			b.problem = err.Error()
		}
		b.js = js
	}
	return b
}

// fill sets v's backlog from its consumer.
func (b backlogReader) fill(ctx context.Context, v *destinationView) {
	if b.js == nil {
		v.BacklogUnknown = b.problem
		return
	}
	ctx, cancel := context.WithTimeout(ctx, natsConnectTimeout)
	defer cancel()
	c, err := b.js.Consumer(ctx, b.stream, v.Name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		v.BacklogUnknown = fmt.Sprintf("no consumer %s on stream %s: the destination has not run since the stream was made", v.Name, b.stream)
		return
	case err != nil:
		v.BacklogUnknown = fmt.Sprintf("read consumer %s: %v", v.Name, err)
		return
	}
	info := c.CachedInfo()
	n := info.NumPending + uint64(max(info.NumAckPending, 0))
	v.Backlog, v.Pending, v.AckPending = &n, info.NumPending, info.NumAckPending
}

func runDestinationsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("destinations list", `Usage: hub destinations list [--json]

Every destination whose tables are in the hub's database, by name:

  NAME          the destination
  STATE         active, paused (by an operator) or disabled (its endpoint answered 410 Gone)
  BACKLOG       events not yet delivered (its consumer's pending + unacknowledged), or
                unknown without NATS
  WAITING       events parked out of the stream for a retry (a backoff, a Retry-After),
                or behind one on an ordered destination (see retry-now)
  LAST-SUCCESS  its last 2xx answer, "never" if none is logged
  FAILURES(1h)  failed attempts / attempts in the last hour
  P99(1h)       99th percentile of the last hour's attempt latencies
  URL           the endpoint the running destination registered
`, stdout)
	asJSON := fs.Bool("json", false, "one JSON object per destination, one per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Sprintf("destinations list takes no arguments (%q); see `hub destinations status NAME` for one", fs.Arg(0)))
	}
	env, _, err := connectOps(ctx, natsOptional, stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	sts, err := destination.List(ctx, env.pool)
	if err != nil {
		return err
	}
	br := newBacklogReader(env)
	views := make([]destinationView, len(sts))
	for i, st := range sts {
		views[i] = viewOf(st)
		br.fill(ctx, &views[i])
	}
	if *asJSON {
		return printJSONLines(stdout, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no destinations: a destination creates its tables when it first runs (see docs/destinations.md)")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tBACKLOG\tWAITING\tLAST-SUCCESS\tFAILURES(1h)\tP99(1h)\tURL")
	unknown := ""
	for _, v := range views {
		backlog := "unknown"
		if v.Backlog != nil {
			backlog = strconv.FormatUint(*v.Backlog, 10)
		} else if unknown == "" {
			unknown = v.BacklogUnknown
		}
		p99 := "-"
		if v.Attempts1h > 0 {
			p99 = formatLatency(time.Duration(v.P99ms1h * float64(time.Millisecond)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d/%d\t%s\t%s\n", v.Name, v.State, backlog, v.Waiting, sinceText(v.LastSuccess, now, "never"),
			v.Failures1h, v.Attempts1h, p99, cleanLine(v.URL, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unknown != "" {
		fmt.Fprintf(stdout, "\nbacklog unknown: %s\n", unknown)
	}
	return nil
}

// waitingText says how many events of v wait for a retry, until when.
func waitingText(v destinationView, now time.Time) string {
	if v.Waiting == 0 {
		return "none"
	}
	next := "due now"
	if d := v.NextDue.Sub(now); d > 0 {
		next = "next due " + v.NextDue.UTC().Format(time.RFC3339) + " (in " + d.Round(time.Second).String() + ")"
	}
	return fmt.Sprintf("%d event(s) parked for their retry, %s; `hub destinations retry-now %s` sends them now", v.Waiting, next, v.Name)
}

// sinceText is t and how long ago, or none when t is zero.
func sinceText(t, now time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339) + " (" + agoText(now.Sub(t)) + ")"
}

// agoText says how long ago d was, coarsely: 45s ago, 12m ago, 3h ago,
// 2d ago.
func agoText(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// destinationArg parses an action's flags and its one NAME argument.
func destinationArg(fs *flag.FlagSet, args []string, action string) (string, error) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usageErr(fmt.Sprintf("destinations %s needs exactly one destination NAME (see `hub destinations list`)", action))
	}
	if !subscriber.ValidName(pos[0]) {
		return "", usageErr(fmt.Sprintf("%q is not a destination name: lower-case letters, digits and _, starting with a letter", pos[0]))
	}
	return pos[0], nil
}

// unknownDestination is the error for a name that is no destination's,
// listing those that are.
func unknownDestination(ctx context.Context, db destination.DB, name string) error {
	known := "none yet: a destination creates its tables when it first runs"
	if sts, err := destination.List(ctx, db); err == nil && len(sts) > 0 {
		names := make([]string, len(sts))
		for i, st := range sts {
			names[i] = st.Name
		}
		known = strings.Join(names, ", ")
	}
	return fmt.Errorf("%w %q (known: %s)", destination.ErrUnknownDestination, name, known)
}

const (
	defaultStatusAttempts = 10
	maxStatusAttempts     = destination.MaxAttemptsLimit
)

func runDestinationsStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("destinations status", `Usage: hub destinations status NAME [--attempts N] [--json]

One destination: its URL and subjects, its state with the reason and since when, its
backlog, last success and the last hour's figures, and its last attempts (whatever their
event; `+"`hub events show`"+` has one event's).
`, stdout)
	n := fs.Int("attempts", defaultStatusAttempts, fmt.Sprintf("show the last N attempts (0..%d)", maxStatusAttempts))
	asJSON := fs.Bool("json", false, "print one JSON object")
	name, err := destinationArg(fs, args, "status")
	if err != nil {
		return err
	}
	if *n < 0 || *n > maxStatusAttempts {
		return usageErr(fmt.Sprintf("--attempts must be within 0..%d, got %d", maxStatusAttempts, *n))
	}
	env, _, err := connectOps(ctx, natsOptional, stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	st, err := destination.GetStatus(ctx, env.pool, name)
	if errors.Is(err, destination.ErrUnknownDestination) {
		return unknownDestination(ctx, env.pool, name)
	}
	if err != nil {
		return err
	}
	v := viewOf(st)
	newBacklogReader(env).fill(ctx, &v)
	if *n > 0 {
		if v.RecentAttempts, err = deststate.RecentAttempts(ctx, env.pool, name, *n); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	now := time.Now()
	fmt.Fprintf(stdout, "destination   %s\nurl           %s\nsubjects      %s\n", v.Name, orDash(cleanLine(v.URL, 200)), orDash(strings.Join(v.Subjects, " ")))
	state := v.State
	if !v.StateSince.IsZero() {
		state += " since " + sinceText(v.StateSince, now, "")
	}
	if v.Reason != "" {
		state += ": " + cleanLine(v.Reason, 300)
	}
	fmt.Fprintf(stdout, "state         %s\n", state)
	switch {
	case v.Backlog != nil:
		fmt.Fprintf(stdout, "backlog       %d (%d waiting in the stream, %d delivered and not yet acknowledged)\n", *v.Backlog, v.Pending, v.AckPending)
	default:
		fmt.Fprintf(stdout, "backlog       unknown: %s\n", v.BacklogUnknown)
	}
	fmt.Fprintf(stdout, "waiting       %s\n", waitingText(v, now))
	fmt.Fprintf(stdout, "last success  %s\nlast attempt  %s\n", sinceText(v.LastSuccess, now, "never"), sinceText(v.LastAttempt, now, "never"))
	hour := fmt.Sprintf("%d attempts", v.Attempts1h)
	if v.Attempts1h > 0 {
		hour += fmt.Sprintf(", %d failed (%.1f%%), p99 %s", v.Failures1h, 100*float64(v.Failures1h)/float64(v.Attempts1h),
			formatLatency(time.Duration(v.P99ms1h*float64(time.Millisecond))))
	}
	fmt.Fprintf(stdout, "last hour     %s\n", hour)
	switch {
	case v.State == string(destination.StatePaused) || v.State == string(destination.StateDisabled):
		fmt.Fprintf(stdout, "              (%s: events wait in the stream; `hub destinations resume %s` delivers them)\n", v.State, v.Name)
	}
	switch {
	case *n == 0:
	case len(v.RecentAttempts) == 0:
		fmt.Fprintln(stdout, "\nattempts: none logged")
	default:
		fmt.Fprintf(stdout, "\nlast %d attempt(s), oldest first:\n", len(v.RecentAttempts))
		printAttempts(stdout, v.RecentAttempts, true)
	}
	return nil
}

// Environment of `hub destinations test`.
const (
	// testIDPrefix starts a test delivery's webhook-id: a real one is
	// "<provider>:<event_id>", and no provider is named "test".
	testIDPrefix = "test:"
)

// testResult is what test prints with --json. It never holds a secret
// nor a whole signature.
type testResult struct {
	Destination string `json:"destination"`
	File        string `json:"file"`
	URL         string `json:"url"`
	WebhookID   string `json:"webhook_id"`
	Type        string `json:"type"`
	Payload     string `json:"payload"`
	BodyBytes   int    `json:"body_bytes"`
	// Signatures are the first characters of each signature
	// ("v1,AbCdEf…"): enough to match a receiver's log, too few to forge.
	Signatures []string `json:"signatures"`
	OK         bool     `json:"ok"`
	Status     int      `json:"status,omitempty"`
	LatencyMS  float64  `json:"latency_ms"`
	Response   string   `json:"response,omitempty"`
	Error      string   `json:"error,omitempty"`
}

func runDestinationsTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("destinations test", `Usage: hub destinations test NAME [--file PATH] [--json]

Reads the destination NAME from the destinations file, signs a sample event with its
secret(s) (the variables its secret_env names must be set here) and POSTs it to its URL
with its settings (payload, headers, timeouts, CA bundle), as the running destination
would. Prints the answer's status, latency and start of body; exits 0 on a 2xx answer,
1 otherwise.

The sample is a realistic event of the provider of the destination's first subject (a
type that subject matches when it has wildcards), or a paddle subscription.created when
that subject's provider is a wildcard. Its webhook-id is "test:<uuid>", never the id of
a real event ("<provider>:<event_id>"): a receiver that deduplicates on webhook-id
processes it as a new event, so make sure its handler can tell a test from a real one
(the id's prefix). Nothing is recorded in the hub: no attempt, no state change.

The secret and the signatures are never printed: only "v1," and the first 6 characters
of each signature.
`, stdout)
	file := fs.String("file", "", "the destinations file (default: HUB_DESTINATIONS_FILE, else destinations.yaml)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	name, err := destinationArg(fs, args, "test")
	if err != nil {
		return err
	}
	path := cmp.Or(*file, defaultDestinationsFile())
	d, warning, err := loadDestination(path, name)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(stderr, "hub destinations:", warning)
	}
	now := time.Now()
	ev, err := sampleEvent(d, now)
	if err != nil {
		return err
	}
	body, err := destination.Body(d.Payload, ev)
	if err != nil {
		return fmt.Errorf("build the sample's body: %w", err)
	}
	h := destination.RequestHeader(ctx, d, ev, ev.MsgID, body, now)
	client := destination.NewClient(destination.ClientConfig{Timeout: time.Duration(d.Timeout),
		ConnectTimeout: time.Duration(d.ConnectTimeout), RootCAs: d.RootCAs, MaxConns: 1,
		Redact: d.Redactor(), AllowLinkLocal: d.AllowLinkLocal})
	defer client.Close()
	res := client.Do(ctx, d.URL, h, body)

	payload := cmp.Or(string(d.Payload), string(destination.PayloadEnvelope))
	out := testResult{Destination: name, File: path, URL: destination.RedactURL(d.URL), WebhookID: ev.MsgID, Type: ev.Provider + "." + ev.EventType,
		Payload: payload, BodyBytes: len(body), Signatures: signaturePrefixes(h.Get(destination.HeaderWebhookSignature)),
		OK: res.OK(), Status: res.Status, LatencyMS: float64(res.Latency.Microseconds()) / 1000,
		Response: res.Response} // redacted by the client (destination.Destination.Redactor)
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	if *asJSON {
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printTestResult(stdout, out, h, res)
	}
	switch {
	case res.OK():
		return nil
	case res.Status != 0:
		return fmt.Errorf("%s answered %d: not delivered (a running destination would retry it)", name, res.Status)
	}
	return fmt.Errorf("%s did not answer: %s", name, out.Error)
}

// loadDestination reads the destination name from the destinations file
// at path, its secrets from the environment. Problems with other
// destinations (their secret variables unset here, typically) do not
// stop the test: they come back as a warning.
func loadDestination(path, name string) (destination.Destination, string, error) {
	ds, err := destination.Load(path, os.LookupEnv)
	warning := ""
	if err != nil {
		fes := fieldErrors(err)
		if len(fes) == 0 || slices.ContainsFunc(fes, func(fe *destination.FieldError) bool {
			// The file itself, this destination, or one whose name cannot
			// be told (it may be this one).
			return fe.Destination == "" || fe.Destination == name || strings.HasPrefix(fe.Destination, "#")
		}) {
			return destination.Destination{}, "", err
		}
		// Only other destinations have problems: give their unusable
		// secrets a stand-in (they are not used) and read the file again.
		ds, err = destination.Load(path, func(k string) (string, bool) {
			if v, ok := os.LookupEnv(k); ok {
				if _, perr := destination.ParseSecret(v); perr == nil {
					return v, true
				}
			}
			return standInSecret, true
		})
		if err != nil {
			return destination.Destination{}, "", err
		}
		warning = fmt.Sprintf("%d problem(s) with other destinations in %s, ignored for this test; the first: %v", len(fes), path, fes[0])
	}
	var names []string
	for _, d := range ds {
		if d.Name == name {
			return d, warning, nil
		}
		names = append(names, d.Name)
	}
	known := cmp.Or(strings.Join(names, ", "), "none")
	return destination.Destination{}, "", fmt.Errorf("%w %q in %s (its destinations: %s)", destination.ErrUnknownDestination, name, path, known)
}

// standInSecret signs nothing: it stands in for the secrets of the
// destinations a test does not send to.
var standInSecret = "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, destination.MinSecretLen))

// fieldErrors are the *FieldError values in err's tree.
func fieldErrors(err error) []*destination.FieldError {
	var out []*destination.FieldError
	var walk func(error, int)
	walk = func(e error, depth int) {
		if e == nil || depth > 8 {
			return
		}
		if fe, ok := e.(*destination.FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c, depth+1)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		}
	}
	walk(err, 0)
	return out
}

// sampleTypes are the event types a test picks from, per provider, when
// the destination's first subject has wildcards: the first it matches.
var sampleTypes = map[string][]string{
	"paddle":  {"subscription.created", "transaction.completed", "customer.created"},
	"stripe":  {"customer.subscription.created", "invoice.paid", "checkout.session.completed"},
	"clerk":   {"user.created", "session.created", "organization.created"},
	"github":  {"push", "pull_request.opened", "issues.opened", "release.published"},
	"shopify": {"orders.create", "customers.create", "products.create"},
	"twilio":  {"message.received", "call.ringing"},
}

// sampleType chooses the provider and event type of a test event for a
// subject filter: the filter itself when it has no wildcard; else a
// provider's usual type the filter matches, or the filter with its
// wildcards as "test"; paddle subscription.created when the provider
// itself is a wildcard.
func sampleType(filter string) (provider, eventType string) {
	provider, rest, _ := strings.Cut(filter, ".")
	if provider == "" || provider == "*" || provider == ">" || rest == "" {
		return "paddle", "subscription.created"
	}
	for _, t := range sampleTypes[provider] {
		if schema.MatchSubject(filter, provider+"."+t) {
			return provider, t
		}
	}
	toks := strings.Split(rest, ".")
	for i, t := range toks {
		if t == "*" || t == ">" {
			toks[i] = "test"
		}
	}
	return provider, strings.Join(toks, ".")
}

// sampleEvent builds the test event of d: a realistic body of the
// provider of its first subject, with a test webhook-id.
func sampleEvent(d destination.Destination, now time.Time) (subscriber.Event, error) {
	filter := ""
	if len(d.Subjects) > 0 {
		filter = d.Subjects[0]
	}
	provider, eventType := sampleType(filter)
	id := uuid.NewString()
	eventID := "test_" + strings.ReplaceAll(id, "-", "")
	body, err := samples.Body(provider, eventID, eventType, nil, now)
	if err != nil {
		return subscriber.Event{}, fmt.Errorf("build a %s %s sample: %w", provider, eventType, err)
	}
	subject, err := schema.Subject(provider, eventType)
	if err != nil {
		return subscriber.Event{}, fmt.Errorf("build a %s %s sample: %w", provider, eventType, err)
	}
	return subscriber.Event{
		Metadata: schema.Metadata{MsgID: testIDPrefix + id, EventID: eventID, Provider: provider, EventType: eventType,
			ReceivedAt: now, OccurredAt: now},
		Subject: subject,
		Data:    body,
	}, nil
}

// signaturePrefixes shortens each signature of a webhook-signature value
// to "v1," and its first 6 characters.
func signaturePrefixes(v string) []string {
	var out []string
	for _, s := range strings.Fields(v) {
		version, sig, _ := strings.Cut(s, ",")
		out = append(out, version+","+sig[:min(len(sig), 6)]+"…")
	}
	return out
}

// printTestResult prints what `hub destinations test` sent and what came
// back, as text.
func printTestResult(stdout io.Writer, out testResult, h http.Header, res destination.Result) {
	fmt.Fprintf(stdout, "POST %s\n", cleanLine(out.URL, 300))
	fmt.Fprintf(stdout, "destination        %s (from %s)\n", out.Destination, out.File)
	fmt.Fprintf(stdout, "event              %s, %s payload, %d bytes\n", out.Type, out.Payload, out.BodyBytes)
	fmt.Fprintf(stdout, "webhook-id         %s (a test id: no real event has it)\n", out.WebhookID)
	fmt.Fprintf(stdout, "webhook-timestamp  %s\n", h.Get(destination.HeaderWebhookTimestamp))
	fmt.Fprintf(stdout, "webhook-signature  %s\n", strings.Join(out.Signatures, " "))
	answer := "no answer"
	if res.Status != 0 {
		answer = strconv.Itoa(res.Status)
		if t := http.StatusText(res.Status); t != "" {
			answer += " " + t
		}
	}
	if out.Error != "" {
		answer += ": " + out.Error
	}
	fmt.Fprintf(stdout, "answer             %s in %s\n", cleanLine(answer, 300), formatLatency(res.Latency))
	if out.Response != "" {
		fmt.Fprintf(stdout, "response           %s\n", cleanLine(out.Response, 300))
	}
}
