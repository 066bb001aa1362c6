package provider

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider/samples"
)

// The conformance suite: what every registered provider must do, checked
// the same way for each, in the spirit of River's driver test suite. A new
// provider is added to the registry and to conformanceSpecs (and to
// testSecrets), and passes the whole table or is not done. What differs
// between schemes (which headers are required, whether a timestamp is
// signed) is data here, never a separate test.

// conformanceSpec is what the suite needs to know about a scheme.
type conformanceSpec struct {
	eventID, eventType string
	// sigHeader carries the signature; its absence or a malformed value
	// is ErrInvalidSignature.
	sigHeader string
	// required are the other headers Sign sets whose absence fails the
	// delivery, with the sentinel it fails with.
	required map[string]error
	// spellings maps headers Sign sets to another name the provider
	// accepts them under (Svix's svix-* and Standard Webhooks' webhook-*,
	// as the svix library reads them: each header under either name).
	spellings map[string]string
}

// svixSpellings are the Svix scheme's two spellings of its headers.
var svixSpellings = map[string]string{
	SvixIDHeader: WebhookIDHeader, SvixTimestampHeader: WebhookTimestampHeader, SvixSignatureHeader: WebhookSignatureHeader,
	WebhookIDHeader: SvixIDHeader, WebhookTimestampHeader: SvixTimestampHeader, WebhookSignatureHeader: SvixSignatureHeader,
}

var conformanceSpecs = map[string]conformanceSpec{
	"paddle": {"evt_01hv8x2a5b9bf4yc3mj0c0ahqm", "subscription.created", PaddleSignatureHeader, nil, nil},
	"clerk": {"msg_2abcConformance", "user.created", SvixSignatureHeader, map[string]error{
		SvixIDHeader: ErrInvalidSignature, SvixTimestampHeader: ErrInvalidSignature,
	}, svixSpellings},
	"stripe": {"evt_1PqRsTuVwXyZ0123456789ab", "customer.subscription.created", StripeSignatureHeader, nil, nil},
	"github": {"72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request.opened", GitHubSignatureHeader, map[string]error{
		GitHubDeliveryHeader: ErrPayload, GitHubEventHeader: ErrPayload,
	}, nil},
	"shopify": {"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders.create", ShopifyHmacHeader, map[string]error{
		ShopifyWebhookIDHeader: ErrPayload, ShopifyTopicHeader: ErrPayload,
	}, nil},
	StandardWebhooksName: {"msg_2abcConformance", "email.delivered", WebhookSignatureHeader, map[string]error{
		WebhookIDHeader: ErrInvalidSignature, WebhookTimestampHeader: ErrInvalidSignature,
	}, svixSpellings},
	"twilio": {"evt_0123456789abcdef", "sms.status", TwilioSignatureHeader, nil, nil},
}

// conformanceTolerance is the tolerance the suite builds timed providers
// with.
const conformanceTolerance = time.Minute

