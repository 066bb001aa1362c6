package relay

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
)

// MaxHeaderBytes is the room the hub keeps for a message's headers when it
// checks a body against what the stream or the NATS server accepts (the
// hub's own headers take a few hundred bytes; a traceparent and a
// republished copy's headers fit too).
const MaxHeaderBytes = 4096

// The stream settings that break delivery or dedup, each a fixed word: the
// "setting" label of hub_stream_setting_broken and the words /readyz shows
// after "misconfigured".
const (
	// SettingSealed: a sealed stream refuses every publish, and cannot be
	// unsealed.
	SettingSealed = "sealed"
	// SettingMirror: a mirror takes no publishes of its own.
	SettingMirror = "mirror"
	// SettingSubjectTransform: the stream stores messages under other
	// subjects than they were published to; every event is acknowledged
	// and reaches no subscriber whose filter is <provider>.<type>.
	SettingSubjectTransform = "subject_transform"
	// SettingNoAck: no PubAck; the hub can never mark an event published.
	SettingNoAck = "no_ack"
	// SettingRetention: work-queue retention gives each message to one
	// consumer and deletes it; interest retention deletes what no consumer
	// was interested in when stored. Either way subscribers miss events
	// and nothing can be replayed.
	SettingRetention = "retention"
	// SettingDiscardNew: with discard new, a stream at its message or byte
	// limit refuses every publish.
	SettingDiscardNew = "discard_new"
	// SettingMaxMsgsPerSubject: a per-subject limit drops older events of
	// the same type (or, with discard new per subject, refuses new ones).
	SettingMaxMsgsPerSubject = "max_msgs_per_subject"
	// SettingMaxMsgSize: the stream's max_msg_size is below the hub's body
	// limit plus MaxHeaderBytes: larger deliveries would never publish
	// (they are answered 413 instead).
	SettingMaxMsgSize = "max_msg_size"
	// SettingMsgCounter: a counter stream (allow_msg_counter) refuses every
	// publish that is not a counter increment, and JetStream cannot turn
	// it off.
	SettingMsgCounter = "msg_counter"
	// SettingDuplicateWindow: the stream's duplicate window is shorter
	// than the relay's retry horizon (HUB_DUPLICATE_WINDOW) and the hub
	// could not raise it: a retried publish may store a second copy.
	SettingDuplicateWindow = "duplicate_window"
)

// StreamSettings lists every setting word StreamFaults may report, in the
// order it checks them.
var StreamSettings = []string{SettingSealed, SettingMirror, SettingSubjectTransform, SettingNoAck, SettingRetention,
	SettingDiscardNew, SettingMaxMsgsPerSubject, SettingMaxMsgSize, SettingMsgCounter, SettingDuplicateWindow}

// A StreamFault is a setting of the stream that breaks delivery or dedup.
type StreamFault struct {
	Setting string `json:"setting"` // one of StreamSettings
	Problem string `json:"problem"` // what the setting is and what it does to events
	Fix     string `json:"fix"`     // what the operator does about it
}

func (f StreamFault) String() string { return f.Setting + ": " + f.Problem + "; fix: " + f.Fix }

// StreamNeeds is what the hub needs of its stream beyond its subjects.
type StreamNeeds struct {
	// MaxBodyBytes is the hub's body limit (HUB_MAX_BODY_BYTES); 0 skips
	// the max_msg_size check.
	MaxBodyBytes int
	// DuplicateWindow is the relay's (HUB_DUPLICATE_WINDOW); 0 skips the
	// duplicate window check.
	DuplicateWindow time.Duration
}

