package relay

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// recordBarrier tracks the relay's publishes from their send until their
// results are in the archive, by epoch, so that a stream restore can wait
// for every publish sent before it started: a PubAck the lost stream sent
// just before it was deleted may still be on its way to the archive
// (gathered for a mark statement, or in a claim's open transaction), and
// the restore would miss the row if it read the archive first.
type recordBarrier struct {
	mu      sync.Mutex
	epoch   uint64
	open    map[uint64]int // epoch -> publishes (batches, claims) not yet recorded
	changed chan struct{}  // closed and replaced whenever one is recorded
}

func newRecordBarrier() *recordBarrier {
	return &recordBarrier{open: map[uint64]int{}, changed: make(chan struct{})}
}

// enter registers a publish about to be sent and returns its epoch, to be
// passed to leave once its results are recorded (or abandoned).
func (b *recordBarrier) enter() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open[b.epoch]++
	return b.epoch
}

// leave ends what enter registered.
func (b *recordBarrier) leave(epoch uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[epoch]--; b.open[epoch] <= 0 {
		delete(b.open, epoch)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// wait starts a new epoch and returns once every publish registered
// before is recorded, or ctx is done.
func (b *recordBarrier) wait(ctx context.Context) error {
	b.mu.Lock()
	b.epoch++
	until := b.epoch
	b.mu.Unlock()
	for {
		b.mu.Lock()
		busy := false
		for e := range b.open {
			if e < until {
				busy = true
				break
			}
		}
		changed := b.changed
		b.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// streamTrouble reports whether a publish error may mean that the stream
// is gone, or that one of its settings refuses the hub's publishes:
// nothing answered on the subject (no stream holds it; also an election),
// the stream was not found, another stream answered (Nats-Expected-Stream
// did not match), the stream is sealed, the message is over its
// max_msg_size, or storing it failed (a limit reached with discard new).
// The keeper checks the stream at once.
func streamTrouble(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamNotFound, jsErrCodeStreamNotMatch, jsErrCodeStreamSealed,
		jetstream.JSErrCodeStreamMessageExceedsMaximum, jsErrCodeStreamStoreFailed, jsErrCodeMsgIncrMissing:
		return true
	}
	return false
}

// Server error codes nats.go has no constants for: "expected stream does
// not match" (NewJSStreamNotMatchError), "invalid operation on sealed
// stream" (NewJSStreamSealedError), "storing a message failed"
// (NewJSStreamStoreFailedError, e.g. "maximum messages exceeded"), "message
// counter increment is missing" (NewJSMessageIncrMissingError: a counter
// stream).
const (
	jsErrCodeStreamNotMatch    jetstream.ErrorCode = 10060
	jsErrCodeStreamSealed      jetstream.ErrorCode = 10109
	jsErrCodeStreamStoreFailed jetstream.ErrorCode = 10077
	jsErrCodeMsgIncrMissing    jetstream.ErrorCode = 10169
)
