package destination

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/hookhub/hookhub/internal/outbound"
)

// The client connects directly whatever the environment says: a proxy
// (HTTP_PROXY, HTTPS_PROXY) never sees signed events. (A test through a
// local server could not tell: Go never proxies requests to localhost.)
func TestClientIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	tr := outbound.TransportOf(NewClient(ClientConfig{}).hc)
	if tr.Proxy != nil {
		u, _ := url.Parse("https://billing.example/hooks")
		p, err := tr.Proxy(&http.Request{URL: u})
		t.Fatalf("the transport has a proxy function: %v, %v", p, err)
	}
	if tr.TLSClientConfig.MinVersion < 0x0303 || tr.MaxResponseHeaderBytes != MaxResponseHeaderBytes {
		t.Fatalf("transport %+v", tr)
	}
}
