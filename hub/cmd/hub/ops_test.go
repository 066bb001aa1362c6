package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops/opstest"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The operator commands, as an operator new to the project would call
// them: clear errors and exit codes for mistakes, JSON lines on request.
func TestOperatorCommands(t *testing.T) {
	pool, _ := natsEnv(t)
	_, err := store.New(pool).Ingest(context.Background(), []hub.Delivery{
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_cli", EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now(),
			Entities: []hub.Entity{{Kind: "customer", ID: "cus_cli"}}},
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_cli", EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()},
	})
	require.NoError(t, err)
	// A subscriber's tables with one dead letter waiting.
	require.NoError(t, subscriber.Migrate(context.Background(), pool, "flaky", nil))
	require.NoError(t, subscriber.Migrate(context.Background(), pool, "quiet", nil))
	_, err = pool.Exec(context.Background(), `INSERT INTO flaky.dead_letters
		(subscriber, provider, event_id, subject, headers, data, error, attempts, created_at)
		VALUES ('flaky', 'paddle', 'evt_cli', 'paddle.subscription.created', '{}', '\x7b7d', 'bug', 3, now())`)
	require.NoError(t, err)

	cases := []struct {
		args []string
		code int
		out  string // expected in stdout
		err  string // expected in stderr
	}{
		{[]string{"events", "list", "--json"}, 0, `"deliveries":2`, ""},
		{[]string{"events", "list"}, 0, "evt_cli", ""},
		{[]string{"events", "list", "--entity", "cus_cli", "--json"}, 0, `"entities":[{"kind":"customer","id":"cus_cli"}]`, ""},
		{[]string{"events", "list", "--entity", "cus_nobody"}, 0, "no events match", ""},
		// Each subscriber's outcome of each event about the entity, as the README says.
		{[]string{"events", "list", "--entity", "cus_cli"}, 0, "flaky dead_lettered", ""},
		{[]string{"events", "list", "--entity", "cus_cli", "--json"}, 0, `"subscribers":[{"subscriber":"flaky","outcome":"dead_lettered"`, ""},
		{[]string{"events", "list", "--entity", "cus_cli", "--limit", "201"}, 2, "", "--limit: at most 200 with --entity"},
		{[]string{"events", "list", "--entity", ""}, 2, "", "--entity: required: an entity id"},
		{[]string{"events", "list", "--entity", "cus\x01"}, 2, "", `--entity: "cus\x01" contains control characters`},
		{[]string{"events", "list", "--entity", strings.Repeat("x", 256)}, 2, "", "--entity: longer than 255 bytes"},
		{[]string{"events", "show", "paddle:evt_cli"}, 0, "entities   customer:cus_cli", ""},
		{[]string{"events", "show", "paddle:evt_cli"}, 0, "deliveries (2)", ""},
		{[]string{"events", "show", "--json", "paddle:evt_cli"}, 0, `"event_id":"evt_cli"`, ""},
		{[]string{"events", "show", "paddle:nope"}, 1, "", "nothing matched"},
		{[]string{"events", "list", "--since", "yesterday"}, 2, "", "--since"},
		{[]string{"events", "list", "--status", "DONE"}, 2, "", `--status: "DONE" is not a status`},
		{[]string{"events"}, 2, "", "events needs list or show"},
		{[]string{"events"}, 2, "", "Usage: hub events"},
		{[]string{"events", "--help"}, 0, "Usage: hub events", ""},
		{[]string{"status", "--json"}, 1, `"outbox_pending":1`, "the stream is unreachable"}, // no stream WEBHOOKS there
		{[]string{"status"}, 1, "stream: unavailable (stream WEBHOOKS not found", "hub status: the stream is unreachable"},
		{[]string{"purge", "--older-than", "90d", "--dry-run"}, 0, "would delete 0", ""},
		{[]string{"purge", "--older-than", "90d"}, 0, "dry run: would delete 0", ""},
		{[]string{"purge", "--older-than", "90d"}, 0, "run again with --yes", ""},
		{[]string{"purge", "--older-than", "90d", "--yes", "--json"}, 0, `"dry_run":false`, ""},
		{[]string{"purge", "--older-than", "90d", "--json"}, 0, `"dry_run":true`, ""},
		{[]string{"purge", "--older-than", "90d", "--yes", "--dry-run"}, 2, "", "contradict"},
		{[]string{"purge", "--older-than", "1ns", "--yes"}, 2, "", "--older-than: must be at least 1d"},
		{[]string{"purge", "--older-than", "213504d"}, 2, "", "--older-than: bad time"},
		{[]string{"purge", "--older-than", "90d", "--batch", "0"}, 2, "", "--batch: must be within 1..50000 rows, got 0"},
		{[]string{"purge", "--older-than", "90d", "--batch", "-5"}, 2, "", "--batch: must be within"},
		{[]string{"purge", "--older-than", "90d", "--batch", "1e9"}, 2, "", "invalid value"},
		{[]string{"purge", "90d"}, 2, "", "did you mean --older-than 90d"},
		{[]string{"purge"}, 2, "", "--older-than is required"},
		{[]string{"dlq", "list", "--subscriber", "nobody"}, 1, "", "unknown subscriber"},
		{[]string{"dlq", "list", "--subscriber", "no\x00body"}, 2, "", "--subscriber:"},
		{[]string{"dlq", "redrive", "--subscriber", "nobody"}, 2, "", "--id: give exactly one"},
		{[]string{"dlq", "redrive", "--subscriber", "flaky", "--id", "-1"}, 2, "", "--id: must be a dead letter's id"},
		{[]string{"dlq", "redrive", "--subscriber", "flaky", "--id", "-1", "--all"}, 2, "", "--id: must be a dead letter's id"},
		{[]string{"dlq", "redrive", "--subscriber", "flaky", "--id", "1", "--all"}, 2, "", "--id: give exactly one"},
		{[]string{"dlq", "redrive", "--subscriber", "flaky", "--id", "999", "--json"}, 1, "", "nothing matched: flaky has no dead letter 999"},
		{[]string{"dlq", "redrive", "--subscriber", "flaky", "--all", "--json"}, 0, `{"subscriber":"flaky","requested":1}`, ""},
		{[]string{"dlq", "redrive", "--subscriber", "quiet", "--all", "--json"}, 1, "", "nothing matched: quiet has no dead letter waiting"},
		{[]string{"dlq", "list", "--subscriber", "flaky", "--json"}, 0, `"redrive_requested_at"`, ""},
		{[]string{"dlq", "purge", "--subscriber", "flaky"}, 2, "", "unknown dlq action"},
		{[]string{"replay", "--subscriber", "nobody"}, 2, "", "--since are required"},
		{[]string{"replay", "--subscriber", "nobody", "--since", "1h"}, 1, "", "unknown subscriber"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--rate", "NaN"}, 2, "", "--rate: must be 0 (unlimited) or within 1..10000"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--rate", "1e10"}, 2, "", "--rate: must be"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--rate", "-1"}, 2, "", "--rate: must be"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--rate", "+Inf"}, 2, "", "--rate: must be"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--wait", "0s"}, 2, "", "--wait: must be within 1s..24h0m0s"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--wait", "-1s"}, 2, "", "--wait: must be within"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--subject", "paddle..x"}, 2, "", "--subject: "},
		{[]string{"republish", "--since", "1h", "--dry-run"}, 1, "", "nothing matched"},
		{[]string{"republish"}, 2, "", "--since: give since"},
		{[]string{"republish", "--event", "paddle:\x00", "--dry-run"}, 2, "", "--event: "},
		{[]string{"events", "list", "--limit", "0"}, 2, "", "--limit: must be within 1..10000, got 0"},
		{[]string{"events", "list", "--limit", "1"}, 0, "more may follow: add --before ", ""},
		{[]string{"events", "list", "--limit", "1", "--json"}, 0, `"cursor":"`, ""},
		{[]string{"events", "list", "--before", "yesterday"}, 2, "", `--before: "yesterday" is not a cursor`},
		{[]string{"republish", "--status", "FAILED", "--since", "1h"}, 2, "", "--status: FAILED events cannot be republished"},
		{[]string{"events", "list", "--limit", "10001", "--json"}, 2, "", "--limit: must be within"},
		{[]string{"events", "list", "--limit", "many", "--json"}, 2, "", "invalid value"},
		{[]string{"events", "list", "--provider", "pad\xffdle"}, 2, "", "--provider: "},
		{[]string{"events", "list", "--bogus", "--json"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"events", "show", "paddle:\x00"}, 2, "", "the event (archive id or provider:event_id): "},
		{[]string{"events", "show", "paddle:" + strings.Repeat("x", 300)}, 2, "", "longer than"},
		{[]string{"send", "--repeat", "0", "paddle", "x"}, 2, "", "--repeat must be within 1..10000"},
		{[]string{"send", "--repeat", "10001", "paddle", "x"}, 2, "", "--repeat must be within"},
		{[]string{"bench", "--duplicates", "NaN"}, 2, "", "--duplicates must be within 0..0.9, got NaN"},
		{[]string{"bench", "--count", "0"}, 2, "", "--count must be within 1..1000000, got 0"},
		{[]string{"bench", "--concurrency", "100000"}, 2, "", "--concurrency must be within 1..4096"},
		{[]string{"bench", "--warmup", "-1"}, 2, "", "--warmup must be within"},
		{[]string{"bench", "--rounds", "100"}, 2, "", "--rounds must be within 1..99"},
		{[]string{"bench", "--hubs", "0"}, 2, "", "--hubs must be within 1..8, got 0"},
		{[]string{"bench", "--hubs", "9"}, 2, "", "--hubs must be within 1..8, got 9"},
		{[]string{"bench", "--hubs", "-1"}, 2, "", "--hubs must be within 1..8, got -1"},
		{[]string{"bench", "--hubs", "x"}, 2, "", `invalid value "x" for flag -hubs`},
		{[]string{"bench", "destinations", "--concurrency", "0"}, 2, "", "--concurrency must be within 1..256, got 0"},
		{[]string{"bench", "destinations", "--preload", "1"}, 2, "", "--preload must be within 2..1000000"},
		{[]string{"bench", "destinations", "--latency-rate", "NaN"}, 2, "", "--latency-rate must be within"},
		{[]string{"bench", "destinations", "--ingest-for", "-1s"}, 2, "", "--ingest-for must be within 0..1h"},
		{[]string{"bench", "destinations", "--ingest-rate", "20000", "--ingest-for", "1h"}, 2, "", "at most 1000000"},
		{[]string{"bench", "destinations", "extra"}, 2, "", "takes no arguments"},
		{[]string{"bench", "destinations", "--help"}, 0, "trivial receiver", ""},
		{[]string{"replay", "--help"}, 0, "private replay subjects", ""},
		// Payload filters and bulk actions.
		{[]string{"events", "list", "--where", "a=1", "--since", "1h"}, 0, "evt_cli", ""},
		{[]string{"events", "list", "--where", "a=2", "--since", "1h"}, 0, "no events match", ""},
		{[]string{"events", "list", "--where", "a=1"}, 0, "evt_cli", ""}, // the last 7 days
		{[]string{"events", "list", "--where", "a=1", "--since", "8d"}, 2, "", "--since: a payload filter searches at most 7d"},
		// Exactly the longest range: "now" is taken once.
		{[]string{"events", "list", "--where", "a=1", "--since", "7d"}, 0, "evt_cli", ""},
		{[]string{"bulk", "republish", "--since", "7d", "--where", "a=1", "--dry-run", "--json"}, 0, `"not_published":1`, ""},
		{[]string{"events", "list", "--where", "nope", "--since", "1h"}, 2, "", `--where: "nope" is not path=value`},
		{[]string{"events", "list", "--where", "a[x]=1", "--since", "1h"}, 2, "", "--where: "},
		{[]string{"bulk", "replay", "--subscriber", "nobody", "--since", "1h", "--where", "a=1"}, 1, "", "unknown subscriber"},
		{[]string{"bulk", "replay", "--subscriber", "flaky", "--since", "1h", "--rate", "5000"}, 2, "", "--rate: must be within 1..1000"},
		{[]string{"bulk", "replay", "--subscriber", "flaky"}, 2, "", "--since: required"},
		{[]string{"bulk", "republish", "--since", "1h", "--where", "a=1", "--dry-run"}, 0, "0 to republish to the stream (every subscriber); left out: 1 never published", ""},
		{[]string{"bulk", "republish", "--since", "1h", "--where", "a=1", "--dry-run", "--json"}, 0, `"not_published":1`, ""},
		{[]string{"bulk", "delete"}, 2, "", "unknown bulk action"},
		{[]string{"nonsense"}, 2, "", "unknown command"},
		{[]string{"reconcile"}, 2, "", "--since is required"},
		{[]string{"reconcile", "--since", "1h"}, 1, "", "stream WEBHOOKS not found"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			require.Equal(t, c.code, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			require.Contains(t, stdout.String(), c.out)
			require.Contains(t, stderr.String(), c.err)
			if slices.Contains(c.args, "--json") {
				for line := range strings.Lines(stdout.String()) {
					require.True(t, json.Valid([]byte(line)), "--json prints JSON lines only on stdout, got %q", line)
				}
			}
			if code == 2 {
				require.Empty(t, stdout.String(), "a usage error prints its message on stderr only")
			}
		})
	}
}

