package provider

import (
	"net/http"
	"testing"
	"time"
)

// BenchmarkVerify measures Verify on a realistic signed delivery of about
// 1 KB: with one secret, and with two where only the second matches (a
// rotation whose new secret the sender does not use yet).
func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1750000000, 0)
	type setup struct {
		name      string
		newSigner func(secrets []string) (Provider, error)
		secret    string
		other     string
		eventID   string
		eventType string
	}
	setups := []setup{
		{"paddle", func(s []string) (Provider, error) { return NewPaddle(s, 0) }, paddleSecret, paddleOldSecret, "evt_01hv8x2a5b9bf4yc3mj0c0ahqm", "subscription.created"},
		{"clerk", func(s []string) (Provider, error) { return NewClerk(s, 0) }, clerkSecret, clerkOldSecret, clerkMsgID, "user.created"},
	}
	for _, s := range setups {
		signer, err := s.newSigner([]string{s.secret})
		if err != nil {
			b.Fatal(err)
		}
		body, err := signer.(Sender).Sample(s.eventID, s.eventType, nil, now)
		if err != nil {
			b.Fatal(err)
		}
		h, err := signer.(Sender).Sign(s.eventID, body, now)
		if err != nil {
			b.Fatal(err)
		}
		forged := h.Clone()
		if s.name == "paddle" {
			forged.Set("Paddle-Signature", "ts=1750000000;h1="+refPaddleH1(s.other, "1750000000", body))
		} else {
			forged.Set("Svix-Signature", "v1,"+refSvixV1(s.other, s.eventID, "1750000000", body))
		}
		cases := []struct {
			name    string
			secrets []string
			header  http.Header
			wantErr bool
		}{
			{"1-secret", []string{s.secret}, h, false},
			{"2-secrets-second-matches", []string{s.other, s.secret}, h, false},
			{"forged", []string{s.secret}, forged, true},
		}
		for _, c := range cases {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				p, err := s.newSigner(c.secrets)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Verify(c.header, body, now); (err != nil) != c.wantErr {
					b.Fatalf("Verify: %v", err)
				}
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					_, _ = p.Verify(c.header, body, now)
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
}
