// Package derive makes identifiers that look real but depend only on their
// seed: the sample deliveries' ids (hub/provider/samples) and the ids a
// provider's Sign puts in headers (Shopify's X-Shopify-Event-Id), which
// must match the samples'.
package derive

import (
	"crypto/sha256"
	"strings"
)

// String returns n characters of alphabet drawn deterministically from
// seed.
func String(seed string, n int, alphabet string) string {
	var b strings.Builder
	b.Grow(n)
	block := sha256.Sum256([]byte(seed))
	for i, used := 0, 0; i < n; i++ {
		if used == len(block) {
			block = sha256.Sum256(block[:])
			used = 0
		}
		b.WriteByte(alphabet[int(block[used])%len(alphabet)])
		used++
	}
	return b.String()
}

// UUID derives a lowercase RFC 4122-shaped (version 4) identifier from
// seed.
func UUID(seed string) string {
	h := String("uuid/"+seed, 32, "0123456789abcdef")
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}
