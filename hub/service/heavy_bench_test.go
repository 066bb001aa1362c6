package service_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
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
	run := func(heavy bool, d time.Duration) time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		small := time.NewTicker(5 * time.Millisecond)
		defer small.Stop()
		big := time.NewTicker(250 * time.Millisecond)
		defer big.Stop()
		end := time.After(d)
		for {
			select {
			case due := <-small.C:
				w := sign(nil)
				wg.Go(func() {
					code, err := post(w)
					if err != nil || code != http.StatusOK {
						b.Errorf("small webhook: %d %v", code, err)
					}
					mu.Lock()
					lat = append(lat, time.Since(due))
					mu.Unlock()
				})
			case <-big.C:
				if heavy {
					w := sign([]byte(items.String()))
					wg.Go(func() {
						if code, err := post(w); err != nil || code != http.StatusOK {
							b.Errorf("heavy webhook: %d %v", code, err)
						}
					})
				}
			case <-end:
				wg.Wait()
				slices.Sort(lat)
				return lat[len(lat)*99/100]
			}
		}
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
