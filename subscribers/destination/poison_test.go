package destination_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination/internal/receivertest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// TestRefusedEventsDoNotHoldBackOthers: events the receiver keeps
// refusing wait for their retries (long ones here) without holding back
// the events after them: more of them than the destination's concurrency
// fail, and every other event is still delivered at once.
func TestRefusedEventsDoNotHoldBackOthers(t *testing.T) {
	t.Parallel()
	rcv := receivertest.Go(t, testSecret)
	var mu sync.Mutex
	ok := map[string]bool{}
	rcv.Control(t, receivertest.Control{Handler: func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		if strings.Contains(id, "poison") {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		mu.Lock()
		ok[id] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}})
	h := newHarness(t)
	o := h.options(t)
	o.RetryBase, o.RetryMax = time.Hour, time.Hour // a refused event is not tried again during the test
	o.Circuit.Threshold = 1000                     // and the circuit stays closed
	d := spec(t, "poison_dest", rcv.URL(), "concurrency: 2\n")
	h.start(t, d, o)
	// 18 refused events: more than the consumer would hold with a
	// MaxAckPending of a few times the concurrency.
	var want []string
	for i := range 70 {
		id := fmt.Sprintf("good-%d", i)
		if i%4 == 0 {
			id = fmt.Sprintf("poison-%d", i)
		}
		h.env.Publish(t, subtest.PaddleSubscription(t, id, "subscription.created", time.Now(), "sub_"+id, "ctm_"+id, nil))
		if !strings.HasPrefix(id, "poison") {
			want = append(want, "paddle:"+id)
		}
	}
	eventually(t, "every good event delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range want {
			if !ok[id] {
				return false
			}
		}
		return true
	})
	dl, err := subscriber.CountWaitingDeadLetters(context.Background(), h.env.Pool, "poison_dest")
	if err != nil || dl != 0 {
		t.Fatalf("dead letters = %d, %v: refused events wait for their retry", dl, err)
	}
}
