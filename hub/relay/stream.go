package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// subjects are the subjects this hub needs the stream to hold.
func (c StreamConfig) subjects() []string {
	subjects := make([]string, 0, len(c.Providers)+1)
	for _, p := range c.Providers {
		subjects = append(subjects, schema.ProviderFilter(p))
	}
	// Replay copies for one subscriber (hub replay).
	return append(subjects, schema.ReplayFilter())
}

func (c StreamConfig) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.Name,
		Description: "hookhub: verified webhook events, one message per event",
		Subjects:    c.subjects(),
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
		MaxAge:      c.MaxAge,
	}
}

// EnsureStream creates the stream, or makes an existing one cover the
// configured providers, without ever taking anything away from it: hub
// replicas of different versions (a rolling deploy, a rollback) may share
// it, each with its own providers. See ensureStream.
func EnsureStream(ctx context.Context, js jetstream.JetStream, c StreamConfig) (jetstream.Stream, error) {
	e, err := ensureStream(ctx, js, c)
	if err != nil {
		return nil, err
	}
	return e.stream, nil
}

// ensured says what ensureStream found and did.
type ensured struct {
	stream  jetstream.Stream
	info    *jetstream.StreamInfo
	created bool     // the stream did not exist: created with this hub's settings
	added   []string // subjects this hub added to an existing stream
	raised  []string // settings this hub raised, e.g. "replicas 1 -> 3"
	// kept are the stream's settings that differ from this hub's and that
	// it leaves alone: larger than its own (it never lowers them), or
	// refused by the server when raised (e.g. R3 on a single server).
	kept []string
	// missing is set with an error when the stream does not exist and
	// could not be created; incomplete when it exists but some of this
	// hub's subjects could not be added.
	missing, incomplete bool
}

// ensureStream makes the stream exist and hold this hub's subjects.
//
// A missing stream is created with this hub's settings. An existing one is
// merged with them: subjects are added, never removed (another replica
// may serve providers this one does not know), and the replicas, the
// duplicate window and the maximum age are raised when this hub's are
// larger, never lowered (lowering the age would drop messages, a smaller
// duplicate window would weaken another replica's dedup, fewer replicas
// its durability: lowering them is an operator's act, `nats stream edit`).
// The update is sent only when something is missing, so replicas with
// different settings do not undo each other.
func ensureStream(ctx context.Context, js jetstream.JetStream, c StreamConfig) (ensured, error) {
	if len(c.Providers) == 0 {
		return ensured{}, errors.New("ensure stream: no providers configured")
	}
	want := c.streamConfig()
	for attempt := 0; ; attempt++ {
		st, err := js.Stream(ctx, c.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// CreateStream, not CreateOrUpdateStream: a stream another replica
			// creates at the same moment must not be overwritten.
			st, err = js.CreateStream(ctx, want)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) && attempt < 3 {
				continue // created meanwhile, with other settings: merge
			}
			if err != nil {
				return ensured{missing: true}, fmt.Errorf("create stream %s (subjects %v): %w", c.Name, want.Subjects, err)
			}
			return ensured{stream: st, info: st.CachedInfo(), created: true}, nil
		}
		if err != nil {
			return ensured{}, fmt.Errorf("stream %s: %w", c.Name, err)
		}
		info := st.CachedInfo()
		merged, e := mergeStreamConfig(info.Config, want)
		if len(e.added) == 0 && len(e.raised) == 0 {
			e.stream, e.info = st, info
			return e, nil
		}
		updated, err := js.UpdateStream(ctx, merged)
		if err != nil && len(e.raised) > 0 {
			// A raise the server refuses (more replicas than it has peers, a
			// duplicate window over its cap) must not keep the subjects out.
			e.kept = append(e.kept, fmt.Sprintf("%s (refused: %v)", strings.Join(e.raised, ", "), err))
			e.raised = nil
			if len(e.added) == 0 {
				e.stream, e.info = st, info
				return e, nil
			}
			subjectsOnly := info.Config
			subjectsOnly.Subjects = merged.Subjects
			updated, err = js.UpdateStream(ctx, subjectsOnly)
		}
		if err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) && attempt < 3 {
				continue // deleted meanwhile
			}
			e.incomplete = true
			return e, fmt.Errorf("add subjects %v to stream %s: %w", e.added, c.Name, err)
		}
		e.stream, e.info = updated, updated.CachedInfo()
		return e, nil
	}
}

