package hubhttp

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimitPerAddress: past its share, an address's connection is refused
// (and counted) while the listener's cap has room; closing one frees its
// place; peers of a Unix socket, which have no address, are not counted.
func TestLimitPerAddress(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(t.TempDir(), "admin.sock")
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			var rejected atomic.Int64
			l := LimitListenerPerAddress(ln, 8, 2, func() { rejected.Add(1) })
			defer l.Close()
			accepted := make(chan net.Conn, 8)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- c
				}
			}()
			dial := func() net.Conn {
				c, err := net.Dial(network, ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			want := 2
			if network == "unix" {
				want = 3
			}
			var held []net.Conn
			for range 3 {
				dial()
			}
			deadline := time.After(5 * time.Second)
			for len(held) < want {
				select {
				case c := <-accepted:
					held = append(held, c)
				case <-deadline:
					t.Fatalf("accepted %d of %d", len(held), want)
				}
			}
			if network == "unix" {
				return
			}
			for rejected.Load() != 1 {
				select {
				case <-deadline:
					t.Fatalf("rejected %d, want 1", rejected.Load())
				case <-time.After(time.Millisecond):
				}
			}
			held[0].Close()
			dial()
			select {
			case <-accepted:
			case <-deadline:
				t.Fatal("a closed connection did not free its place")
			}
		})
	}
}
