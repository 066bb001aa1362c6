// Package jsontext reads the shape of JSON text without decoding it.
package jsontext

// FirstNonSpace returns the first byte of b that is not JSON whitespace,
// or 0: '{' for an object, '[' for an array.
func FirstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}
