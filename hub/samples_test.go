package hub_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
)

// destinationSamples is where the destination tests read the hub's sample
// bodies: the subscriber side imports nothing from hub/, so the hub writes
// them down for it.
var destinationSamples = filepath.Join(root, "subscribers", "destination", "testdata", "samples.json")

// sampleTypes are the event types written for each provider; a provider
// not listed (a Standard Webhooks name) gets those of "".
var sampleTypes = map[string][]string{
	"paddle":  {"subscription.created", "transaction.completed"},
	"stripe":  {"customer.subscription.created", "invoice.paid", "customer.subscription.updated"},
	"github":  {"push", "pull_request.opened"},
	"shopify": {"orders.create"},
	"twilio":  {"sms.status", "sms.delivered", "call.completed"},
	"clerk":   {"user.created"},
	"":        {"email.delivered"},
}

// The destination tests' samples (subscribers/destination/testdata/
// samples.json) are the bodies hub/provider/samples builds today, for every
// provider the hub knows. HOOKHUB_UPDATE_SAMPLES=1 rewrites the file.
func TestDestinationSamplesAreCurrent(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	want := map[string]map[string]string{}
	for _, name := range provider.Names() {
		types, ok := sampleTypes[name]
		if !ok {
			types = sampleTypes[""]
		}
		want[name] = map[string]string{}
		for _, typ := range types {
			body, err := samples.Body(name, "evt_1", typ, nil, at)
			require.NoError(t, err, "%s %s", name, typ)
			want[name][typ] = string(body)
		}
	}
	out, err := json.MarshalIndent(want, "", "  ")
	require.NoError(t, err)
	out = append(out, '\n')
	if os.Getenv("HOOKHUB_UPDATE_SAMPLES") != "" {
		require.NoError(t, os.WriteFile(destinationSamples, out, 0o644))
	}
	got, err := os.ReadFile(destinationSamples)
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, out), "%s is not the hub's samples of today: "+
		"rewrite it with HOOKHUB_UPDATE_SAMPLES=1 go test ./hub -run TestDestinationSamplesAreCurrent", destinationSamples)
}
