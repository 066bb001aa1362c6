package subscriber

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewServeMux returns a mux serving GET /metrics from g and GET /healthz,
// which answers 200 "ok" while every given subscriber is Healthy and 503
// with the reasons otherwise. Services add their own routes to it (credits
// serves balances). A nil g serves an empty registry.
func NewServeMux(g prometheus.Gatherer, subs ...*Subscriber) *http.ServeMux {
	if g == nil {
		g = prometheus.NewRegistry()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		status, body := http.StatusOK, ""
		for _, s := range subs {
			if err := s.Healthy(); err != nil {
				status = http.StatusServiceUnavailable
				body += err.Error() + "\n"
			}
		}
		if status == http.StatusOK {
			body = "ok\n"
		}
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
	})
	return mux
}
