package subscriber_test

import (
	"context"
	"time"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// exampleEnv is a runnable Example's database and JetStream server (the
// hub's stream), without a *testing.T.
type exampleEnv struct {
	*subtest.Env
	tb *hubtest.Standalone
}

func newExampleEnv() *exampleEnv {
	tb := hubtest.NewStandalone("example")
	return &exampleEnv{Env: subtest.New(tb), tb: tb}
}

func (e *exampleEnv) close() { e.tb.Close() }

func (e *exampleEnv) clerkUserCreated(svixID, userID, email string, at time.Time) subtest.Message {
	return subtest.ClerkUserCreated(e.tb, svixID, userID, email, at)
}

func (e *exampleEnv) paddleSubscription(eventID, eventType string, at time.Time, subID string) subtest.Message {
	return subtest.PaddleSubscription(e.tb, eventID, eventType, at, subID, "ctm_1", nil)
}

// run runs sub until it has settled n deliveries (processed or skipped),
// then stops it.
func (e *exampleEnv) run(sub *subscriber.Subscriber, n uint64) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	err := hubtest.Until(subtest.Timeout, func() bool {
		s := sub.Stats()
		return s.Processed+s.SkippedDuplicate+s.SkippedStale >= n
	})
	if err != nil {
		panic("example: the subscriber did not handle its messages")
	}
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
}
