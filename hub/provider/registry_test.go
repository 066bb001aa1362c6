package provider

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	require.Equal(t, []string{"clerk", "github", "paddle", "shopify", "standard-webhooks", "stripe", "twilio"}, Names())
	for _, name := range Names() {
		require.True(t, ValidName(name), name)
		_, ok := testSecrets[name]
		require.True(t, ok, "no test secret for %s", name)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		wantErr error // nil: any error is fine when !wantOK
		wantOK  bool
		wantTol time.Duration // 0: the scheme has no timestamp
	}{
		{"paddle", []string{paddleSecret}, nil, true, time.Minute},
		{"clerk", []string{clerkSecret}, nil, true, time.Minute},
		{"stripe", []string{stripeSecret}, nil, true, time.Minute},
		{"standard-webhooks", []string{standardSecret}, nil, true, time.Minute},
		{"github", []string{githubSecret}, nil, true, 0},
		{"shopify", []string{shopifySecret}, nil, true, 0},
		{"twilio", []string{twilioSecret}, nil, false, 0}, // needs a public URL
		{"resend", []string{standardSecret}, ErrUnknownProvider, false, 0},
		{"Paddle", []string{paddleSecret}, ErrUnknownProvider, false, 0},
		{"", nil, ErrUnknownProvider, false, 0},
		{"paddle", nil, nil, false, 0},
		{"clerk", []string{"whsec_!"}, nil, false, 0},
		{"stripe", []string{""}, nil, false, 0},
		{"github", nil, nil, false, 0},
		{"shopify", []string{shopifySecret, ""}, nil, false, 0},
		{"standard-webhooks", []string{"whsec_"}, nil, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.name, tt.secrets, Options{Tolerance: time.Minute})
			if !tt.wantOK {
				require.Error(t, err)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
				}
				require.Nil(t, p, "a failed New returns a nil interface, not a typed nil")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.name, p.Name())
			tp, timed := p.(interface{ Tolerance() time.Duration })
			require.Equal(t, tt.wantTol != 0, timed)
			if timed {
				require.Equal(t, tt.wantTol, tp.Tolerance())
			}
			_, ok := p.(Signer)
			require.True(t, ok, "every built-in provider is a Signer")
		})
	}
}

func TestNewOptions(t *testing.T) {
	p, err := New("twilio", []string{twilioSecret}, Options{PublicURL: testPublicURL + "/"})
	require.NoError(t, err)
	require.Equal(t, "twilio", p.Name())
	require.Equal(t, testPublicURL, p.(*Twilio).PublicURL())

	p, err = New("twilio", []string{twilioSecret}, Options{})
	require.EqualError(t, err, "twilio: no public URL configured: set it to the base URL Twilio calls, e.g. https://hub.example.com")
	require.Nil(t, p)

	p, err = New("stripe", []string{stripeSecret}, Options{Tolerance: 2 * time.Minute, PublicURL: "ignored"})
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, p.(*Stripe).Tolerance())

	_, err = New("nope", []string{"x"}, Options{})
	require.ErrorIs(t, err, ErrUnknownProvider)
}

func TestNewStandard(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		wantErr string
	}{
		{"resend", []string{standardSecret}, ""},
		{"acme-2", []string{standardSecret, standardOldSecret}, ""},
		{"my_app", []string{standardSecret}, ""},
		{"standard-webhooks", []string{standardSecret}, ""},
		{"stripe", []string{standardSecret}, `standard webhooks: "stripe" is the name of a built-in provider`},
		{"clerk", []string{standardSecret}, `standard webhooks: "clerk" is the name of a built-in provider`},
		{"Resend", []string{standardSecret}, `standard webhooks: invalid provider name "Resend": want 1 to 32 of [a-z0-9_-], starting with a letter or digit`},
		{"a.b", []string{standardSecret}, `standard webhooks: invalid provider name "a.b": want 1 to 32 of [a-z0-9_-], starting with a letter or digit`},
		{"-x", []string{standardSecret}, `standard webhooks: invalid provider name "-x": want 1 to 32 of [a-z0-9_-], starting with a letter or digit`},
		{"resend", nil, "resend: no secret configured"},
		{"resend", []string{"whsec_not!base64"}, "resend: secret 0 is not whsec_ followed by standard base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(StandardWebhooksName, tt.secrets, Options{Name: tt.name})
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Nil(t, p)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.name, p.Name())
			require.Equal(t, 5*time.Minute, p.(*StandardWebhooks).Tolerance())
		})
	}
	// Without a name, a Standard Webhooks provider has its registry name.
	p, err := New(StandardWebhooksName, []string{standardSecret}, Options{})
	require.NoError(t, err)
	require.Equal(t, StandardWebhooksName, p.Name())
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"resend": true, "a": true, "0x": true, "acme_2-b": true, "abcdefghijklmnopqrstuvwxyz012345": true,
		"": false, "abcdefghijklmnopqrstuvwxyz0123456": false, "-a": false, "_a": false, "A": false,
		"a.b": false, "a b": false, "a/b": false, "a*": false, "a>": false, "é": false,
	} {
		require.Equal(t, want, ValidName(name), "%q", name)
	}
}

// TestRoundTrip signs a sample of every registered provider and verifies
// it through the Provider interface, as `hub send` and the server do.
func TestRoundTrip(t *testing.T) {
	now := time.Unix(1750000000, 0)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p := newTestProvider(t, name, testSecrets[name][0])
			d, err := sampleDelivery(p, "evt_roundtrip", "subscription.created", now)
			require.NoError(t, err)
			ev, err := verifyDelivery(p, d, now)
			require.NoError(t, err)
			require.Equal(t, "evt_roundtrip", ev.ID)
			require.Equal(t, "subscription.created", ev.Type)
			require.NotEmpty(t, ev.Signature)
			_, timed := timestamped[name]
			require.Equal(t, timed, ev.SignedAt.Equal(now))
			require.Equal(t, !timed, ev.SignedAt.IsZero())

			// The archive's payload view is JSON.
			payload := d.body
			if pl, ok := p.(Payloader); ok {
				payload, err = pl.PayloadJSON(d.body)
				require.NoError(t, err)
			}
			require.True(t, json.Valid(payload), "payload %q", payload)
		})
	}
}

// TestConcurrentVerify runs one provider's Verify from many goroutines, for
// the race detector: the pooled HMAC states must never be shared.
func TestConcurrentVerify(t *testing.T) {
	now := time.Unix(1750000000, 0)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p := newTestProvider(t, name, testSecrets[name][1], testSecrets[name][0])
			var wg sync.WaitGroup
			errs := make(chan error, 8*50)
			for g := range 8 {
				wg.Go(func() {
					for i := range 50 {
						id := "evt_" + string(rune('a'+g)) + "_" + string(rune('a'+i%26))
						d, err := sampleDelivery(p, id, "user.created", now)
						if err != nil {
							errs <- err
							return
						}
						ev, err := verifyDelivery(p, d, now)
						if err == nil && ev.ID != id {
							err = errors.New("got id " + ev.ID + ", want " + id)
						}
						if err != nil {
							errs <- err
						}
						// A tampered copy must fail even while others verify.
						d.body = append(d.body[:len(d.body):len(d.body)], ' ')
						if _, err := verifyDelivery(p, d, now); !errors.Is(err, ErrInvalidSignature) {
							errs <- errors.New("tampered body verified")
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}