// The command line decodes its flags as the admin API and the console
// decode their input: the same fields, named with dashes, through hub/ops.
// A bad value is refused before connecting (exit 2, naming the flag); a
// good one gets as far as the database (here: none, exit 1).
func TestCLIDecodesAsEveryFace(t *testing.T) {
	t.Setenv("HUB_DATABASE_URL", "postgres://hub@127.0.0.1:1/none?connect_timeout=2")
	t.Setenv("HUB_NATS_URL", "nats://127.0.0.1:1")
	commands := map[string][]string{"events": {"events", "list"}, "replay": {"replay"}, "republish": {"republish"},
		"purge": {"purge"}, "audit": {"audit", "list"}}
	for i, c := range opstest.Cases {
		t.Run(strconv.Itoa(i)+"_"+c.Kind, func(t *testing.T) {
			args := append([]string{}, commands[c.Kind]...)
			if c.Kind == "bulk" {
				args = []string{"bulk", c.Values.Get("action")}
			}
			fs := flag.NewFlagSet(c.Kind, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var where whereFlag
			fs.Var(&where, "where", "")
			var flags []string
			for name, vals := range c.Values {
				dashed := strings.ReplaceAll(name, "_", "-")
				switch {
				case name == "action" && c.Kind == "bulk":
					continue
				case name == "dry_run" && c.Kind == "purge":
					if vals[0] == "false" {
						args = append(args, "--yes")
					}
				default:
					for _, v := range vals {
						args = append(args, "--"+dashed+"="+v)
					}
				}
				if name == "action" && c.Kind == "bulk" {
					continue
				}
				if name != "where" {
					fs.String(dashed, "", "")
				}
				for _, v := range vals {
					flags = append(flags, "--"+dashed+"="+v)
				}
			}
			code, _, stderr := runCmd(t, args...)
			if c.Err != "" {
				require.Equal(t, 2, code, stderr)
				field, rest, _ := strings.Cut(c.Err, ":")
				require.Contains(t, stderr, strings.TrimPrefix(flagName(field), "-"), "the flag is named")
				if !strings.Contains(stderr, "invalid value") { // a typed flag (--limit, --rate) refuses first
					require.Contains(t, stderr, rest)
				}
				return
			}
			require.Equal(t, 1, code, "decoded, then no database: %s", stderr)
			require.Contains(t, stderr, "database")

			// The flags' names and values are the neutral form's.
			require.NoError(t, fs.Parse(flags))
			now := time.Now()
			v := flagValues(fs)
			if c.Kind == "bulk" {
				v.Set("action", c.Values.Get("action")) // the command's action
			}
			got, err := opstest.Decode(c.Kind, v, now)
			require.NoError(t, err)
			want, _ := opstest.Decode(c.Kind, c.Values, now)
			require.Equal(t, want, got)
		})
	}
}

// A usage mistake is one line on stderr, its message: no "hub: NATS …"
// banner before it, whether the mistake is a flag's value (decided before
// connecting), an unknown subscriber or nothing matched. An operation
// that runs prints the banner.
func TestMistakesAreOneLine(t *testing.T) {
	ctx := context.Background()
	pool, n, js := streamEnv(t)
	require.NoError(t, subscriber.Migrate(ctx, pool, "flaky", nil))
	durable(t, js, "flaky", "paddle.>")

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"replay", "--subscriber", "nobody", "--since", "1h"}, 1, "hub replay: unknown subscriber"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "yesterday"}, 2, "hub replay: usage: --since"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--rate", "-1"}, 2, "hub replay: --rate"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h"}, 1, "hub replay: nothing matched"},
		{[]string{"bulk", "replay", "--subscriber", "nobody", "--since", "1h"}, 1, "hub bulk: unknown subscriber"},
		{[]string{"bulk", "replay", "--subscriber", "flaky", "--since", "1h", "--status", "DONE"}, 2, "hub bulk: --status"},
		{[]string{"bulk", "replay", "--subscriber", "flaky", "--since", "1h"}, 1, "hub bulk: nothing matched"},
		{[]string{"republish", "--since", "1h"}, 1, "hub republish: nothing matched"},
		{[]string{"republish", "--since", "soon"}, 2, "hub republish: usage: --since"},
		{[]string{"reconcile", "--since", "soon"}, 2, "hub reconcile: usage: --since"},
		{[]string{"events", "list", "--since", "soon"}, 2, "hub events: usage: --since"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.True(t, strings.HasPrefix(stderr, tc.err), "%q", stderr)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		})
	}
	// An operation that runs says which server it works on.
	code, _, stderr := runCmd(t, "reconcile", "--since", "1h")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "hub: NATS "+n.URL()+" (from HUB_NATS_URL), stream WEBHOOKS")
}

