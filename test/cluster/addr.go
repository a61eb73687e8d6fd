package cluster

import (
	"net"
	"testing"
)

// FreeAddr is a loopback address (host:port) nothing listens on right now,
// for a server a test starts: a manager's metrics, probes or dashboard.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}
