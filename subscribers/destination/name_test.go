package destination_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// TestRefusesAnotherSubscribersName: a destination named like a running
// subscriber of another kind does not start (it would share its consumer
// and schema).
func TestRefusesAnotherSubscribersName(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	// credits, email and downgrade are refused by the file's check
	// (ReservedNames); any other subscriber's name at start.
	if err := subscriber.Migrate(ctx, h.env.Pool, "inventory", nil); err != nil {
		t.Fatal(err)
	}
	r, err := destination.New(spec(t, "inventory", "http://127.0.0.1:1/", ""), h.options(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); !errors.Is(err, destination.ErrNotDestination) {
		t.Fatalf("Run = %v, want ErrNotDestination", err)
	}
}