// errSubjectConflict: another stream holds some of this hub's subjects.
var errSubjectConflict = errors.New("subjects held by another stream")

// subjectConflicts returns errSubjectConflict (wrapped, naming them) when
// streams other than c.Name hold any of this hub's subjects. JetStream
// refuses to create overlapping streams, but two created concurrently can
// both pass its check (nats-server 2.15, single server: most attempts when
// two creations race), e.g. a hub recreating its lost stream while an
// operator creates another.
func subjectConflicts(ctx context.Context, js jetstream.JetStream, c StreamConfig) error {
	var others []string
	for _, subj := range c.subjects() {
		names := js.StreamNames(ctx, jetstream.WithStreamListSubject(subj))
		for name := range names.Name() {
			if name != c.Name && !slices.Contains(others, name) {
				others = append(others, name)
			}
		}
		if err := names.Err(); err != nil {
			return fmt.Errorf("list streams holding %s: %w", subj, err)
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("stream %s: %w: %s", c.Name, errSubjectConflict, strings.Join(others, ", "))
	}
	return nil
}

// mergeStreamConfig returns have with want's subjects added and its
// replicas, duplicate window and maximum age raised where want's are
// larger, and says what it changed and what differs but stays.
func mergeStreamConfig(have, want jetstream.StreamConfig) (jetstream.StreamConfig, ensured) {
	var e ensured
	merged := have
	merged.Subjects = slices.Clone(have.Subjects)
	for _, s := range want.Subjects {
		if !slices.ContainsFunc(have.Subjects, func(h string) bool { return coversSubject(h, s) }) {
			merged.Subjects = append(merged.Subjects, s)
			e.added = append(e.added, s)
		}
	}
	if want.Replicas > have.Replicas {
		merged.Replicas = want.Replicas
		e.raised = append(e.raised, fmt.Sprintf("replicas %d -> %d", have.Replicas, want.Replicas))
	} else if want.Replicas < have.Replicas {
		e.kept = append(e.kept, fmt.Sprintf("replicas %d (this hub: %d)", have.Replicas, want.Replicas))
	}
	if want.Duplicates > have.Duplicates {
		merged.Duplicates = want.Duplicates
		e.raised = append(e.raised, fmt.Sprintf("duplicate window %s -> %s", have.Duplicates, want.Duplicates))
	} else if want.Duplicates < have.Duplicates {
		e.kept = append(e.kept, fmt.Sprintf("duplicate window %s (this hub: %s)", have.Duplicates, want.Duplicates))
	}
	switch {
	case have.MaxAge == want.MaxAge:
	case have.MaxAge != 0 && (want.MaxAge == 0 || want.MaxAge > have.MaxAge):
		merged.MaxAge = want.MaxAge
		e.raised = append(e.raised, fmt.Sprintf("max age %s -> %s", ageString(have.MaxAge), ageString(want.MaxAge)))
	default:
		e.kept = append(e.kept, fmt.Sprintf("max age %s (this hub: %s)", ageString(have.MaxAge), ageString(want.MaxAge)))
	}
	if have.Storage != want.Storage {
		e.kept = append(e.kept, fmt.Sprintf("storage %s (this hub: %s)", have.Storage, want.Storage))
	}
	return merged, e
}

// coversSubject reports whether a stream holding subject have receives
// every message of want: the same subject, or a wildcard ending in ">"
// that covers it.
func coversSubject(have, want string) bool {
	return have == want || (strings.HasSuffix(have, ">") && schema.MatchSubject(have, want))
}

func ageString(d time.Duration) string {
	if d == 0 {
		return "unlimited"
	}
	return d.String()
}
