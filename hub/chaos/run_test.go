package chaos_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/chaos"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
)

// signers are the hub's own providers' signers.
func signers(t *testing.T, cfg service.Config) map[string]chaos.Signer {
	ps, err := cfg.Providers()
	require.NoError(t, err)
	out := map[string]chaos.Signer{}
	for _, p := range ps {
		if s, ok := p.(provider.Signer); ok {
			out[p.Name()] = s
		}
	}
	return out
}

// A run against one healthy hub: every event acknowledged, archived and on
// the stream once; the duplicates a provider sends after a lost 2xx are
// deliveries, not events. Then the checker must see a row deleted from
// the archive: a checker that cannot fail proves nothing.
func TestRunAgainstOneHub(t *testing.T) {
	h := testhub.New(t, service.Deps{}, func(c *service.Config) { c.WithDevSecrets() })
	ctx := t.Context()
	check := chaos.CheckOptions{Pool: h.Pool(), JetStream: h.JetStream(), Stream: h.Config.Stream,
		Subscribers: []chaos.Subscription{}, Settle: 30 * time.Second}
	from, err := chaos.StreamMark(ctx, h.JetStream(), h.Config.Stream)
	require.NoError(t, err)
	check.FromSeq = from
	load, err := chaos.StartLoad(ctx, chaos.LoadOptions{Target: h.URL, Signers: signers(t, h.Config), Rate: 200, Events: 120,
		Duration: 10 * time.Second, DupEvery: 4})
	require.NoError(t, err)
	events := load.Wait(ctx)
	p := load.Progress()
	require.Equal(t, 120, p.Sent)
	require.Equal(t, 120, p.Acked)
	require.Zero(t, p.Pending)
	r, err := chaos.Check(ctx, check, events)
	require.NoError(t, err)
	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	t.Logf("report:\n%s", text.String())
	require.True(t, r.OK(), text.String())
	require.Equal(t, 120, r.Sent)
	require.Equal(t, 120, r.Acknowledged)
	require.Equal(t, 120, r.Archived)
	require.Equal(t, 120, r.OnStream)
	require.GreaterOrEqual(t, r.Deliveries, int64(120+120/4), "every 4th acknowledged event is delivered twice")
	require.Contains(t, text.String(), "OK: nothing lost, nothing duplicated")

	// The checker sees a loss: one archived event removed.
	var provider, id string
	require.NoError(t, h.Pool().QueryRow(ctx,
		"DELETE FROM webhook_events WHERE id = (SELECT id FROM webhook_events WHERE event_id LIKE '%chaos' || $1 || '_%' LIMIT 1) RETURNING provider, event_id",
		load.RunID()).Scan(&provider, &id))
	check.Settle = time.Second
	r, err = chaos.Check(ctx, check, events)
	require.NoError(t, err)
	require.False(t, r.OK())
	require.Equal(t, 1, r.Lost)
	require.Equal(t, []string{provider + ":" + id}, r.LostFromArchive.IDs)
	require.Equal(t, []string{provider + ":" + id}, r.ArchiveOnlyLost.IDs, "it is still on the stream")
	text.Reset()
	require.NoError(t, r.WriteText(&text))
	require.Contains(t, text.String(), "FAILED")
}
