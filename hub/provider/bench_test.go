package provider

import (
	"net/url"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// BenchmarkVerify measures verification of a realistic signed delivery
// (Sample's body, about 1 KB): with one secret, with two where only the
// second matches (a rotation whose new secret the sender does not use
// yet), and forged (signed with another secret). It verifies the way the
// server does: VerifyDelivery.
func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1750000000, 0)
	setups := []struct {
		name, eventID, eventType string
	}{
		{"paddle", "evt_01hv8x2a5b9bf4yc3mj0c0ahqm", "subscription.created"},
		{"clerk", clerkMsgID, "user.created"},
		{"stripe", "evt_1PqRsTuVwXyZ0123456789ab", "customer.subscription.created"},
		{"standard-webhooks", standardMsgID, "email.clicked"},
		{"github", githubDelivery, "pull_request.opened"},
		{"shopify", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders.create"},
		{"twilio", "evt_0123456789abcdef", "call.completed"},
	}
	for _, s := range setups {
		secret, other := testSecrets[s.name][0], testSecrets[s.name][1]
		signer := newTestProvider(b, s.name, secret)
		d, err := sampleDelivery(signer, s.eventID, s.eventType, now)
		if err != nil {
			b.Fatal(err)
		}
		forged, err := signDelivery(newTestProvider(b, s.name, other), s.eventID, s.eventType, d.body, now)
		if err != nil {
			b.Fatal(err)
		}
		cases := []struct {
			name    string
			secrets []string
			d       delivery
			wantErr bool
		}{
			{"1-secret", []string{secret}, d, false},
			{"2-secrets-second-matches", []string{other, secret}, d, false},
			{"forged", []string{secret}, forged, true},
		}
		for _, c := range cases {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				p := newTestProvider(b, s.name, c.secrets...)
				if _, err := verifyDelivery(p, c.d, now); (err != nil) != c.wantErr {
					b.Fatalf("Verify: %v", err)
				}
				b.SetBytes(int64(len(c.d.body)))
				b.ReportAllocs()
				for b.Loop() {
					_, _ = verifyDelivery(p, c.d, now)
				}
			})
		}
	}
}

// BenchmarkParse measures the header parsers alone.
func BenchmarkParse(b *testing.B) {
	b.Run("paddle", func(b *testing.B) {
		header := "ts=1750000000;h1=" + refPaddleH1(paddleSecret, "1750000000", nil) + ";h1=" + refPaddleH1(paddleOldSecret, "1750000000", nil)
		b.ReportAllocs()
		for b.Loop() {
			var buf [4][macSize]byte
			if _, _, err := parsePaddleSignature(header, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("svix", func(b *testing.B) {
		header := "v1," + refSvixV1(clerkSecret, clerkMsgID, "1750000000", nil) + " v1," + refSvixV1(clerkOldSecret, clerkMsgID, "1750000000", nil)
		b.ReportAllocs()
		for b.Loop() {
			var buf [4][macSize]byte
			if len(parseSvixSignatures(header, buf[:0])) != 2 {
				b.Fatal("want 2 signatures")
			}
		}
	})
	b.Run("stripe", func(b *testing.B) {
		header := "t=1750000000,v1=" + refStripeV1(stripeSecret, "1750000000", nil) + ",v1=" + refStripeV1(stripeOldSecret, "1750000000", nil) + ",v0=" + refStripeV1("x", "1", nil)
		b.ReportAllocs()
		for b.Loop() {
			var buf [4][macSize]byte
			if _, sigs, err := parseStripeSignature(header, buf[:0]); err != nil || len(sigs) != 2 {
				b.Fatal(err)
			}
		}
	})
	b.Run("github", func(b *testing.B) {
		header := githubSig(githubSecret, nil)
		b.ReportAllocs()
		for b.Loop() {
			var sig [macSize]byte
			if !parseGitHubSignature(&sig, header) {
				b.Fatal("malformed")
			}
		}
	})
	b.Run("shopify", func(b *testing.B) {
		header := shopifySig(shopifySecret, nil)
		b.ReportAllocs()
		for b.Loop() {
			var sig [macSize]byte
			if !parseShopifyHmac(&sig, header) {
				b.Fatal("malformed")
			}
		}
	})
	b.Run("twilio", func(b *testing.B) {
		header := refTwilio(twilioSecret, testPublicURL, nil, false)
		b.ReportAllocs()
		for b.Loop() {
			var sig [macSize]byte
			alg, ok := parseTwilioSettings("")
			if !ok {
				b.Fatal("settings")
			}
			if _, ok := parseTwilioSignature(&sig, header, alg); !ok {
				b.Fatal("malformed")
			}
		}
	})
}

// BenchmarkEntities compares, side by side, a realistic delivery's
// VerifyDelivery (which names its entities) with the extraction alone on
// the same verified body: VerifyDelivery without extraction costs the
// difference.
func BenchmarkEntities(b *testing.B) {
	now := time.Unix(1750000000, 0)
	var twilioForm url.Values
	setups := []struct {
		name, eventType string
		extract         func(d delivery) []hub.Entity
	}{
		{"stripe", "customer.subscription.created", func(d delivery) []hub.Entity { return stripeEntities(d.body) }},
		{"paddle", "subscription.created", func(d delivery) []hub.Entity { return paddleEntities("subscription.created", d.body) }},
		{"clerk", "session.created", func(d delivery) []hub.Entity { return clerkEntities("session.created", d.body) }},
		{"github", "pull_request.opened", func(d delivery) []hub.Entity { return githubEntities("pull_request", d.body) }},
		{"shopify", "orders.create", func(d delivery) []hub.Entity { return shopifyEntities("orders/create", d.body) }},
		{"twilio", "message.delivered", func(d delivery) []hub.Entity {
			// Verify parses the form anyway; only the look-ups are
			// extraction's.
			return twilioEntities(twilioForm)
		}},
	}
	for _, s := range setups {
		p := newTestProvider(b, s.name, testSecrets[s.name][0])
		d, err := sampleDelivery(p, "evt_bench_1", s.eventType, now)
		if err != nil {
			b.Fatal(err)
		}
		if s.name == "twilio" {
			if twilioForm, err = url.ParseQuery(string(d.body)); err != nil {
				b.Fatal(err)
			}
		}
		ev, err := verifyDelivery(p, d, now)
		if err != nil || len(ev.Entities) == 0 {
			b.Fatalf("VerifyDelivery: %v, %v", ev.Entities, err)
		}
		b.Run(s.name+"/verify-with-entities", func(b *testing.B) {
			b.SetBytes(int64(len(d.body)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = verifyDelivery(p, d, now)
			}
		})
		b.Run(s.name+"/entities-alone", func(b *testing.B) {
			b.SetBytes(int64(len(d.body)))
			b.ReportAllocs()
			for b.Loop() {
				_ = s.extract(d)
			}
		})
	}
}
