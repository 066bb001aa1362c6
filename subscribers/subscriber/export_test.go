package subscriber

// Hooks stop a subscriber at the points a crash matters (tests only).
type Hooks struct {
	// BeforeCommit runs after the handler succeeded, before COMMIT; an
	// error rolls the transaction back.
	BeforeCommit func(Event) error
	// AfterCommit runs after COMMIT, before the ack.
	AfterCommit func(Event)
	// DropAck, when it returns true, skips the ack as if it were lost.
	DropAck func(Event) bool
}

// SetHooks installs h; call it before Run.
func (s *Subscriber) SetHooks(h Hooks) {
	s.hooks = hooks{beforeCommit: h.BeforeCommit, afterCommit: h.AfterCommit, dropAck: h.DropAck}
}
