package provider

import (
	"cmp"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// The form parameters of Twilio's signed string, in the order Twilio's
// SDKs sort them.

// twilioFirstNameOK reports whether the form's first parameter name in
// byte order starts with an upper-case ASCII letter, as every Twilio
// parameter name does (AccountSid, ApiVersion, Body, CallSid, …). An
// empty form has none, and passes.
func twilioFirstNameOK(form url.Values) bool {
	first, seen := "", false
	for name := range form {
		if !seen || name < first {
			first, seen = name, true
		}
	}
	return !seen || (first != "" && first[0] >= 'A' && first[0] <= 'Z')
}

// appendTwilioParams appends to dst every form parameter's name and
// value, as the official helper (twilio-node's getExpectedTwilioSignature,
// the validateRequest behind Twilio's docs) builds them: names sorted, and
// for a repeated name each distinct value once, the distinct values
// sorted, each preceded by the name. So "Tag=a1&Tag=a1" signs as
// "Taga1", and "Tag=b&Tag=a&Tag=b" as "TagaTagb". Sorting is JavaScript's
// default, by UTF-16 code units (compareUTF16), which is byte order
// except between characters above U+FFFF and those from U+E000 to U+FFFF.
// twilio-python agrees but for that order (it sorts by code point);
// twilio-go signs only the first value, which would let unsigned values in.
func appendTwilioParams(dst []byte, form url.Values) []byte {
	names := slices.SortedFunc(maps.Keys(form), compareUTF16)
	for _, name := range names {
		values := form[name]
		if len(values) > 1 {
			values = slices.Clone(values)
			slices.SortFunc(values, compareUTF16)
			values = slices.Compact(values)
		}
		for _, v := range values {
			dst = append(dst, name...)
			dst = append(dst, v...)
		}
	}
	return dst
}

// compareUTF16 orders a and b as JavaScript's default sort orders the
// strings they decode to: by UTF-16 code units. That is byte order, except
// that a character above U+FFFF (a surrogate pair, 0xD800–0xDFFF) sorts
// before one from U+E000 to U+FFFF. A byte that is not UTF-8 reads as
// U+FFFD, as JavaScript decodes it; strings equal so are then ordered by
// their bytes, so that only equal strings compare equal.
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	// a[:i] == b[:i]: decode both from a byte that starts a character (or
	// ends the string) in both, so that no character of the prefix
	// straddles it and both prefixes decode alike.
	for i > 0 && ((i < len(a) && !utf8.RuneStart(a[i])) || (i < len(b) && !utf8.RuneStart(b[i]))) {
		i--
	}
	for ra, rb := a[i:], b[i:]; ra != "" && rb != ""; {
		ca, na := utf8.DecodeRuneInString(ra)
		cb, nb := utf8.DecodeRuneInString(rb)
		if c := cmp.Compare(utf16Key(ca), utf16Key(cb)); c != 0 {
			return c
		}
		ra, rb = ra[na:], rb[nb:]
		if ra == "" || rb == "" {
			if c := cmp.Compare(len(ra), len(rb)); c != 0 {
				return c
			}
		}
	}
	return strings.Compare(a, b)
}

// utf16Key maps r to a key that orders like r's UTF-16 encoding: a
// character above U+FFFF (a surrogate pair, whose units 0xD800–0xDFFF
// order like the code point) sorts after those below U+D800 and before
// those from U+E000 to U+FFFF.
func utf16Key(r rune) rune {
	switch {
	case r > 0xFFFF:
		return 0xD800 + (r - 0x10000) // 0xD800 to 0x10D7FF
	case r >= 0xE000:
		return r + 0x100000 // above 0x10E000
	}
	return r
}