func TestConformance(t *testing.T) {
	now := time.Unix(1750000000, 0)
	vectors := loadVectors(t)
	for _, name := range Names() {
		spec, ok := conformanceSpecs[name]
		require.True(t, ok, "%s has no conformance spec", name)
		current, old := testSecrets[name][0], testSecrets[name][1]
		build := func(t *testing.T, secrets ...string) Provider {
			t.Helper()
			p, err := New(name, secrets, Options{Tolerance: conformanceTolerance, PublicURL: testPublicURL})
			require.NoError(t, err)
			return p
		}
		deliver := func(t *testing.T, p Provider, at time.Time) samples.Delivery {
			t.Helper()
			d, err := samples.New(p.(Signer), spec.eventID, spec.eventType, nil, at)
			require.NoError(t, err)
			return d
		}
		verify := func(p Provider, d samples.Delivery, at time.Time) (Event, error) {
			return VerifyDelivery(p, Request{Header: d.Header, Body: d.Body, URI: d.Target, Now: at})
		}
		// refused checks a refusal: the sentinel, and no event.
		refused := func(t *testing.T, ev Event, err, want error) {
			t.Helper()
			require.ErrorIs(t, err, want)
			require.Equal(t, Event{}, ev, "a refused delivery yields no event")
		}
		_, timed := build(t, current).(interface{ Tolerance() time.Duration })
		require.Equal(t, timed, timestamped[name] != 0, "Tolerance() exactly for the schemes that sign a timestamp")

		t.Run(name, func(t *testing.T) {
			t.Run("constructor", func(t *testing.T) {
				// No secret, or an empty one, is refused naming the
				// provider and the secret's position; so is a negative
				// tolerance. Tolerance() is the scheme's default when
				// none is given, else the one given.
				label := build(t, current).Name()
				if name == StandardWebhooksName {
					label = "standard-webhooks"
				}
				for _, secrets := range [][]string{nil, {}} {
					p, err := New(name, secrets, Options{PublicURL: testPublicURL})
					require.EqualError(t, err, label+": no secret configured")
					require.Nil(t, p)
				}
				p, err := New(name, []string{current, old, ""}, Options{PublicURL: testPublicURL})
				require.ErrorContains(t, err, label+": secret 2 ")
				require.Nil(t, p)
				if !timed {
					return
				}
				p, err = New(name, []string{current}, Options{Tolerance: -time.Second, PublicURL: testPublicURL})
				require.EqualError(t, err, label+": negative tolerance -1s")
				require.Nil(t, p)
				p, err = New(name, []string{current}, Options{PublicURL: testPublicURL})
				require.NoError(t, err)
				require.Equal(t, timestamped[name], p.(interface{ Tolerance() time.Duration }).Tolerance(), "the default tolerance")
				require.Equal(t, conformanceTolerance, build(t, current, old).(interface{ Tolerance() time.Duration }).Tolerance())
			})
			t.Run("valid", func(t *testing.T) {
				p := build(t, current)
				require.True(t, samples.Has(name) || name == StandardWebhooksName, "samples has a builder for %s", name)
				ev, err := verify(p, deliver(t, p, now), now)
				require.NoError(t, err)
				require.Equal(t, spec.eventID, ev.ID)
				require.Equal(t, spec.eventType, ev.Type)
				require.NotEmpty(t, ev.Signature)
				require.Equal(t, timed, ev.SignedAt.Equal(now))
				require.Equal(t, !timed, ev.SignedAt.IsZero())
			})
			t.Run("entities", func(t *testing.T) {
				// The sample names the entities its own fields say
				// (sampleEntities, the table of docs/providers.md);
				// TestEntitiesOfSamples covers more types.
				p := build(t, current)
				d := deliver(t, p, now)
				ev, err := verify(p, d, now)
				require.NoError(t, err)
				require.Equal(t, sampleEntities(t, name, spec.eventType, d), ev.Entities)
				require.Equal(t, name != StandardWebhooksName, len(ev.Entities) > 0, "every provider but Standard Webhooks names entities")
				checkEntities(t, ev.Entities)
			})
			t.Run("rotation", func(t *testing.T) {
				// Old and new secrets configured: deliveries signed with
				// either verify, whatever the order.
				for _, secrets := range [][]string{{old, current}, {current, old}} {
					p := build(t, secrets...)
					for _, signer := range []string{current, old} {
						_, err := verify(p, deliver(t, build(t, signer), now), now)
						require.NoError(t, err, "secrets %d, signed with the %s one", len(secrets), map[bool]string{true: "current", false: "old"}[signer == current])
					}
				}
			})
			t.Run("tampered body", func(t *testing.T) {
				p := build(t, current)
				d := deliver(t, p, now)
				// Every change of the content fails. (Not every change of
				// the bytes: Twilio signs the decoded form, so "ToZip="
				// re-encoded as "ToZip" verifies, as Twilio's SDKs agree.)
				for _, body := range [][]byte{
					append(append([]byte(nil), d.Body...), ' '),
					d.Body[:len(d.Body)/2],
					flipByte(d.Body, len(d.Body)/2),
					{},
				} {
					tampered := d
					tampered.Body = body
					ev, err := verify(p, tampered, now)
					refused(t, ev, err, ErrInvalidSignature)
				}
			})
			t.Run("wrong secret", func(t *testing.T) {
				ev, err := verify(build(t, old), deliver(t, build(t, current), now), now)
				refused(t, ev, err, ErrInvalidSignature)
			})
			t.Run("missing headers", func(t *testing.T) {
				p := build(t, current)
				d := deliver(t, p, now)
				ev, err := verify(p, samples.Delivery{Header: http.Header{}, Target: d.Target, Body: d.Body}, now)
				refused(t, ev, err, ErrInvalidSignature)
				missing := map[string]error{spec.sigHeader: ErrInvalidSignature}
				for h, want := range spec.required {
					missing[h] = want
				}
				for h, want := range missing {
					require.NotEmpty(t, d.Header.Get(h), "Sign sets %s", h)
					without := d
					without.Header = d.Header.Clone()
					without.Header.Del(h)
					ev, err := verify(p, without, now)
					refused(t, ev, err, want)
				}
			})
			t.Run("header spellings", func(t *testing.T) {
				// Every header Sign sets under one spelling is accepted
				// under the other, all at once or one at a time (mixed);
				// where both are sent, the svix- one is read.
				p := build(t, current)
				d := deliver(t, p, now)
				var renamed []string
				for h := range d.Header {
					if _, ok := spec.spellings[h]; ok {
						renamed = append(renamed, h)
					}
				}
				require.Len(t, renamed, len(spec.spellings)/2, "Sign sets every header that has another spelling")
				rename := func(names ...string) samples.Delivery {
					out := d
					out.Header = d.Header.Clone()
					for _, h := range names {
						out.Header.Del(h)
						out.Header.Set(spec.spellings[h], d.Header.Get(h))
					}
					return out
				}
				sets := [][]string{renamed}
				for _, h := range renamed {
					sets = append(sets, []string{h})
				}
				for _, names := range sets {
					ev, err := verify(p, rename(names...), now)
					require.NoError(t, err, "renamed %v", names)
					require.Equal(t, spec.eventID, ev.ID)
				}
				for _, h := range renamed {
					without := rename(renamed...)
					without.Header.Del(spec.spellings[h])
					ev, err := verify(p, without, now)
					refused(t, ev, err, ErrInvalidSignature)
				}
				if len(renamed) > 0 {
					// Both spellings sent: the svix- one is read, and it
					// alone decides.
					both := d
					both.Header = d.Header.Clone()
					for _, h := range renamed {
						other := spec.spellings[h]
						both.Header.Set(other, d.Header.Get(h))
					}
					_, err := verify(p, both, now)
					require.NoError(t, err)
					bad := both
					bad.Header = both.Header.Clone()
					bad.Header.Set(WebhookSignatureHeader, "v1,"+strings.Repeat("A", 43)+"=")
					_, err = verify(p, bad, now)
					require.NoError(t, err, "a wrong webhook-signature beside a good svix-signature is not read")
					bad.Header = both.Header.Clone()
					bad.Header.Set(SvixSignatureHeader, "v1,"+strings.Repeat("A", 43)+"=")
					ev, err := verify(p, bad, now)
					refused(t, ev, err, ErrInvalidSignature)
				}
			})
			t.Run("malformed signature", func(t *testing.T) {
				p := build(t, current)
				d := deliver(t, p, now)
				sig := d.Header.Get(spec.sigHeader)
				for _, bad := range []string{"x", " ", sig[:len(sig)/2], "\x00" + sig} {
					malformed := d
					malformed.Header = d.Header.Clone()
					malformed.Header.Set(spec.sigHeader, bad)
					ev, err := verify(p, malformed, now)
					refused(t, ev, err, ErrInvalidSignature)
				}
			})
			t.Run("stale and future", func(t *testing.T) {
				// With the suite's tolerance, and with the scheme's
				// default (the one built without Options.Tolerance).
				def, err := New(name, []string{current}, Options{PublicURL: testPublicURL})
				require.NoError(t, err)
				for p, tol := range map[Provider]time.Duration{build(t, current): conformanceTolerance, def: timestamped[name]} {
					d := deliver(t, p, now)
					for _, off := range []time.Duration{-tol, tol} {
						_, err := verify(p, d, now.Add(-off))
						require.NoError(t, err, "signed %v from now: at the tolerance passes", off)
					}
					for _, off := range []time.Duration{-tol - time.Second, tol + time.Second, -tol - time.Nanosecond, tol + time.Nanosecond, -24 * time.Hour, 24 * time.Hour} {
						ev, err := verify(p, d, now.Add(-off))
						if !timed {
							// No signed time: replays are caught by
							// deduplication on the event id alone.
							require.NoError(t, err)
							continue
						}
						refused(t, ev, err, ErrTimestamp)
					}
				}
			})
			t.Run("official vectors", func(t *testing.T) {
				valid, invalid := 0, 0
				for _, v := range vectors {
					if v.Provider != name {
						continue
					}
					at := time.Unix(1000000000, 0)
					if v.NowUnix != nil {
						at = time.Unix(*v.NowUnix, 0)
					}
					_, _, err := verifyVector(t, v, at)
					authentic := err == nil || errors.Is(err, ErrPayload)
					require.Equal(t, v.ExpectedValid, authentic, "%s: err = %v", v.Name, err)
					if v.ExpectedValid {
						valid++
					} else {
						invalid++
					}
				}
				require.Positive(t, valid, "%s has an authentic vector in testdata", name)
				require.Positive(t, invalid, "%s has a forged vector in testdata", name)
			})
		})
	}
}

// flipByte returns a copy of b with the byte at i changed.
func flipByte(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x01
	return out
}
