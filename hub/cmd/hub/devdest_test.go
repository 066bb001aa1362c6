package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// TestDevRunsDestinations: `hub dev` with a destinations file POSTs each
// event of its subjects to the destination's URL, signed so that a
// Standard Webhooks verifier accepts it; a file with an invalid entry
// stops it with an error naming the destination and the field.
func TestDevRunsDestinations(t *testing.T) {
	hold4222(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	verifier, err := provider.NewStandardWebhooks([]string{secret}, provider.Options{})
	require.NoError(t, err)
	var mu sync.Mutex
	verified := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if _, err := verifier.Verify(provider.Request{Header: r.Header, Body: body, Now: time.Now()}); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		verified[r.Header.Get("webhook-id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)

	_, dbURL := hubdb.Pool(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "destinations.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o600)) }
	for k, v := range map[string]string{
		"HUB_DATABASE_URL": dbURL, "HUB_DATA_DIR": dir, "HUB_NATS_URL": "",
		"HUB_HTTP_ADDR": freeAddr(t), "HUB_ADMIN_ADDR": freeAddr(t), "HUB_LOG_FORMAT": "text",
		"HUB_SHUTDOWN_TIMEOUT": "10s", "HUB_PADDLE_SECRETS": "", "DEV_DEST_SECRET": secret,
	} {
		t.Setenv(k, v)
	}
	bin := buildHub(t)

	write("destinations:\n  - name: dev_dest\n    url: " + rcv.URL + "/hooks\n    subjects: [\"paddle.>\"]\n    secret_env: DEV_DEST_SECRET\n    concurrency: 1000\n")
	p := hubtest.StartBinary(t, bin, nil, "dev", "--destinations", file)
	require.NotEqual(t, 0, p.ExitCode(t), p.Output())
	require.Contains(t, p.Output(), `destination "dev_dest": concurrency:`, "an invalid entry is named with its field")

	write("destinations:\n  - name: dev_dest\n    url: " + rcv.URL + "/hooks\n    subjects: [\"paddle.>\"]\n    secret_env: DEV_DEST_SECRET\n")
	p = hubtest.StartBinary(t, bin, nil, "dev", "--destinations", file)
	p.WaitOutput(t, "Destinations from "+file+": dev_dest")
	// start: new (the default): what is published once its consumer
	// exists.
	p.WaitOutput(t, "msg=consuming subscriber=dev_dest")
	code, _, errOut := runCmd(t, "send", "paddle", "subscription.created", "--event-id", "evt_devdest")
	require.Equal(t, 0, code, errOut)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return verified["paddle:evt_devdest"] == 1
	}, 30*time.Second, 50*time.Millisecond, "the destination did not receive the event: %s", p.Output())
	require.False(t, strings.Contains(p.Output(), strings.TrimPrefix(secret, "whsec_")), "the secret is never logged")
}
