package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// StreamStatus is the stream's state.
type StreamStatus struct {
	Name            string        `json:"name"`
	Messages        uint64        `json:"messages"`
	Bytes           uint64        `json:"bytes"`
	FirstSeq        uint64        `json:"first_seq"`
	LastSeq         uint64        `json:"last_seq"`
	FirstTime       time.Time     `json:"first_time,omitzero"`
	LastTime        time.Time     `json:"last_time,omitzero"`
	DuplicateWindow time.Duration `json:"duplicate_window_ns"`
	Replicas        int           `json:"replicas"`
	Subjects        []string      `json:"subjects"`
	// BrokenSettings are the settings that divert or refuse the hub's
	// publishes (relay.StreamFaults; the hub's /readyz says
	// "misconfigured").
	BrokenSettings []relay.StreamFault `json:"broken_settings,omitempty"`
}

// ConsumerStatus is one durable consumer's (a subscriber's) state.
type ConsumerStatus struct {
	Name        string    `json:"name"`
	Pending     uint64    `json:"pending"`     // messages not yet delivered
	AckPending  int       `json:"ack_pending"` // delivered, not yet acknowledged
	Redelivered int       `json:"redelivered"`
	AckFloor    uint64    `json:"ack_floor_stream_seq"`
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	Filters     []string  `json:"filter_subjects,omitempty"`
}

// Status is the whole system at a glance.
type Status struct {
	Stream      *StreamStatus `json:"stream,omitempty"`
	StreamError string        `json:"stream_error,omitempty"`
	// Consumers are the stream's durable consumers: the subscribers.
	Consumers []ConsumerStatus `json:"consumers"`
	// ScanConsumers counts the ephemeral consumers (no durable name): the
	// short-lived ordered consumers with which replay, reconcile and other
	// tools read the stream. They are not subscribers.
	ScanConsumers int              `json:"scan_consumers"`
	OutboxPending int64            `json:"outbox_pending"`
	OldestPending time.Time        `json:"oldest_pending,omitzero"`
	OldestAgeSec  float64          `json:"oldest_pending_age_seconds"`
	DeadLetters   map[string]int64 `json:"dead_letters"` // waiting (not redriven) per subscriber
}

// Status reports the stream, its consumers, the outbox and the dead
// letters. Without a NATS connection the stream part says why it is
// missing and the rest is still reported.
func (o *Ops) Status(ctx context.Context) (Status, error) {
	var st Status
	backlog, err := o.archive.OutboxBacklog(ctx)
	if err != nil {
		return st, fmt.Errorf("outbox: %w", err)
	}
	st.OutboxPending = backlog.Pending
	if !backlog.Oldest.IsZero() {
		st.OldestPending = backlog.Oldest
		st.OldestAgeSec = o.now().Sub(backlog.Oldest).Seconds()
	}
	subs, err := o.Subscribers(ctx)
	if err != nil {
		return st, err
	}
	st.DeadLetters = make(map[string]int64, len(subs))
	for _, sub := range subs {
		n, err := subscriber.CountWaitingDeadLetters(ctx, o.subs, sub)
		if err != nil {
			return st, subscriberErr(err)
		}
		st.DeadLetters[sub] = n
	}
	if o.js == nil {
		st.StreamError = ErrNoStream.Error()
		return st, nil
	}
	s, err := o.js.Stream(ctx, o.stream)
	if err != nil {
		st.StreamError = err.Error()
		return st, nil
	}
	info, err := s.Info(ctx)
	if err != nil {
		st.StreamError = err.Error()
		return st, nil
	}
	st.Stream = &StreamStatus{
		Name: info.Config.Name, Messages: info.State.Msgs, Bytes: info.State.Bytes,
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq,
		FirstTime: info.State.FirstTime, LastTime: info.State.LastTime,
		DuplicateWindow: info.Config.Duplicates, Replicas: info.Config.Replicas, Subjects: info.Config.Subjects,
		BrokenSettings: relay.StreamFaults(info.Config, relay.StreamNeeds{}),
	}
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable == "" {
			st.ScanConsumers++
			continue
		}
		cs := ConsumerStatus{
			Name: ci.Name, Pending: ci.NumPending, AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered,
			AckFloor: ci.AckFloor.Stream, Paused: ci.Paused, Filters: ci.Config.FilterSubjects,
		}
		if ci.Config.FilterSubject != "" {
			cs.Filters = append(cs.Filters, ci.Config.FilterSubject)
		}
		if ci.Paused && ci.Config.PauseUntil != nil {
			cs.PausedUntil = *ci.Config.PauseUntil
		}
		st.Consumers = append(st.Consumers, cs)
	}
	if err := lister.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		st.StreamError = "list consumers: " + err.Error()
	}
	return st, nil
}
