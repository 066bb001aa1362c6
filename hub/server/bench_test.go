package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/server"
)

// memoryIngester answers every delivery as a first delivery without any
// I/O: the benchmarks below measure the request path alone (routing,
// verification, event extraction, answer), not Postgres.
type memoryIngester struct{}

func (memoryIngester) Ingest(_ context.Context, ds []hub.Delivery) ([]hub.Outcome, error) {
	return make([]hub.Outcome, len(ds)), nil
}

// benchmarkWebhook measures a signed sample event of name through the
// HTTP layer without I/O, with tracer (nil: tracing off) and the headers
// extra set on each request.
func benchmarkWebhook(b *testing.B, tracer trace.Tracer, name, secret, eventType string, extra map[string]string) {
	p, err := provider.New(name, []string{secret}, provider.Options{Tolerance: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := server.New(server.Config{
		Providers: []provider.Provider{p},
		Ingester:  memoryIngester{},
		Ready:     func(context.Context) error { return nil },
		Metrics:   metrics.New(reg),
		Tracer:    tracer,
	})
	if err != nil {
		b.Fatal(err)
	}
	s := p.(provider.Signer)
	now := time.Now()
	body, err := samples.Body(s.Name(), "evt_bench", eventType, nil, now)
	if err != nil {
		b.Fatal(err)
	}
	hdr, _, err := s.Sign("evt_bench", "", body, now)
	if err != nil {
		b.Fatal(err)
	}
	handler := srv.App().Handler()
	var ctx fasthttp.RequestCtx
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if tracer != nil {
			// As the fasthttp server does between requests: the user
			// context (the span's) lives in the user values.
			ctx.ResetUserValues()
		}
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/webhooks/" + name)
		for k, v := range hdr {
			ctx.Request.Header.Set(k, v[0])
		}
		for k, v := range extra {
			ctx.Request.Header.Set(k, v)
		}
		ctx.Request.SetBodyRaw(body)
		handler(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusOK {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// BenchmarkRequestPath measures one webhook through the HTTP layer
// without I/O. Compare with BenchmarkVerify in hub/provider: the
// difference is routing, the archive delivery, metrics and the answer.
func BenchmarkRequestPath(b *testing.B) {
	b.Run("paddle", func(b *testing.B) {
		benchmarkWebhook(b, nil, "paddle", "pdl_ntfset_01bench000000000000000000000_BenchmarkSecretNotSecret0", "subscription.created", nil)
	})
	b.Run("clerk", func(b *testing.B) {
		benchmarkWebhook(b, nil, "clerk", "whsec_dGVzdC1zZWNyZXQtZm9yLWhvb2todWItdGVzdHMh", "user.created", nil)
	})
}

// BenchmarkRecorders compares the cost per answer of the overview's
// Traffic with the charts' ProviderTraffic (and both, as the webhook
// handler records them), under parallel load.
func BenchmarkRecorders(b *testing.B) {
	tr := server.NewTraffic()
	pt := server.NewProviderTraffic([]string{"clerk", "github", "paddle", "shopify", "stripe", "twilio"})
	now := time.Now()
	b.Run("traffic", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tr.Record(now, 200)
			}
		})
	})
	b.Run("provider-traffic", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				pt.Record(now, "paddle", 200, 3*time.Millisecond)
			}
		})
	})
	b.Run("both+clock", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				start := time.Now()
				t := time.Now()
				tr.Record(t, 200)
				pt.Record(t, "paddle", 200, time.Since(start))
			}
		})
	})
}
