// Package samples builds realistic webhook deliveries, as each provider
// would send them: the bodies `hub send`, the benchmarks and the tests
// post to the hub, signed by the provider (provider.Signer). It lives
// apart from package provider, which verifies deliveries and does not
// need to know what a realistic subscription or pull request looks like.
//
// Every builder is deterministic: the ids it derives (sub_…, ctm_…, SIDs)
// depend only on the event id, and times only on now. The package does
// not import package provider, so that provider's own tests can use it.
package samples
