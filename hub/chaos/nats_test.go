package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startTestNATS starts a cluster of test-binary nodes, stopped when the
// test ends.
func startTestNATS(t *testing.T) *NATSCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster of node processes")
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	began := time.Now()
	c, err := StartNATS(ctx, NATSOptions{
		Dir:    t.TempDir(),
		Exe:    os.Args[0],
		Env:    []string{nodeEnv + "=1"},
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster of %d node processes ready in %s", c.Size(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		pids := c.pids()
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("node process %d left after Stop: %v", pid, err)
			}
		}
	})
	return c
}

// pids are the running nodes' process ids.
func (c *NATSCluster) pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, n := range c.nodes {
		if n.proc != nil {
			out = append(out, n.proc.cmd.Process.Pid)
		}
	}
	return out
}

// streamMsgs is how many messages node i's replica of stream holds.
func (c *NATSCluster) streamMsgs(ctx context.Context, i int, stream string) (uint64, error) {
	var j struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Msgs uint64 `json:"messages"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if _, err := c.monitorGet(ctx, i, "/jsz?accounts=true&streams=true", &j); err != nil {
		return 0, err
	}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			if s.Name == stream {
				return s.State.Msgs, nil
			}
		}
	}
	return 0, fmt.Errorf("node %d has no stream %s", i, stream)
}

// streamCurrent reports whether node i's replica of stream is caught up
// with its leader, by the node's own health check.
func (c *NATSCluster) streamCurrent(ctx context.Context, i int, stream string) bool {
	var h struct{}
	code, err := c.monitorGet(ctx, i, "/healthz?account=%24G&stream="+stream, &h)
	return err == nil && code == http.StatusOK
}

// publisher publishes chaos.<k> with message id m-<k> for k in [0, n),
// each retried until acknowledged (at most 60 s each); it counts the acks
// and keeps the longest time between two.
type publisher struct {
	acked  atomic.Int64
	maxGap atomic.Int64 // nanoseconds
}

func (p *publisher) run(ctx context.Context, js jetstream.JetStream, n int) error {
	last := time.Now()
	for k := range n {
		deadline := time.Now().Add(60 * time.Second)
		for {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := js.Publish(pctx, fmt.Sprintf("chaos.%d", k), []byte("x"), jetstream.WithMsgID(fmt.Sprintf("m-%d", k)))
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				return fmt.Errorf("publish %d: %w", k, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		p.acked.Add(1)
		if gap := time.Since(last); int64(gap) > p.maxGap.Load() {
			p.maxGap.Store(int64(gap))
		}
		last = time.Now()
	}
	return nil
}

// TestNATSKillStreamLeader kills the leader of an R3 stream while
// messages are published, checks that another node takes over and
// publishes go on, starts the killed node again, checks that it catches
// up, and that every message is on the stream exactly once; then it
// restarts a follower and checks that a node killed behind the cluster's
// back is reported.
//
// A soak test: the default run proves the same end to end with hub chaos
// (TestChaosLocal's nats-kill, hub/cmd/hub).
func TestNATSKillStreamLeader(t *testing.T) {
	hubtest.Soak(t)
	c := startTestNATS(t)
	ctx := t.Context()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const stream, total = "CHAOS", 600
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: stream, Subjects: []string{"chaos.>"}, Replicas: 3, Storage: jetstream.FileStorage,
	}); err != nil {
		t.Fatal(err)
	}
	var pub publisher
	acked := &pub.acked
	published := make(chan error, 1)
	go func() { published <- pub.run(ctx, js, total) }()
	waitFor(t, 30*time.Second, "100 acks", func() bool { return acked.Load() >= 100 })

	leader, err := c.StreamLeader(ctx, stream)
	if err != nil || leader < 0 {
		t.Fatalf("stream leader: %d, %v", leader, err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	killed, ackedAtKill := time.Now(), acked.Load()
	next := -1
	waitFor(t, 30*time.Second, "a new stream leader", func() bool {
		next, err = c.StreamLeader(ctx, stream)
		return err == nil && next >= 0 && next != leader
	})
	t.Logf("killed leader %s at %d acks; %s leads after %s", c.Name(leader), ackedAtKill, c.Name(next), time.Since(killed).Round(time.Millisecond))
	waitFor(t, 30*time.Second, "publishes to go on", func() bool { return acked.Load() >= ackedAtKill+100 })

	began := time.Now()
	if err := c.Start(ctx, leader); err != nil {
		t.Fatal(err)
	}
	rejoined := time.Since(began)
	waitFor(t, 30*time.Second, "the restarted node's replica to be current", func() bool { return c.streamCurrent(ctx, leader, stream) })
	t.Logf("%s rejoined the meta group %s after its start, its replica current after %s", c.Name(leader), rejoined.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("publisher not done: %d of %d acked", acked.Load(), total)
	}
	t.Logf("longest wait between two acks: %s", time.Duration(pub.maxGap.Load()).Round(time.Millisecond))
	for i := range c.Size() {
		var msgs uint64
		waitFor(t, 20*time.Second, fmt.Sprintf("%s to hold %d messages", c.Name(i), total), func() bool {
			msgs, err = c.streamMsgs(ctx, i, stream)
			return err == nil && msgs == total
		})
	}
	checkExactlyOnce(t, js, stream, total)
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	checkRestartAndExit(t, c, stream)
}

// checkRestartAndExit restarts a follower of stream, then kills another
// node behind the cluster's back and checks that Err reports it.
func checkRestartAndExit(t *testing.T, c *NATSCluster, stream string) {
	ctx := t.Context()
	leader, err := c.StreamLeader(ctx, stream)
	if err != nil || leader < 0 {
		t.Fatalf("stream leader: %d, %v", leader, err)
	}
	follower, other := (leader+1)%c.Size(), (leader+2)%c.Size()
	began := time.Now()
	if err := c.Restart(ctx, follower); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of follower %s: rejoined after %s", c.Name(follower), time.Since(began).Round(time.Millisecond))
	if err := c.Err(); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
	if err := c.Start(ctx, follower); err == nil {
		t.Fatal("Start of a running node succeeded")
	}
	pid := c.nodes[other].proc.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the exit to be reported", func() bool { return c.Err() != nil })
	if err := c.Err(); !strings.Contains(err.Error(), c.Name(other)+" exited unexpectedly") {
		t.Fatalf("Err: %v", err)
	}
}

// checkExactlyOnce reads the whole stream and checks that message ids
// m-0 to m-<total-1> are each on it once.
func checkExactlyOnce(t *testing.T, js jetstream.JetStream, stream string, total int) {
	t.Helper()
	cons, err := js.OrderedConsumer(t.Context(), stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	read, deadline := 0, time.Now().Add(60*time.Second)
	for read < total && time.Now().Before(deadline) {
		batch, err := cons.Fetch(total-read, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Logf("fetch: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for m := range batch.Messages() {
			seen[m.Headers().Get(nats.MsgIdHdr)]++
			read++
		}
		if err := batch.Error(); err != nil {
			t.Logf("fetch: %v", err)
		}
	}
	// Anything more would be a duplicate.
	if batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second)); err == nil {
		for m := range batch.Messages() {
			seen[m.Headers().Get(nats.MsgIdHdr)]++
		}
	}
	var bad []string
	for k := range total {
		if got := seen[fmt.Sprintf("m-%d", k)]; got != 1 && len(bad) < 20 {
			bad = append(bad, fmt.Sprintf("m-%d×%d", k, got))
		}
	}
	if len(bad) > 0 || len(seen) != total {
		t.Fatalf("%d distinct ids in %d messages read for %d published; wrong counts (first 20): %s", len(seen), read, total, strings.Join(bad, " "))
	}
}

func TestStartNATSFails(t *testing.T) {
	tests := []struct {
		name string
		o    NATSOptions
		want string
	}{
		{"no dir", NATSOptions{Exe: os.Args[0]}, "Dir and Exe are required"},
		{"no exe", NATSOptions{Dir: t.TempDir()}, "Dir and Exe are required"},
		{"negative size", NATSOptions{Dir: t.TempDir(), Exe: os.Args[0], Size: -1}, "size -1"},
		{"missing executable", NATSOptions{Dir: t.TempDir(), Exe: "/nonexistent/hub"}, "start node n0"},
		{"nodes exit at once", NATSOptions{Dir: t.TempDir(), Exe: os.Args[0], Args: []string{"-bogus"}, Env: []string{nodeEnv + "=1"}}, "exited while starting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := StartNATS(t.Context(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				if c != nil {
					_ = c.Stop(context.Background())
				}
				t.Fatalf("StartNATS = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestRunNodeFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "are required"},
		{"no store", []string{"-name", "a", "-port", "1", "-cluster-port", "2", "-routes", "nats-route://x:2"}, "are required"},
		{"unknown flag", []string{"-bogus"}, "flag provided but not defined"},
		{"bad port", []string{"-port", "x"}, "invalid value"},
		{"extra argument", []string{"-name", "a", "extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RunNode(t.Context(), tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("RunNode(%q) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestLogLines(t *testing.T) {
	long := strings.Repeat("x", 3*natsLogLineMax)
	tests := []struct {
		name, in string
		want     []string // the logged records, as the text handler writes them
	}{
		{"json record", `{"time":"t","level":"WARN","msg":"route lost","component":"nats-server"}` + "\n",
			[]string{`level=WARN msg="route lost" node=n0 component=nats-server`}},
		{"plain line", "panic: boom\r\n", []string{`level=INFO msg="panic: boom" node=n0`}},
		{"bad level", `{"level":"LOUD","msg":"m"}` + "\n", []string{`level=INFO msg=m node=n0`}},
		{"overlong line cut, next kept", long + "\nnext\n",
			[]string{`level=INFO msg=` + strings.Repeat("x", natsLogLineMax) + ` node=n0`, `level=INFO msg=next node=n0`}},
		{"no final newline", "last", []string{`level=INFO msg=last node=n0`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			})).With("node", "n0")
			logLines(strings.NewReader(tt.in), logger)
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
