package destination

import "github.com/hookhub/hookhub/subscribers/destination/deststate"

// The tables' types and constants, named here as before (deststate).
type (
	State   = deststate.State
	Attempt = deststate.Attempt
)

const (
	StateActive         = deststate.StateActive
	StatePaused         = deststate.StatePaused
	StateDisabled       = deststate.StateDisabled
	OutcomeDelivered    = deststate.OutcomeDelivered
	OutcomeFailed       = deststate.OutcomeFailed
	OutcomeGone         = deststate.OutcomeGone
	OutcomeDeadLettered = deststate.OutcomeDeadLettered
	MaxErrorBytes       = deststate.MaxErrorBytes
	MaxResponseBytes    = deststate.MaxResponseBytes
	MaxAttemptsLimit    = deststate.MaxAttemptsLimit
)

var ErrUnknownDestination = deststate.ErrUnknownDestination

// states lists every State, in the order metrics show them.
func states() [3]State { return [3]State{StateActive, StatePaused, StateDisabled} }
