package destination

import "github.com/hookhub/hookhub/subscribers/destination/deststate"

// The destination's tables are read and written through deststate, which
// hub/ops imports without this runtime; the runtime names its types and
// constants as before.
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

// ErrUnknownDestination is deststate.ErrUnknownDestination.
var ErrUnknownDestination = deststate.ErrUnknownDestination

// states lists every State, in the order metrics show them.
func states() [3]State { return [3]State{StateActive, StatePaused, StateDisabled} }