// `hub replay` to a destination says what will be and was sent: every
// event, those it delivered before again. Before, the dry run said "0 to
// process" and the run "6 skipped as already processed", while the
// endpoint received all 6 again.
func TestReplayToADestinationSaysWhatIsSent(t *testing.T) {
	ctx := context.Background()
	pool, _, js := streamEnv(t)
	received := testhub.StartDestination(t, pool, js, "billing")

	st := store.New(pool)
	const events = 6
	for i := range events {
		_, err := st.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: fmt.Sprintf("evt_rd_%d", i),
			EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()}})
		require.NoError(t, err)
	}
	rl, err := relay.New(st, js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	require.NoError(t, rl.Drain(ctx))
	require.Eventually(t, func() bool { return received.Load() == events }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM billing.processed_messages`).Scan(&n) == nil && n == events
	}, 30*time.Second, 20*time.Millisecond)

	code, stdout, stderr := runCmd(t, "replay", "--subscriber", "billing", "--since", "1h", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "to the destination billing: 6 to send, 6 of them already delivered (a destination sends them again)")
	code, stdout, stderr = runCmd(t, "replay", "--subscriber", "billing", "--since", "1h", "--wait", "60s")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "6 sent: 0 not delivered before, 6 already delivered (sent again); 0 dead-lettered")
	require.EqualValues(t, 2*events, received.Load())
}

// A subject transform on the stream: the relay's publishes are
// acknowledged and stored under other subjects, the events marked
// PROCESSED. `hub reconcile` finds them (and says "0 missing" no more),
// names the setting, counts the events on a subject no subscriber's
// durable matches, refuses to republish into the same transform, and once
// the transform is gone republishes them to their own subjects.
func TestReconcileFindsEventsWhereNoSubscriberLooks(t *testing.T) {
	ctx := context.Background()
	pool, _, js := streamEnv(t)
	st := store.New(pool)
	// A subscriber of subscription.created only.
	durable(t, js, "credits", "paddle.subscription.created")
	r, err := relay.New(st, js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	ingest := func(eventID, eventType string) {
		_, err := st.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
			EventType: eventType, Body: []byte(`{"id":"` + eventID + `"}`), ReceivedAt: time.Now()}})
		require.NoError(t, err)
	}
	ingest("evt_unwatched", "transaction.completed")
	require.NoError(t, r.Drain(ctx))

	transform := func(tr *jetstream.SubjectTransformConfig) {
		s, err := js.Stream(ctx, schema.DefaultStream)
		require.NoError(t, err)
		c := s.CachedInfo().Config
		c.SubjectTransform = tr
		_, err = js.UpdateStream(ctx, c)
		require.NoError(t, err)
	}
	transform(&jetstream.SubjectTransformConfig{Source: "paddle.>", Destination: "moved.paddle.>"})
	ingest("evt_moved_1", "subscription.created")
	ingest("evt_moved_2", "subscription.created")
	require.NoError(t, r.Drain(ctx))
	var processed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`).Scan(&processed))
	require.Equal(t, 3, processed, "acknowledged, so marked published")

	reconcile := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append([]string{"reconcile", "--since", "1h"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := reconcile()
	require.Equal(t, 1, code, "%s%s", out, errOut)
	require.Contains(t, out, "0 missing from the stream, 2 stored under another subject")
	require.Contains(t, out, "paddle:evt_moved_1")
	require.Contains(t, out, "on moved.paddle.subscription.created, not paddle.subscription.created")
	require.Contains(t, out, "paddle.transaction.completed  1 events")
	require.Contains(t, out, "subject_transform: ")
	require.Contains(t, errOut, "break delivery (subject_transform)")
	var status, statusErr bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"status"}, &status, &statusErr), statusErr.String())
	require.Contains(t, status.String(), "setting breaks delivery: subject_transform: ")

	code, out, _ = reconcile("--json")
	require.Equal(t, 1, code)
	kinds := map[string]int{}
	for line := range strings.Lines(out) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		switch {
		case m["want_subject"] == "paddle.subscription.created":
			require.Equal(t, "moved.paddle.subscription.created", m["subject"])
			kinds["astray"]++
		case m["unwatched_subject"] == "paddle.transaction.completed":
			require.EqualValues(t, 1, m["events"])
			kinds["unwatched"]++
		case m["setting"] == "subject_transform":
			kinds["setting"]++
		default:
			t.Fatalf("unexpected line %s", line)
		}
	}
	require.Equal(t, map[string]int{"astray": 2, "unwatched": 1, "setting": 1}, kinds)

	// Republishing into the same transform would divert the copies too.
	code, _, errOut = reconcile("--republish")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "fix them first")
	require.NotContains(t, errOut, "republished")

	transform(nil)
	code, out, errOut = reconcile("--republish")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Contains(t, errOut, "republished 2 of 2")
	code, out, errOut = reconcile()
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Contains(t, out, "0 missing from the stream, 0 stored under another subject")
	require.Contains(t, out, "paddle.transaction.completed  1 events", "still no subscriber for it: told, not an error")
}
