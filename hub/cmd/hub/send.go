package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
)

// maxSendRepeat bounds --repeat: a provider retries an event a few dozen
// times at most; more is a load test, which is `hub bench`.
const maxSendRepeat = 10_000

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("send", `Usage: hub send [flags] <provider> <event_type>

Signs a realistic delivery with the provider's configured secret (or the
development secret `+"`hub dev`"+` uses when none is set), POSTs it to a
running hub and prints each answer. Exits 1 if any answer is not 2xx.

Examples:
  hub send paddle subscription.created
  hub send paddle subscription.created --data '{"id":"sub_1","customer_id":"ctm_1","custom_data":{"credits":250}}'
  hub send clerk user.created --repeat 10

Providers: `+strings.Join(provider.Names(), ", ")+`, and each name in HUB_STANDARD_PROVIDERS

Paddle samples take the shape Paddle documents (checked with Paddle's SDK) for
subscription.*, customer.* and transaction.* types; other types get a small
generic object: pass --data for those.
`, stdout)
	data := fs.String("data", "", "the event's data object as JSON (default: a realistic sample)")
	repeat := fs.Int("repeat", 1, fmt.Sprintf("deliver the same event N times (1..%d), re-signed each time as a provider retry is", maxSendRepeat))
	eventID := fs.String("event-id", "", "the event id (default: a new random id)")
	url := fs.String("url", "", "the hub's base URL (default: http://127.0.0.1 on HUB_HTTP_ADDR's port)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr("send needs <provider> <event_type>; see `hub send --help`")
	}
	name, eventType := pos[0], pos[1]
	if *repeat < 1 || *repeat > maxSendRepeat {
		return usageErr(fmt.Sprintf("--repeat must be within 1..%d, got %d", maxSendRepeat, *repeat))
	}
	var dataBytes []byte
	if *data != "" {
		if !json.Valid([]byte(*data)) {
			return usageErr("--data is not valid JSON")
		}
		dataBytes = []byte(*data)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	cfg.WithDevSecrets()
	providers, err := cfg.Providers()
	if err != nil {
		return err
	}
	var sender provider.Signer
	var known []string
	for _, p := range providers {
		known = append(known, p.Name())
		if p.Name() == name {
			sender, _ = p.(provider.Signer)
		}
	}
	if sender == nil {
		return usageErr(fmt.Sprintf("unknown provider %q (configured: %s)", name, strings.Join(known, ", ")))
	}
	if *eventID == "" {
		*eventID = newEventID(name)
	}
	base := cmp.Or(*url, "http://"+service.DisplayAddr(cfg.HTTPAddr))
	base = strings.TrimRight(base, "/")
	body, err := samples.Body(sender.Name(), *eventID, eventType, dataBytes, time.Now())
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 15 * time.Second}
	failed := 0
	for i := 0; i < *repeat; i++ {
		status, answer, err := postSigned(ctx, client, sender, base, *eventID, eventType, body)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d %s\n", status, answer)
		if status/100 != 2 {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d deliveries were not accepted", failed, *repeat)
	}
	return nil
}

// postSigned signs one delivery of the event anew, as providers do on
// retries, POSTs it to the hub at base and returns its answer.
func postSigned(ctx context.Context, client *http.Client, sender provider.Signer, base, eventID, eventType string, body []byte) (int, []byte, error) {
	h, target, err := sender.Sign(eventID, eventType, body, time.Now())
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = h
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w (is the hub running? start it with `hub dev`)", req.URL, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, bytes.TrimSpace(answer), nil
}

// newEventID returns a fresh id in the provider's style.
func newEventID(name string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	prefix := "evt_"
	if name == "clerk" {
		prefix = "msg_"
	}
	return prefix + hex.EncodeToString(b[:])
}
