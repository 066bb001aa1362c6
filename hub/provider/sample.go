package provider

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
