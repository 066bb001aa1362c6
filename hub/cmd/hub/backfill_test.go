package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/store"
)

// `hub backfill` as an operator runs it: a wrong key names its variable
// and exits 1, mistakes in flags exit 2, and a run prints its counts.
func TestBackfillCommand(t *testing.T) {
	const key = "sk_test_cli0000000000000000000000key"
	_, fake := stripeBackfill(t, key, "")
	p, err := provider.New("stripe", []string{"whsec_cli"}, provider.Options{})
	require.NoError(t, err)
	for i := range 3 {
		body, err := samples.Body(p.(provider.Signer).Name(), fmt.Sprintf("evt_cli_%d", i), "invoice.paid", nil, time.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.NoError(t, fake.Add(body))
	}

	run1 := func(args ...string) (int, string, string) { return runCmd(t, args...) }
	code, _, stderr := run1("backfill", "--provider", "stripe")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no API credentials for stripe: set HUB_STRIPE_API_KEY")

	t.Setenv("HUB_STRIPE_API_KEY", "sk_test_wrong000000000000")
	code, stdout, stderr := run1("backfill", "--provider", "stripe", "--json")
	require.Equal(t, 1, code, stdout)
	require.Contains(t, stderr, "check HUB_STRIPE_API_KEY")
	require.NotContains(t, stderr, "sk_test_wrong000000000000")

	t.Setenv("HUB_STRIPE_API_KEY", key)
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"backfill"}, "--provider is required"},
		{[]string{"backfill", "--provider", "clerk"}, `--provider: "clerk" has no backfill`},
		{[]string{"backfill", "--provider", "stripe", "--rate", "fast"}, "--rate: must be"},
		{[]string{"backfill", "--provider", "stripe", "--rate", "-1/s"}, "--rate: must be"},
		{[]string{"backfill", "--provider", "stripe", "--since", "yesterday"}, "--since"},
		{[]string{"backfill", "--provider", "stripe", "--since", "1h", "--until", "2h"}, "--until must be after --since"},
		{[]string{"backfill", "--provider", "stripe", "--dry-run", "--restart"}, "contradict"},
	} {
		code, stdout, stderr := run1(c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, c.err)
	}

	code, stdout, _ = run1("backfill", "--provider", "stripe", "--dry-run")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "3 missing (would be ingested)")
	require.Contains(t, stdout, "missing stripe:evt_cli_0")

	// --json of a dry run: what it would ingest, nothing ingested.
	code, stdout, stderr = run1("backfill", "--provider", "stripe", "--dry-run", "--json")
	require.Equal(t, 0, code, stderr)
	var dry map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &dry))
	require.Equal(t, 3.0, dry["would_ingest"])
	require.Equal(t, 0.0, dry["ingested"])

	code, stdout, stderr = run1("backfill", "--provider", "stripe", "--since", "2h", "--rate", "50/s", "--json")
	require.Equal(t, 0, code, stderr)
	var res backfill.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 3, Ingested: 3}, res.Counts)
	require.True(t, res.Complete)
	require.Equal(t, 1, strings.Count(stdout, "\n"), "one JSON object")

	code, stdout, _ = run1("events", "show", "stripe:evt_cli_1")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "origin     api")
	code, stdout, _ = run1("events", "show", "--json", "stripe:evt_cli_1")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, `"origin":"api"`)

	code, stdout, _ = run1("backfill", "--provider", "stripe", "--since", "2h")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "3 events listed, 3 already received, 0 ingested")
}

