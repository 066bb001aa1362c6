package samples

import "github.com/hookhub/hookhub/hub/provider/internal/derive"

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// sampleEmail returns a deterministic example.com address for seed.
func sampleEmail(seed string) string {
	return "ada.lovelace+" + derive.String("email/"+seed, 8, "0123456789abcdefghijklmnopqrstuvwxyz") + "@example.com"
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
