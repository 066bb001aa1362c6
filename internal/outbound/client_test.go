package outbound

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// New's client does not follow redirects unless told to, cuts bodies at
// MaxBody and ignores the proxy environment unless told to.
func TestNew(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		_, _ = w.Write(make([]byte, 100))
	}))
	defer srv.Close()
	c := New(Config{MaxBody: 10})
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL + "/moved")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect followed: %d", resp.StatusCode)
	}
	resp, err = c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, n := make([]byte, 100), 0
	for {
		k, err := resp.Body.Read(b[n:])
		if n += k; err != nil {
			break
		}
	}
	resp.Body.Close()
	if n != 10 {
		t.Fatalf("body of %d bytes, want 10", n)
	}
	tr := TransportOf(c)
	if tr.Proxy != nil || tr.MaxResponseHeaderBytes != MaxHeaderBytes || tr.TLSClientConfig.MinVersion < 0x0303 {
		t.Fatalf("transport %+v", tr)
	}
	if tr = TransportOf(New(Config{ProxyFromEnvironment: true})); tr.Proxy == nil {
		t.Fatal("no proxy from the environment")
	}
	if TransportOf(http.DefaultClient) != nil {
		t.Fatal("TransportOf of another client")
	}
}
