package provider

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	require.Equal(t, []string{"clerk", "paddle"}, Names())
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		wantErr error // nil: any error is fine when wantFail
		wantOK  bool
	}{
		{"paddle", []string{paddleSecret}, nil, true},
		{"clerk", []string{clerkSecret}, nil, true},
		{"stripe", []string{"whsec_x"}, ErrUnknownProvider, false},
		{"Paddle", []string{paddleSecret}, ErrUnknownProvider, false},
		{"", nil, ErrUnknownProvider, false},
		{"paddle", nil, nil, false},
		{"clerk", []string{"whsec_!"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.name, tt.secrets, time.Minute)
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
			require.Equal(t, time.Minute, p.(interface{ Tolerance() time.Duration }).Tolerance())
			_, ok := p.(Sender)
			require.True(t, ok, "every built-in provider is a Sender")
		})
	}
}

// TestRoundTrip signs a sample of every registered provider and verifies
// it through the Provider interface.
func TestRoundTrip(t *testing.T) {
	secrets := map[string]string{"paddle": paddleSecret, "clerk": clerkSecret}
	now := time.Unix(1750000000, 0)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, err := New(name, []string{secrets[name]}, 0)
			require.NoError(t, err)
			s := p.(Sender)
			body, err := s.Sample("evt_roundtrip", "subscription.created", nil, now)
			require.NoError(t, err)
			h, err := s.Sign("evt_roundtrip", body, now)
			require.NoError(t, err)
			ev, err := p.Verify(h, body, now)
			require.NoError(t, err)
			require.Equal(t, "evt_roundtrip", ev.ID)
			require.Equal(t, "subscription.created", ev.Type)
			require.NotEmpty(t, ev.Signature)
			require.True(t, ev.SignedAt.Equal(now))
		})
	}
}

// TestConcurrentVerify runs one provider's Verify from many goroutines, for
// the race detector: the pooled HMAC states must never be shared.
func TestConcurrentVerify(t *testing.T) {
	now := time.Unix(1750000000, 0)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			secret := map[string]string{"paddle": paddleSecret, "clerk": clerkSecret}[name]
			p, err := New(name, []string{secret}, 0)
			require.NoError(t, err)
			s := p.(Sender)
			var wg sync.WaitGroup
			errs := make(chan error, 8*50)
			for g := range 8 {
				wg.Go(func() {
					for i := range 50 {
						id := "evt_" + string(rune('a'+g)) + "_" + string(rune('a'+i%26))
						body, err := s.Sample(id, "user.created", nil, now)
						if err != nil {
							errs <- err
							return
						}
						h, err := s.Sign(id, body, now)
						if err != nil {
							errs <- err
							return
						}
						ev, err := p.Verify(h, body, now)
						if err == nil && ev.ID != id {
							err = errors.New("got id " + ev.ID + ", want " + id)
						}
						if err != nil {
							errs <- err
						}
						// A tampered copy must fail even while others verify.
						if _, err := p.Verify(h, append(body[:len(body):len(body)], ' '), now); !errors.Is(err, ErrInvalidSignature) {
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
