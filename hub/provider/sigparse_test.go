package provider

// The signature header parsers below are test-only entry points into the
// production parsing code (bodyHMAC.decode, decodeB64MAC, timedHeader.parse)
// that Verify uses; the fuzz, bench and table tests call them directly.

// parseGitHubSignature decodes an X-Hub-Signature-256 value, exactly
// "sha256=" and 64 hex digits (either case), into dst.
func parseGitHubSignature(dst *[macSize]byte, header string) bool {
	return (&bodyHMAC{hexPrefix: githubSigPrefix}).decode(dst, header)
}

// parsePaddleSignature parses a Paddle-Signature header value:
// ';'-separated key=value parts (timedHeader.parse). It returns the ts
// value exactly as written and every well-formed h1 decoded, appended to
// dst; unknown keys and malformed h1 entries are skipped.
func parsePaddleSignature(header string, dst [][macSize]byte) (ts string, sigs [][macSize]byte, err error) {
	ts, _, sigs, err = paddleLayout.parse(header, dst)
	return ts, sigs, err
}

// parseShopifyHmac decodes an X-Shopify-Hmac-Sha256 value, the canonical
// padded standard base64 of 32 bytes, into dst. Hex, URL-safe or unpadded
// encodings fail.
func parseShopifyHmac(dst *[macSize]byte, header string) bool {
	return decodeB64MAC(dst, header)
}

// parseStripeSignature parses a Stripe-Signature header value:
// ','-separated key=value pairs (timedHeader.parse). It returns t and
// every well-formed v1 decoded, appended to dst; v0, unknown keys and
// malformed v1 entries are skipped.
func parseStripeSignature(header string, dst [][macSize]byte) (unix int64, sigs [][macSize]byte, err error) {
	_, unix, sigs, err = stripeLayout.parse(header, dst)
	return unix, sigs, err
}
