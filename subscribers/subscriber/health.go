package subscriber

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// health is what Healthy reports besides the run state: whether the
// durable consumer exists, and the messages that are stuck because their
// dead letter cannot be stored.
type health struct {
	mu sync.Mutex
	// noConsumer says why fetch has no consumer now ("" while it has one).
	noConsumer string
	// stuck maps the stream sequence of each message whose dead letter
	// could not be stored to the last such failure.
	stuck map[uint64]stuckMessage
}

type stuckMessage struct {
	at  time.Time
	err string
}

// setNoConsumer records that fetch lost its consumer (reason non-empty) or
// has one again (reason empty).
func (s *Subscriber) setNoConsumer(reason string) {
	s.health.mu.Lock()
	s.health.noConsumer = reason
	s.health.mu.Unlock()
	if reason == "" {
		s.m.consumerUp.Set(1)
	} else {
		s.m.consumerUp.Set(0)
	}
}

// stuckHorizon is how long a message whose dead letter failed stays
// reported without news of it: a stuck message comes back within its nak
// delay (at most the last Backoff) plus AckWait, and refreshes its entry;
// one settled by another replica, or no longer delivered, is forgotten.
func (s *Subscriber) stuckHorizon() time.Duration {
	return 2*(slices.Max(s.cfg.Backoff)+s.cfg.AckWait) + time.Minute
}

// deadLetterFailed records that the dead letter of the message at stream
// sequence seq could not be stored.
func (s *Subscriber) deadLetterFailed(seq uint64, err error) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.stuck == nil {
		s.health.stuck = map[uint64]stuckMessage{}
	}
	s.health.stuck[seq] = stuckMessage{at: time.Now(), err: errText(err)}
	s.pruneStuckLocked()
}

// settled records that the message at stream sequence seq was acked or
// dead-lettered.
func (s *Subscriber) settled(seq uint64) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if len(s.health.stuck) == 0 {
		return
	}
	delete(s.health.stuck, seq)
	s.pruneStuckLocked()
}

// pruneStuck forgets stuck messages not seen for stuckHorizon (Run calls
// it periodically, so the gauge does not depend on /healthz being read).
func (s *Subscriber) pruneStuck() {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	s.pruneStuckLocked()
}

func (s *Subscriber) pruneStuckLocked() {
	horizon := time.Now().Add(-s.stuckHorizon())
	for seq, m := range s.health.stuck {
		if m.at.Before(horizon) {
			delete(s.health.stuck, seq)
		}
	}
	s.m.stuck.Set(float64(len(s.health.stuck)))
}

// problems lists what is wrong besides the run state, for Healthy.
func (s *Subscriber) problems() []string {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	var out []string
	if s.health.noConsumer != "" {
		out = append(out, fmt.Sprintf("no consumer on stream %s (recreating it: %s)", s.cfg.Stream, s.health.noConsumer))
	}
	if len(s.health.stuck) > 0 {
		s.pruneStuckLocked()
	}
	if n := len(s.health.stuck); n > 0 {
		var last stuckMessage
		for _, m := range s.health.stuck {
			if m.at.After(last.at) {
				last = m
			}
		}
		out = append(out, fmt.Sprintf("%d message(s) due to be dead-lettered cannot be stored, retrying (last error: %s)", n, last.err))
	}
	return out
}
