package receivertest_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/internal/receivertest"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// signedRequest is a delivery to r signed with secret.
func signedRequest(t *testing.T, r receivertest.Receiver, id string) *http.Request {
	t.Helper()
	s, err := destination.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"stripe.invoice.paid","timestamp":"2026-12-03T10:00:00Z","data":{}}`)
	now := time.Now()
	req, err := http.NewRequest(http.MethodPost, r.URL()+"/hooks", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(destination.HeaderWebhookID, id)
	req.Header.Set(destination.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(destination.HeaderWebhookSignature, destination.Sign(id, now, body, []destination.Secret{s}))
	return req
}

func TestGoReceiverFaults(t *testing.T) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name  string
		c     receivertest.Control
		check func(t *testing.T, resp *http.Response, err error)
	}{
		{"hang", receivertest.Control{Hang: true}, func(t *testing.T, resp *http.Response, err error) {
			if err == nil {
				t.Fatalf("answered %s", resp.Status)
			}
		}},
		{"endless body", receivertest.Control{EndlessBody: true}, func(t *testing.T, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<20))
			if err != nil || n != 4<<20 {
				t.Fatalf("read %d bytes (%v), want the 4 MiB limit", n, err)
			}
		}},
		{"redirect loop", receivertest.Control{RedirectLoop: true}, func(t *testing.T, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/hooks" {
				t.Fatalf("answered %s to %q, want 302 to /hooks", resp.Status, resp.Header.Get("Location"))
			}
		}},
		{"handler", receivertest.Control{Handler: func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if len(b) == 0 {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusTeapot)
		}}, func(t *testing.T, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusTeapot {
				t.Fatalf("answered %s, want 418 (the handler saw the body)", resp.Status)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := receivertest.Go(t, secret)
			r.Control(t, tc.c)
			client := *noRedirect
			client.Timeout = 10 * time.Second
			if tc.c.Hang {
				client.Timeout = 100 * time.Millisecond
			}
			resp, err := client.Do(signedRequest(t, r, "stripe:evt_"+tc.name))
			var te interface{ Timeout() bool }
			if tc.c.Hang && !(errors.As(err, &te) && te.Timeout()) {
				t.Fatalf("hang: err %v, want a client timeout", err)
			}
			tc.check(t, resp, err)
			// The client may give up (hang) before the receiver records
			// the request: wait for the record, within a deadline.
			got := r.Received(t)
			for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); got = r.Received(t) {
				time.Sleep(10 * time.Millisecond)
			}
			if len(got) != 1 || !got[0].VerifiedStd || got[0].ID != "stripe:evt_"+tc.name {
				t.Fatalf("received %+v", got)
			}
			if r.Accepted(t) != 0 {
				t.Fatalf("a fault counts as accepted")
			}
		})
	}
}
