package schema

import "encoding/json"

// Clerk event types the example subscribers handle.
const (
	ClerkUserCreated = "user.created"
)

// ClerkEvent is the envelope of a Clerk webhook. Clerk's body carries no
// event id: the id is the svix-id header, which the hub puts in
// Hub-Event-Id. Timestamp is in milliseconds since the Unix epoch.
type ClerkEvent struct {
	Type       string          `json:"type"`
	Object     string          `json:"object"`
	Timestamp  int64           `json:"timestamp"`
	InstanceID string          `json:"instance_id"`
	Data       json.RawMessage `json:"data"`
}

// ClerkUser is the data of Clerk's user.* events, reduced to the fields the
// example subscribers use.
type ClerkUser struct {
	ID                    string              `json:"id"`
	FirstName             string              `json:"first_name"`
	LastName              string              `json:"last_name"`
	PrimaryEmailAddressID string              `json:"primary_email_address_id"`
	EmailAddresses        []ClerkEmailAddress `json:"email_addresses"`
}

// ClerkEmailAddress is one of a Clerk user's addresses.
type ClerkEmailAddress struct {
	ID           string `json:"id"`
	EmailAddress string `json:"email_address"`
}

// PrimaryEmail returns the address whose id is the user's primary one, or ""
// when the user has none.
func (u ClerkUser) PrimaryEmail() string {
	for _, a := range u.EmailAddresses {
		if a.ID == u.PrimaryEmailAddressID {
			return a.EmailAddress
		}
	}
	return ""
}
