package schema

import "testing"

func TestReplaySubject(t *testing.T) {
	s := ReplaySubject("credits", "paddle.subscription.created")
	if s != "_replay.credits.paddle.subscription.created" {
		t.Fatalf("ReplaySubject = %q", s)
	}
	sub, orig, ok := SplitReplaySubject(s)
	if !ok || sub != "credits" || orig != "paddle.subscription.created" {
		t.Fatalf("SplitReplaySubject = %q %q %v", sub, orig, ok)
	}
	for _, bad := range []string{"paddle.subscription.created", "_replay", "_replay.credits", "_replay..x", "_replayx.a.b"} {
		if _, _, ok := SplitReplaySubject(bad); ok {
			t.Errorf("SplitReplaySubject(%q) ok", bad)
		}
	}
}