// StreamFaults returns the settings of the stream configured as c that
// break delivery or dedup, in StreamSettings order; none: nil. The stream
// is named by the caller. Settings that do not divert or stall the hub's
// publishes are left alone: RePublish (JetStream refuses a destination
// that overlaps the stream's subjects, and the message is stored as
// published), Sources (the stream still stores its own publishes),
// Discard old with limits and MaxAge (retention, as HUB_STREAM_MAX_AGE).
func StreamFaults(c jetstream.StreamConfig, need StreamNeeds) []StreamFault {
	var out []StreamFault
	add := func(setting, problem, fix string) {
		out = append(out, StreamFault{Setting: setting, Problem: problem, Fix: fix})
	}
	if c.Sealed {
		add(SettingSealed, "the stream is sealed and refuses every publish",
			"a sealed stream cannot be unsealed: move its messages elsewhere if needed, delete it (`nats stream rm`); the hub recreates it and publishes again what it held")
	}
	if c.Mirror != nil {
		add(SettingMirror, fmt.Sprintf("the stream mirrors %s and takes no publishes", c.Mirror.Name),
			"remove the mirror (`nats stream edit` with the config's mirror removed promotes it to a normal stream) or delete the stream")
	}
	if t := c.SubjectTransform; t != nil && (t.Source != "" || t.Destination != "") && t.Source != t.Destination {
		add(SettingSubjectTransform, fmt.Sprintf("the stream stores %q as %q: events are acknowledged but no subscriber filtering <provider>.<type> sees them", t.Source, t.Destination),
			"remove subject_transform from the stream's config (`nats stream edit --config stream.json`), then `hub reconcile --since <when it was set> --republish`")
	}
	if c.NoAck {
		add(SettingNoAck, "the stream sends no PubAck: the hub cannot mark events published and retries them until its duplicate window runs out",
			"set no_ack false (`nats stream edit`)")
	}
	switch c.Retention {
	case jetstream.LimitsPolicy:
	case jetstream.WorkQueuePolicy:
		add(SettingRetention, "work-queue retention gives each event to one subscriber and deletes it",
			"retention cannot be changed from work queue: delete the stream (the hub recreates it with limits retention and publishes again what it held)")
	default:
		add(SettingRetention, fmt.Sprintf("%s retention deletes events no subscriber is consuming when stored, and replays find nothing", c.Retention),
			"set retention to limits (`nats stream edit`)")
	}
	perSubjectNew := c.DiscardNewPerSubject && c.MaxMsgsPerSubject > 0
	if c.Discard == jetstream.DiscardNew && (c.MaxMsgs > 0 || c.MaxBytes > 0 || perSubjectNew) && !c.Sealed {
		add(SettingDiscardNew, fmt.Sprintf("discard new with limits (max_msgs %d, max_bytes %d): the full stream refuses every publish", c.MaxMsgs, c.MaxBytes),
			"set discard to old, or remove max_msgs and max_bytes (`nats stream edit`); keep events for a time with HUB_STREAM_MAX_AGE")
	}
	if c.MaxMsgsPerSubject > 0 {
		add(SettingMaxMsgsPerSubject, fmt.Sprintf("max_msgs_per_subject %d drops older events of the same type (or refuses new ones with discard new per subject)", c.MaxMsgsPerSubject),
			"set max_msgs_per_subject to -1 (`nats stream edit`)")
	}
	if need.MaxBodyBytes > 0 && c.MaxMsgSize > 0 && int(c.MaxMsgSize) < need.MaxBodyBytes+MaxHeaderBytes {
		add(SettingMaxMsgSize, fmt.Sprintf("max_msg_size %d is below HUB_MAX_BODY_BYTES %d plus %d bytes of headers: larger deliveries are answered 413", c.MaxMsgSize, need.MaxBodyBytes, MaxHeaderBytes),
			fmt.Sprintf("raise max_msg_size to at least %d or set it to -1 (`nats stream edit`), or lower HUB_MAX_BODY_BYTES", need.MaxBodyBytes+MaxHeaderBytes))
	}
	if c.AllowMsgCounter {
		add(SettingMsgCounter, "the stream is a counter stream (allow_msg_counter) and refuses every publish that is not a counter increment",
			"JetStream cannot turn counters off: delete the stream (`nats stream rm`); the hub recreates it and publishes again what it held")
	}
	if need.DuplicateWindow > 0 && c.Duplicates < need.DuplicateWindow {
		add(SettingDuplicateWindow, fmt.Sprintf("duplicate window %s is shorter than HUB_DUPLICATE_WINDOW %s and could not be raised: a retried publish may store an event twice", c.Duplicates, need.DuplicateWindow),
			"raise the stream's duplicate window (see the hub's log for why the server refused it; it must not exceed max_age) or lower HUB_DUPLICATE_WINDOW")
	}
	return out
}

// PublishLimit is the largest body the hub can publish: the NATS server's
// max_payload and the stream's max_msg_size (either <= 0: none), less
// MaxHeaderBytes; 0 when neither is known. A stream that cannot take even
// the headers gives 1: every body is refused.
func PublishLimit(maxPayload int64, maxMsgSize int32) int {
	limit := int64(0)
	if maxPayload > 0 {
		limit = maxPayload
	}
	if maxMsgSize > 0 && (limit == 0 || int64(maxMsgSize) < limit) {
		limit = int64(maxMsgSize)
	}
	if limit == 0 {
		return 0
	}
	return int(max(limit-MaxHeaderBytes, 1))
}

