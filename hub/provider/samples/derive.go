package samples

import (
	"crypto/sha256"
	"strings"
)

// derive returns n characters of alphabet drawn deterministically from
// seed, for sample ids that look real but depend only on their inputs.
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

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// sampleEmail returns a deterministic example.com address for seed.
func sampleEmail(seed string) string {
	return "ada.lovelace+" + derive("email/"+seed, 8, "0123456789abcdefghijklmnopqrstuvwxyz") + "@example.com"
}

// entityPrefix returns a short id prefix for an entity name: its first
// three letters, or "obj".
func entityPrefix(entity string) string {
	if len(entity) < 3 {
		return "obj"
	}
	for i := 0; i < 3; i++ {
		if c := entity[i]; c < 'a' || c > 'z' {
			return "obj"
		}
	}
	return entity[:3]
}

// uuidLike derives a lowercase RFC 4122-shaped (version 4) identifier from
// seed, deterministically.
func uuidLike(seed string) string {
	h := derive("uuid/"+seed, 32, "0123456789abcdef")
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

// firstNonSpace returns the first byte of b that is not JSON whitespace,
// or 0.
func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}
