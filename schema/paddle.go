package schema

import (
	"encoding/json"
	"time"
)

// Paddle event types the example subscribers handle. Paddle spells
// "canceled" with one l.
const (
	PaddleSubscriptionCreated  = "subscription.created"
	PaddleSubscriptionUpdated  = "subscription.updated"
	PaddleSubscriptionCanceled = "subscription.canceled"
)

// PaddleEvent is the envelope of a Paddle Billing notification.
type PaddleEvent struct {
	EventID        string          `json:"event_id"`
	EventType      string          `json:"event_type"`
	OccurredAt     time.Time       `json:"occurred_at"`
	NotificationID string          `json:"notification_id"`
	Data           json.RawMessage `json:"data"`
}

// PaddleSubscription is the data of Paddle's subscription.* events, reduced
// to the fields the example subscribers use.
type PaddleSubscription struct {
	ID         string                 `json:"id"`
	Status     string                 `json:"status"`
	CustomerID string                 `json:"customer_id"`
	CustomData PaddleSubscriptionData `json:"custom_data"`
}

// PaddleSubscriptionData is the custom_data the example services read.
// Paddle passes custom_data through unchanged from checkout.
type PaddleSubscriptionData struct {
	Credits *int64 `json:"credits,omitempty"`
	Email   string `json:"email,omitempty"`
	Plan    string `json:"plan,omitempty"`
}
