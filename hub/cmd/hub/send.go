package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider"
)

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(stdout)
	data := fs.String("data", "", "the event's data object as JSON (default: a realistic sample)")
	repeat := fs.Int("repeat", 1, "deliver the same event N times, re-signed each time as a provider retry is")
	eventID := fs.String("event-id", "", "the event id (default: a new random id)")
	url := fs.String("url", "", "the hub's base URL (default: http://127.0.0.1 on HUB_HTTP_ADDR's port)")
	fs.Usage = func() {
		io.WriteString(stdout, `Usage: hub send [flags] <provider> <event_type>

Signs a realistic delivery with the provider's configured secret (or the
development secret `+"`hub dev`"+` uses when none is set), POSTs it to a
running hub and prints each answer. Exits 1 if any answer is not 2xx.

Examples:
  hub send paddle subscription.created
  hub send paddle subscription.created --data '{"id":"sub_1","customer_id":"ctm_1","custom_data":{"credits":250}}'
  hub send clerk user.created --repeat 10

Providers: `+strings.Join(provider.Names(), ", ")+`

Flags:
`)
		fs.PrintDefaults()
	}
	// Accept flags before and after the positional arguments.
	if err := fs.Parse(args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) >= 2 {
		if err := fs.Parse(pos[2:]); err != nil {
			return err
		}
		pos = append(pos[:2:2], fs.Args()...)
	}
	if len(pos) != 2 {
		return usageErr("send needs <provider> <event_type>; see `hub send --help`")
	}
	name, eventType := pos[0], pos[1]
	if *repeat < 1 {
		return usageErr("--repeat must be at least 1")
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
	secrets := cfg.ProviderSecrets()[name]
	p, err := provider.New(name, secrets, cfg.SignatureTolerance)
	if err != nil {
		return fmt.Errorf("provider %q: %w (known: %s)", name, err, strings.Join(provider.Names(), ", "))
	}
	sender, ok := p.(provider.Sender)
	if !ok {
		return fmt.Errorf("provider %q cannot build test deliveries", name)
	}
	if *eventID == "" {
		*eventID = newEventID(name)
	}
	base := *url
	if base == "" {
		base = "http://" + displayAddr(cfg.HTTPAddr)
	}
	target := strings.TrimRight(base, "/") + "/webhooks/" + name
	body, err := sender.Sample(*eventID, eventType, dataBytes, time.Now())
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 15 * time.Second}
	failed := 0
	for i := 0; i < *repeat; i++ {
		h, err := sender.Sign(*eventID, body, time.Now())
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("POST %s: %w (is the hub running? start it with `hub dev`)", target, err)
		}
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		fmt.Fprintf(stdout, "%d %s\n", resp.StatusCode, bytes.TrimSpace(answer))
		if resp.StatusCode/100 != 2 {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d deliveries were not accepted", failed, *repeat)
	}
	return nil
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
