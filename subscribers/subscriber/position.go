package subscriber

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

// Start says where a new consumer starts (Config.Start): an existing
// consumer keeps its position, whatever Start says.
type Start struct {
	// Policy is jetstream.DeliverAllPolicy (the zero value: the stream's
	// whole retained history), DeliverNewPolicy (what is published from
	// now on) or DeliverByStartTimePolicy (from Time).
	Policy jetstream.DeliverPolicy
	// Time is the start of DeliverByStartTimePolicy.
	Time time.Time
}

// consumerConfig completes cfg with the filters (Filters: a leading
// wildcard spelled out over the stream's providers) and, for a
// consumer that does not exist yet, the start (Config.Start): JetStream
// refuses to change an existing consumer's deliver policy, and its
// position is kept.
func (s *Subscriber) consumerConfig(ctx context.Context, cfg jetstream.ConsumerConfig) (jetstream.ConsumerConfig, error) {
	var streamSubjects []string
	if slices.ContainsFunc(s.Subjects(), leadingWildcard) {
		st, err := s.cfg.JetStream.Stream(ctx, s.cfg.Stream)
		if err != nil {
			return cfg, err
		}
		streamSubjects = st.CachedInfo().Config.Subjects
	}
	cfg.FilterSubjects = Filters(s.cfg.Name, s.Subjects(), streamSubjects)
	if len(cfg.FilterSubjects) == 0 {
		// No filter would be every subject: the others' replays too.
		return cfg, fmt.Errorf("no subject of stream %s (%s) matches %s", s.cfg.Stream, strings.Join(streamSubjects, " "), strings.Join(s.Subjects(), " "))
	}
	cons, err := s.cfg.JetStream.Consumer(ctx, s.cfg.Stream, cfg.Durable)
	switch {
	case err == nil:
		old := cons.CachedInfo().Config
		cfg.DeliverPolicy, cfg.OptStartTime, cfg.OptStartSeq = old.DeliverPolicy, old.OptStartTime, old.OptStartSeq
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		cfg.DeliverPolicy = s.cfg.Start.Policy
		if cfg.DeliverPolicy == jetstream.DeliverByStartTimePolicy {
			t := s.cfg.Start.Time
			cfg.OptStartTime = &t
		}
	default:
		return cfg, fmt.Errorf("read consumer: %w", err)
	}
	return cfg, nil
}

// leadingWildcard reports a pattern whose first token is a wildcard: it
// would match the replay subjects too.
func leadingWildcard(p string) bool { return p == ">" || strings.HasPrefix(p, "*.") || p == "*" }

// Filters are the filter subjects of subscriber name's consumer for the
// registered patterns, on a stream holding streamSubjects: each pattern
// and its replay companion (schema.ReplaySubject). A pattern whose first
// token is a wildcard ("*.>") would also match every subscriber's replay
// subjects ("_replay.>"), and overlap its own companion, which JetStream
// refuses: it is spelled out over the stream's other subjects instead,
// "*.>" becoming "paddle.>", "stripe.>", ... for a stream holding
// "paddle.>" and "stripe.>". A stream subject it cannot spell out over
// (one with a leading wildcard itself) keeps the pattern as it is.
func Filters(name string, patterns, streamSubjects []string) []string {
	var own []string
	for _, p := range patterns {
		if !leadingWildcard(p) {
			own = append(own, p)
			continue
		}
		for _, ss := range streamSubjects {
			if _, _, replay := schema.SplitReplaySubject(ss); replay || strings.HasPrefix(ss, "_replay.") {
				continue
			}
			if f, ok := narrow(p, ss); ok && !slices.Contains(own, f) {
				own = append(own, f)
			}
		}
	}
	out := slices.Clone(own)
	for _, f := range own {
		out = append(out, schema.ReplaySubject(name, f))
	}
	return out
}

// narrow returns the subjects of stream subject ss that pattern p (with a
// leading wildcard) matches, as one filter; false when there are none. ss
// is "<provider>.>", or a literal subject; anything else is kept as p.
func narrow(p, ss string) (string, bool) {
	first, rest, _ := strings.Cut(ss, ".")
	if first == "*" || first == ">" {
		return p, true
	}
	if rest == ">" {
		if p == ">" {
			return ss, true
		}
		_, prest, _ := strings.Cut(p, ".")
		if prest == "" {
			return "", false // "*" matches one token; ss has two or more
		}
		return first + "." + prest, true
	}
	if !strings.ContainsAny(ss, "*>") && schema.MatchSubject(p, ss) {
		return ss, true
	}
	if strings.ContainsAny(ss, "*>") && schema.SubjectsOverlap(p, ss) {
		return ss, true
	}
	return "", false
}
