package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/schema"
)

// Every provider, built from configuration as the hub builds it, delivers
// through HTTP to its subject; a retry is a duplicate; non-JSON bodies
// (Twilio's forms) are archived as queryable JSON with their exact bytes.
func TestEveryProviderEndToEnd(t *testing.T) {
	t.Parallel()
	configure := func(c *service.Config) {
		c.SetSecrets("paddle")
		c.SetSecrets("clerk")
		c.WithDevSecrets()
		c.PublicURL = "https://hub.example.com"
		c.StandardProviders = []string{"acme"}
		c.StandardSecrets = map[string][]string{"acme": {"whsec_aG9va2h1Yi1hY21lLXRlc3Qtc2VjcmV0LWtleQ=="}}
	}
	h := newTestHub(t, configure)
	cfg := h.cfg
	providers, err := cfg.Providers()
	require.NoError(t, err)
	cases := map[string]struct{ eventType, subject string }{
		"paddle":  {"subscription.created", "paddle.subscription.created"},
		"clerk":   {"user.created", "clerk.user.created"},
		"stripe":  {"customer.subscription.created", "stripe.customer.subscription.created"},
		"github":  {"pull_request.opened", "github.pull_request.opened"},
		"shopify": {"orders.create", "shopify.orders.create"},
		"twilio":  {"sms.status", "twilio.sms.status"},
		"acme":    {"contact.created", "acme.contact.created"},
	}
	require.Len(t, providers, len(cases))
	for _, p := range providers {
		c, ok := cases[p.Name()]
		require.True(t, ok, p.Name())
		s := p.(provider.Signer)
		eventID := "evt_all_" + p.Name()
		body, err := samples.Body(s.Name(), eventID, c.eventType, nil, time.Now())
		require.NoError(t, err, p.Name())
		for attempt := range 2 {
			hdr, target, err := s.Sign(eventID, c.eventType, body, time.Now())
			require.NoError(t, err)
			req, err := http.NewRequest(http.MethodPost, h.base+target, bytes.NewReader(body))
			require.NoError(t, err)
			req.Header = hdr
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p.Name(), raw)
			var a struct {
				EventID    string `json:"event_id"`
				Idempotent bool   `json:"idempotent"`
			}
			require.NoError(t, json.Unmarshal(raw, &a))
			require.Equal(t, attempt == 1, a.Idempotent, p.Name())
			if attempt == 0 {
				eventID = a.EventID // Twilio without an idempotency token derives its own id
			}
		}
	}
	h.waitPublished()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, schema.DefaultStream)
	require.NoError(t, err)
	for name, c := range cases {
		m, err := st.GetLastMsgForSubject(ctx, c.subject)
		require.NoError(t, err, "%s: no message on %s", name, c.subject)
		require.Equal(t, name, m.Header.Get("Hub-Provider"))
	}
	require.Len(t, h.streamMsgIDs(), len(cases))
	var payload string
	require.NoError(t, h.pool.QueryRow(ctx, `SELECT payload::text FROM webhook_event_status WHERE provider = 'twilio' AND processing_status = 'PROCESSED'`).Scan(&payload))
	require.NotContains(t, payload, "hub_unstorable_payload", "form bodies are archived as JSON")
}

func TestStandardProvidersConfig(t *testing.T) {
	t.Setenv("HUB_STANDARD_PROVIDERS", "resend,acme-corp")
	t.Setenv("HUB_STANDARD_RESEND_SECRETS", "whsec_aG9va2h1Yi1hY21lLXRlc3Qtc2VjcmV0LWtleQ==")
	_, err := service.LoadConfig()
	require.ErrorContains(t, err, "HUB_STANDARD_ACME_CORP_SECRETS")
	t.Setenv("HUB_STANDARD_ACME_CORP_SECRETS", "whsec_aG9va2h1Yi1hY21lLXRlc3Qtc2VjcmV0LWtleQ==")
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	ps, err := cfg.Providers()
	require.NoError(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name())
	}
	require.Equal(t, []string{"acme-corp", "resend"}, names)

	t.Setenv("HUB_STANDARD_PROVIDERS", "stripe")
	_, err = service.LoadConfig()
	require.ErrorContains(t, err, "built-in provider")
	t.Setenv("HUB_STANDARD_PROVIDERS", "")
	t.Setenv("HUB_TWILIO_SECRETS", "token")
	_, err = service.LoadConfig()
	require.ErrorContains(t, err, "HUB_PUBLIC_URL")
}
