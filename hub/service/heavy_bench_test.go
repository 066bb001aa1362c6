package service_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// BenchmarkHeavyBodyHTTP: the hub end to end (HTTP, verification, group
// commit, relay) under small signed Paddle webhooks at a fixed rate
// (200/s, open loop: each latency runs from the time its request was
// due) for 5 s, quiet, then with a signed 0.7 MB body of 60,000 tiny JSON
// objects POSTed every 250 ms, then quiet again. heavy_x is the others'
// 2xx p99 with heavy bodies over the mean of the quiet ones (the target:
// at most 2). Run it once:
// go test -run XXX -bench HeavyBodyHTTP -benchtime 1x ./hub/service/
func BenchmarkHeavyBodyHTTP(b *testing.B) {
	h := testhub.New(b, service.Deps{}, func(c *service.Config) { c.WithDevSecrets() })
	var items strings.Builder
	items.WriteString(`{"items":[`)
	for i := range 60_000 {
		if i > 0 {
			items.WriteByte(',')
		}
		fmt.Fprintf(&items, `{"i":%d}`, i)
	}
	items.WriteString("]}")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	post := func(w testhub.Webhook) (int, error) {
		req, err := http.NewRequest(http.MethodPost, h.URL+"/webhooks/paddle", bytes.NewReader(w.Body))
		if err != nil {
			return 0, err
		}
		req.Header = w.Header.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	seq := 0
	sign := func(data []byte) testhub.Webhook {
		seq++
		id := fmt.Sprintf("evt_%d_%d", time.Now().UnixNano(), seq)
		body, err := samples.Body("paddle", id, "subscription.created", data, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return h.SignBody("paddle", id, "subscription.created", body)
	}
	request := func(data []byte) func() func() error {
		return func() func() error {
			w := sign(data)
			return func() error {
				code, err := post(w)
				if err == nil && code != http.StatusOK {
					err = fmt.Errorf("answered %d", code)
				}
				return err
			}
		}
	}
	run := func(heavy bool, d time.Duration) time.Duration {
		var heavyReq func() func() error
		if heavy {
			heavyReq = request([]byte(items.String()))
		}
		lat, err := hubtest.FixedRate(d, 5*time.Millisecond, 250*time.Millisecond, request(nil), heavyReq)
		if err != nil {
			b.Fatal(err)
		}
		return hubtest.Percentile(lat, 0.99)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for b.Loop() {
		run(false, time.Second) // warm up
		quiet1 := run(false, 5*time.Second)
		heavy := run(true, 5*time.Second)
		quiet2 := run(false, 5*time.Second)
		b.ReportMetric(ms(quiet1), "quiet1_p99_ms")
		b.ReportMetric(ms(heavy), "heavy_p99_ms")
		b.ReportMetric(ms(quiet2), "quiet2_p99_ms")
		b.ReportMetric(float64(heavy)/float64((quiet1+quiet2)/2), "heavy_x")
	}
}