// ErrStreamMisconfigured is wrapped by Keeper.Check's error when a setting
// of the stream breaks delivery or dedup (StreamFaults).
var ErrStreamMisconfigured error = &hub.Error{Code: hub.EUNAVAILABLE, Message: "stream settings break delivery"}

// Diverted returns an error (wrapping ErrStreamMisconfigured) when one of
// the stream's faults makes it acknowledge publishes and store them where
// no subscriber looks (a subject transform), else nil. Nothing is
// published to such a stream: the keeper holds the relay on it, and
// republish and replay refuse to run.
func Diverted(stream string, faults []StreamFault) error {
	for _, f := range faults {
		if f.Setting == SettingSubjectTransform {
			return fmt.Errorf("held: stream %s: %w: %s", stream, ErrStreamMisconfigured, f.Setting)
		}
	}
	return nil
}

// checkSettings records the stream's broken settings (StreamFaults) for
// /readyz and the metric, logs each once as an error with its fix, and
// returns ErrStreamMisconfigured (wrapped, naming them) when there are any.
func (k *Keeper) checkSettings(c jetstream.StreamConfig) error {
	k.maxMsgSize.Store(c.MaxMsgSize)
	faults := StreamFaults(c, StreamNeeds{MaxBodyBytes: k.cfg.MaxBodyBytes, DuplicateWindow: k.cfg.Stream.DuplicateWindow})
	k.stateMu.Lock()
	k.faults = faults
	k.stateMu.Unlock()
	k.setFaultMetrics(faults)
	words := SettingWords(faults)
	// A diverting setting holds the relay: publishing would mark events
	// published that no subscriber gets; held, they wait in the outbox.
	k.relay.hold(Diverted(k.cfg.Stream.Name, faults))
	if logged := strings.Join(words, ","); logged != k.faultsLogged {
		k.faultsLogged = logged
		log := k.cfg.Logger.With("stream", k.cfg.Stream.Name)
		for _, f := range faults {
			msg := "stream setting breaks delivery: /readyz fails until it is changed; the hub does not change it"
			if f.Setting == SettingSubjectTransform {
				msg += "; publishing is held meanwhile (events wait in the outbox)"
			}
			log.Error(msg, "setting", f.Setting, "problem", f.Problem, "fix", f.Fix)
		}
		if len(faults) == 0 {
			log.Info("stream settings no longer break delivery")
		}
	}
	if len(faults) == 0 {
		return nil
	}
	return fmt.Errorf("stream %s: %w: %s", k.cfg.Stream.Name, ErrStreamMisconfigured, strings.Join(words, ", "))
}

func (k *Keeper) setFaultMetrics(faults []StreamFault) {
	if k.cfg.Metrics == nil {
		return
	}
	broken := SettingWords(faults)
	for _, s := range StreamSettings {
		v := 0.0
		if slices.Contains(broken, s) {
			v = 1
		}
		k.cfg.Metrics.StreamSettingBroken.WithLabelValues(s).Set(v)
	}
}

// SettingWords are the faults' setting words, in order.
func SettingWords(faults []StreamFault) []string {
	words := make([]string, len(faults))
	for i, f := range faults {
		words[i] = f.Setting
	}
	return words
}

// Faults are the stream's settings that break delivery or dedup, as of the
// last check that read them.
func (k *Keeper) Faults() []StreamFault {
	k.stateMu.Lock()
	defer k.stateMu.Unlock()
	return slices.Clone(k.faults)
}

// Status is the stream's state for /readyz and whether the hub is ready in
// it. A misconfigured stream's state names its broken settings, fixed
// words: "misconfigured: sealed, max_msg_size".
func (k *Keeper) Status() (string, bool) {
	k.stateMu.Lock()
	defer k.stateMu.Unlock()
	if k.state == StreamMisconfigured && len(k.faults) > 0 {
		return string(k.state) + ": " + strings.Join(SettingWords(k.faults), ", "), false
	}
	return string(k.state), k.state.Ready()
}

// MaxPublishBytes is the largest body the hub can publish to the stream:
// PublishLimit of the NATS server's max_payload (maxPayload, <= 0:
// unknown) and the stream's max_msg_size as last seen; 0 when neither is
// known.
func (k *Keeper) MaxPublishBytes(maxPayload int64) int {
	return PublishLimit(maxPayload, k.maxMsgSize.Load())
}
