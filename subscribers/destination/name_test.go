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
	h := newHarness(t)
	ctx := context.Background()
	if err := subscriber.Migrate(ctx, h.env.Pool, "credits", nil); err != nil {
		t.Fatal(err)
	}
	r, err := destination.New(spec(t, "credits", "http://127.0.0.1:1/", ""), h.options(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); !errors.Is(err, destination.ErrNotDestination) {
		t.Fatalf("Run = %v, want ErrNotDestination", err)
	}
}
