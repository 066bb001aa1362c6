// Package loopback says whether a host names this machine: the one rule
// for what may be reached without TLS (backfill's plain http:// API URLs)
// or trusted as local (the `hub dev` record's NATS URL).
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (no port, no brackets: url.URL.Hostname) is
// localhost or a loopback address (127.0.0.0/8, ::1).
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
