package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
)

// `hub backfill` never prints the API key: not when a gateway echoes the
// request's headers in its error page, not when the API redirects to
// another port (which receives nothing); and a plain http:// API URL to
// another host is refused naming its variable.
func TestBackfillCommandHidesTheKey(t *testing.T) {
	_, url := hubdb.Pool(t)
	const key = "sk_test_cliKeys0000000000000000000key"
	fake := fakeapi.NewStripe(key)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	sink := &fakeapi.Sink{}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	t.Setenv("HUB_DATABASE_URL", url)
	t.Setenv("HUB_STRIPE_SECRETS", "whsec_cli")
	t.Setenv("HUB_STRIPE_API_URL", srv.URL+"/v1")
	t.Setenv("HUB_STRIPE_API_KEY", key)
	run1 := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
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
