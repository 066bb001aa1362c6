package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/schema"
)

// StreamConfig describes the stream the hub publishes to.
type StreamConfig struct {
	Name            string
	Providers       []string // each contributes the subjects "<provider>.>"; "_replay.>" is always added
	Replicas        int
	DuplicateWindow time.Duration
	MaxAge          time.Duration // 0: no age limit
}

// EnsureStream creates the stream, or updates an existing one to cover the
// configured providers, replicas and duplicate window. Storage is always
// file.
func EnsureStream(ctx context.Context, js jetstream.JetStream, c StreamConfig) (jetstream.Stream, error) {
	if len(c.Providers) == 0 {
		return nil, errors.New("ensure stream: no providers configured")
	}
	subjects := make([]string, 0, len(c.Providers)+1)
	for _, p := range c.Providers {
		subjects = append(subjects, schema.ProviderFilter(p))
	}
	// Replay copies for one subscriber (hub replay).
	subjects = append(subjects, schema.ReplayFilter())
	cfg := jetstream.StreamConfig{
		Name:        c.Name,
		Description: "hookhub: verified webhook events, one message per event",
		Subjects:    subjects,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
		MaxAge:      c.MaxAge,
	}
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s (subjects %v): %w", c.Name, subjects, err)
	}
	return s, nil
}
