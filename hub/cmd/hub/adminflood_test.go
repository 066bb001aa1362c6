package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// TestAdminHeaderOnlyFloodRSS runs the real binary and opens 1,000
// connections to its admin listener, each sending the headers of an
// unauthenticated admin request that announces a 1 MiB body, and nothing
// more. The hub process's peak RSS (VmHWM) must stay under 300 MB and grow
// by less than 64 MiB (the hub idled at 257 MB and grew to
// 1,091 MB: it read every announced body before the token check), webhook
// deliveries are answered 200 while they are open, and every one is
// answered 401 without its body.
func TestAdminHeaderOnlyFloodRSS(t *testing.T) {
	hubtest.Soak(t) // holds 1,000 connections; TestAdminListenerHeaderOnlyFlood (hub/service) asserts the same in-process
	t.Parallel()
	const conns = 1000
	_, dbURL := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	addr, adminAddr := freeAddr(t), freeAddr(t)
	hub := startHubProcess(t, append(processEnv(dbURL, n.URL()), "HUB_ADMIN_ADDR="+adminAddr, "HUB_LOG_LEVEL=warn",
		"HUB_ADMIN_TOKEN="+strings.Repeat("t", 40),
		// Above the flood: every connection reaches the server (one
		// address may hold a quarter of HUB_ADMIN_MAX_CONNS).
		"HUB_ADMIN_MAX_CONNS=8000"), addr)
	p, err := provider.New("paddle", []string{testPaddleSecret}, provider.Options{})
	require.NoError(t, err)
	sender := p.(provider.Signer)
	// Generous: the test asks whether deliveries are answered during the
	// flood, not how fast (a timed test flakes on a shared CI machine,
	// where other packages' tests load the same Postgres); a hub the flood
	// blocked never answers.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	code, err := deliver(client, addr, sender, "evt_admin_flood_before")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	before := procMemory(t, hub.Pid(), "VmRSS")

	open := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.DialTimeout("tcp", adminAddr, 5*time.Second)
		require.NoError(t, err)
		open = append(open, c)
		_, err = fmt.Fprint(c, "POST /admin/replay HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n")
		require.NoError(t, err)
	}
	// With all of them open, deliveries are answered.
	delivered := 0
	for i := range 20 {
		code, err := deliver(client, addr, sender, fmt.Sprintf("evt_admin_flood_%d", i))
		require.NoError(t, err, "delivery %d during the flood", i)
		require.Equal(t, http.StatusOK, code, "delivery %d during the flood", i)
		delivered++
	}
	answers := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range open {
		require.NoError(t, c.SetReadDeadline(deadline))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answers["no answer"]++
			continue
		}
		resp.Body.Close()
		answers[strconv.Itoa(resp.StatusCode)]++
	}
	peak := peakRSS(t, hub.Pid())
	t.Logf("%d header-only admin connections: hub RSS %d MB before, peak %d MB; answers %v; %d deliveries answered 200 meanwhile",
		conns, before>>20, peak>>20, answers, delivered)
	require.Less(t, peak, int64(300<<20), "peak RSS")
	require.Less(t, peak-before, int64(64<<20), "RSS growth")
	require.Equal(t, map[string]int{"401": conns}, answers)
}
