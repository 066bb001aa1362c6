package schema

import "strings"

// Replays: `hub replay` redelivers a range of the stream to one subscriber
// by publishing copies on that subscriber's private replay subjects,
// "_replay.<subscriber>.<original subject>", which only its consumer
// filters. The stream holds them next to the providers' subjects.
const (
	replayToken = "_replay"
	// HeaderReplayOf names the stream sequence a replay copy was made from.
	HeaderReplayOf = "Hub-Replay-Of"
)

// ReplayFilter is the stream subject that holds every replay copy.
func ReplayFilter() string { return replayToken + ".>" }

// ReplaySubject is the subject a copy of subject is replayed on to
// subscriber. subject may be a filter with wildcards.
func ReplaySubject(subscriber, subject string) string {
	return replayToken + "." + subscriber + "." + subject
}

// SplitReplaySubject undoes ReplaySubject. ok is false for a subject that
// is not a replay copy.
func SplitReplaySubject(subject string) (subscriber, original string, ok bool) {
	rest, ok := strings.CutPrefix(subject, replayToken+".")
	if !ok {
		return "", "", false
	}
	subscriber, original, ok = strings.Cut(rest, ".")
	if !ok || subscriber == "" || original == "" {
		return "", "", false
	}
	return subscriber, original, true
}