// `hub backfill --provider github`: the token without the hook is a
// configuration error naming HUB_GITHUB_HOOK, a wrong token names
// HUB_GITHUB_TOKEN; --redeliver asks GitHub to send the missing webhooks
// again (a dry run only lists them) and is refused for a provider that
// cannot; without it the payloads are fetched and ingested.
func TestBackfillCommandGitHub(t *testing.T) {
	pool := dbEnv(t, "")
	fake := fakeapi.NewGitHub(t, fakeapi.GitHubOptions{Token: "ghp_cliToken0000000000"})
	p, err := provider.New("github", []string{"gh_cli_secret"}, provider.Options{})
	require.NoError(t, err)
	var guids []string
	for i := range 3 {
		guid := fmt.Sprintf("72d3162e-cc78-11e3-81ab-4c9367dc0%03d", i)
		at := time.Now().Add(-time.Duration(i+1) * time.Hour)
		body, err := samples.Body(p.(provider.Signer).Name(), guid, "issues.opened", nil, at)
		require.NoError(t, err)
		fake.Add(fakeapi.GitHubDelivery{GUID: guid, DeliveredAt: at, Event: "issues", Payload: body})
		guids = append(guids, guid)
	}
	t.Setenv("HUB_GITHUB_SECRETS", "gh_cli_secret")
	t.Setenv("HUB_GITHUB_API_URL", fake.URL)
	run1 := func(args ...string) (int, string, string) { return runCmd(t, args...) }

	code, _, stderr := run1("backfill", "--provider", "github")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no API credentials for github: set HUB_GITHUB_TOKEN and HUB_GITHUB_HOOK")

	t.Setenv("HUB_GITHUB_TOKEN", "ghp_wrongToken0000000")
	code, _, stderr = run1("backfill", "--provider", "github")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "configuration")
	require.Contains(t, stderr, "HUB_GITHUB_HOOK")
	require.NotContains(t, stderr, "ghp_wrongToken0000000")

	t.Setenv("HUB_GITHUB_HOOK", fake.Hook)
	code, _, stderr = run1("backfill", "--provider", "github")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "check HUB_GITHUB_TOKEN")
	require.NotContains(t, stderr, "ghp_wrongToken0000000")

	t.Setenv("HUB_GITHUB_TOKEN", fake.Token)
	t.Setenv("HUB_STRIPE_API_KEY", "sk_test_cli_unused")
	t.Setenv("HUB_STRIPE_SECRETS", "whsec_cli")
	code, stdout, stderr := run1("backfill", "--provider", "stripe", "--redeliver")
	require.Equal(t, 2, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "--redeliver: stripe cannot be asked to send a webhook again")

	code, stdout, stderr = run1("backfill", "--provider", "github", "--redeliver", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "3 missing (would be redelivered)")
	require.Contains(t, stdout, "missing github:"+guids[0]+"  issues.opened")
	require.Empty(t, fake.Attempts())

	code, stdout, stderr = run1("backfill", "--provider", "github", "--redeliver", "--json")
	require.Equal(t, 0, code, stderr)
	var res backfill.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 3, Redelivered: 3}, res.Counts)
	require.True(t, res.Redeliver)
	require.Contains(t, stdout, `"redelivered":3`)
	require.Len(t, fake.Attempts(), 3)
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_events`).Scan(&n))
	require.Equal(t, 0, n, "nothing ingested from the API")

	// GitHub's redeliveries never reached this hub (no hub runs here): a
	// run without --redeliver ingests the API's copies.
	code, stdout, stderr = run1("backfill", "--provider", "github")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "3 events listed, 0 already received, 3 ingested (origin api)")
	code, stdout, _ = run1("events", "show", "github:"+guids[1])
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "origin     api")
	require.Len(t, fake.Attempts(), 3)
}

// `hub backfill` names the events it could not ingest and why; a run
// killed mid-way leaves its lease, which --release-lease takes back unless
// its holder is known to be alive, saying who held it.
func TestBackfillCommandFailuresAndLease(t *testing.T) {
	const key = "sk_test_cli0000000000000000000000key"
	pool, fake := stripeBackfill(t, key, "")
	body, err := samples.Body("stripe", "evt_cli_good", "invoice.paid", nil, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.NoError(t, fake.Add(body))
	require.NoError(t, fake.Add([]byte(fmt.Sprintf(`{"id":"evt_cli_bad","object":"event","created":%d}`, time.Now().Add(-time.Hour).Unix()))))
	t.Setenv("HUB_STRIPE_API_KEY", key)
	run1 := func(args ...string) (int, string, string) { return runCmd(t, args...) }

	code, stdout, stderr := run1("backfill", "--provider", "stripe")
	require.Equal(t, 1, code, stdout)
	require.Contains(t, stderr, "1 missing events could not be ingested")
	require.Contains(t, stderr, "stripe:evt_cli_bad  the api's copy of the event is malformed: ")
	require.Contains(t, stderr, "type")

	require.Contains(t, run1Err(t, run1, "backfill", "--provider", "stripe", "--max-pages", "-1"), "must not be negative")

	// Leases left behind by killed runs.
	host, err := os.Hostname()
	require.NoError(t, err)
	st := store.New(pool)
	since := time.Now().Add(-3 * time.Hour)
	for _, c := range []struct {
		owner   string
		args    []string
		code    int
		message string
	}{
		{fmt.Sprintf("%s:%d:live", host, os.Getpid()), nil, 1, "a process of this machine that is still running"},
		{"elsewhere:1:abcd", nil, 1, "on another machine, which may still be running"},
		{"elsewhere:1:abcd", []string{"--force"}, 0, `released the lease of "elsewhere:1:abcd"`},
		{fmt.Sprintf("%s:%d:dead", host, 1<<22+12345), nil, 0, "released the lease of"},
	} {
		_, err := st.AcquireBackfill(context.Background(), "stripe", c.owner, since, time.Now(), true, time.Hour)
		require.NoError(t, err)
		code, stdout, stderr := run1(append([]string{"backfill", "--provider", "stripe", "--release-lease"}, c.args...)...)
		require.Equal(t, c.code, code, "%s: %s%s", c.owner, stdout, stderr)
		require.Contains(t, stdout+stderr, c.message)
		require.Contains(t, stdout+stderr, c.owner, "names the holder")
		if c.code != 0 {
			code, _, stderr = run1("backfill", "--provider", "stripe")
			require.Equal(t, 1, code)
			require.Contains(t, stderr, "--release-lease", "the busy error says how to take it back")
			_, _, err := st.TakeBackfillLease(context.Background(), "stripe")
			require.NoError(t, err)
			continue
		}
		code, _, stderr = run1("backfill", "--provider", "stripe")
		require.Equal(t, 1, code)
		require.NotContains(t, stderr, "another backfill", "the lease is free again")
	}
	code, stdout, _ = run1("backfill", "--provider", "stripe", "--release-lease")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "no backfill holds the lease")

	// The audit trail has every run and every lease taken back or refused,
	// as the command line's user's.
	es, err := st.ListAudit(context.Background(), hub.AuditQuery{Limit: 100})
	require.NoError(t, err)
	var releases, runs, usage []hub.AuditEntry
	for _, e := range slices.Backward(es) {
		require.Equal(t, cliActor(), e.Actor)
		if e.Target == "hub backfill" { // refused by the command before it ran
			usage = append(usage, e)
			continue
		}
		require.Equal(t, "provider stripe", e.Target)
		switch e.Action {
		case ops.ActionBackfillRelease:
			releases = append(releases, e)
		case ops.ActionBackfill:
			runs = append(runs, e)
		}
	}
	require.Len(t, releases, 4)
	for i, want := range []struct {
		outcome string
		force   bool
	}{{hub.AuditRefused, false}, {hub.AuditRefused, false}, {hub.AuditOK, true}, {hub.AuditOK, false}} {
		require.Equal(t, want.outcome, releases[i].Outcome, i)
		var p map[string]any
		require.NoError(t, json.Unmarshal(releases[i].Params, &p))
		require.Equal(t, want.force, p["force"], i)
		require.NotEmpty(t, p["holder"])
	}
	require.Contains(t, releases[1].Error, "--force")
	require.Len(t, runs, 5, "the first run, a run refused per held lease, one per freed lease")
	var first map[string]any
	require.NoError(t, json.Unmarshal(runs[0].Result, &first))
	require.EqualValues(t, 1, first["failed"])
	require.EqualValues(t, 1, first["ingested"])
	require.Len(t, usage, 1)
	require.Equal(t, hub.AuditRefused, usage[0].Outcome)
	require.Equal(t, ops.ActionBackfill, usage[0].Action)
	require.Contains(t, usage[0].Error, "must not be negative")
	require.Contains(t, string(usage[0].Params), `"--max-pages","-1"`)
}

func run1Err(t *testing.T, run1 func(...string) (int, string, string), args ...string) string {
	t.Helper()
	code, _, stderr := run1(args...)
	require.Equal(t, 2, code, stderr)
	return stderr
}

// stripeBackfill is `hub backfill --provider stripe`'s world: a fresh
// database, and a fake Stripe API taking key at HUB_STRIPE_API_URL (its
// URL and path), with HUB_STRIPE_SECRETS set.
func stripeBackfill(t *testing.T, key, path string) (*pgxpool.Pool, *fakeapi.StripeAPI) {
	pool := dbEnv(t, "")
	fake := fakeapi.NewStripe(key)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("HUB_STRIPE_SECRETS", "whsec_cli")
	t.Setenv("HUB_STRIPE_API_URL", srv.URL+path)
	return pool, fake
}

// `hub backfill` never prints the API key: not when a gateway echoes the
// request's headers in its error page, not when the API redirects to
// another port (which receives nothing); and a plain http:// API URL to
// another host is refused naming its variable.
func TestBackfillCommandHidesTheKey(t *testing.T) {
	const key = "sk_test_cliKeys0000000000000000000key"
	_, fake := stripeBackfill(t, key, "/v1")
	sink := &fakeapi.Sink{}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	t.Setenv("HUB_STRIPE_API_KEY", key)
	run1 := func(args ...string) (int, string) {
		code, stdout, stderr := runCmd(t, args...)
		return code, stdout + stderr
	}

	fake.EchoHeaders(1, http.StatusBadRequest)
	code, out := run1("backfill", "--provider", "stripe")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "answered 400")
	require.Contains(t, out, "Bearer [redacted]")
	require.NotContains(t, out, key)
	require.False(t, strings.ContainsFunc(out, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }), "%q", out)

	fake.Redirect(2, http.StatusFound, sinkSrv.URL)
	code, out = run1("backfill", "--provider", "stripe", "--json")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "not followed")
	require.NotContains(t, out, key)
	require.Empty(t, sink.Requests())

	code, out = run1("backfill", "--provider", "stripe", "--dry-run")
	require.Equal(t, 0, code, out)
	for _, hit := range fake.Hits() {
		require.Equal(t, "/v1/events", hit.Path, "HUB_STRIPE_API_URL ending in /v1")
	}

	// An id the API made of the key (a hostile or broken gateway): the
	// dry run's listing, its JSON and a real run's failure list (its type
	// cannot form a subject) name the event with the key hidden.
	created := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	require.NoError(t, fake.Add([]byte(`{"id":"evt_`+key+`","object":"event","created":`+created+`,"type":"bad type","data":{"object":{}}}`)))
	for _, args := range [][]string{{"--dry-run"}, {"--dry-run", "--json"}, {}} {
		code, out = run1(append([]string{"backfill", "--provider", "stripe"}, args...)...)
		require.Contains(t, out, "evt_[redacted]", "%v: %s", args, out)
		require.NotContains(t, out, key, "%v", args)
	}
	require.Equal(t, 1, code, "the event was archived FAILED: %s", out)
	hits := len(fake.Hits())

	t.Setenv("HUB_STRIPE_API_URL", "http://api.stripe.example")
	code, out = run1("backfill", "--provider", "stripe")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "HUB_STRIPE_API_URL")
	require.Contains(t, out, "plain http")
	require.Len(t, fake.Hits(), hits)
}
