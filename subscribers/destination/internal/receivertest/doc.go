// Package receivertest runs HTTP receivers of destination deliveries for
// tests: Node, a Node process (testdata/receiver/receiver.mjs of
// subscribers/destination) verifying each delivery with the official npm
// packages standardwebhooks and svix, and Go, an in-process receiver
// verifying with Verify (the official libraries' rule, written apart from
// the destination's signer) that also offers fault knobs (Hang,
// EndlessBody, RedirectLoop, Handler).
//
// Both share one contract (Receiver): they verify with the first secret
// they are given only, answer 401 to a delivery that does not verify,
// count attempts per webhook-id for Control.FailFirst, answer a webhook-id
// already answered 2xx with 200 flagged Duplicate, and report every
// request (Received) and the number of unique ids accepted (Accepted).
//
// Node needs node on PATH and the packages installed with
// `npm ci --prefix subscribers/destination/testdata/receiver`; without them
// it skips the test, unless HOOKHUB_REQUIRE_SDK=1 (CI) makes it fail.
//
// It is test support of the subscriber side: like the destination package,
// it imports nothing from hub/.
package receivertest
