package provider

import (
	"crypto/sha256"
	"strings"
)

// derive returns n characters of alphabet drawn deterministically from
// seed. It is the samples package's, for the ids Sign sets in headers
// (Shopify's X-Shopify-Event-Id) to match the samples'.
func derive(seed string, n int, alphabet string) string {
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

// uuidLike derives a lowercase RFC 4122-shaped (version 4) identifier from
// seed, deterministically.
func uuidLike(seed string) string {
	h := derive("uuid/"+seed, 32, "0123456789abcdef")
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}
