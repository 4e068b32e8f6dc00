package daemon

import (
	"net"
	"os"
	"testing"
)

// TestAdvertisedURL: the URL derived from the listening address.
func TestAdvertisedURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname:", err)
	}
	for _, c := range []struct {
		addr net.Addr
		tls  bool
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, false, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 443}, true, "https://10.0.0.5:443"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 9000}, false, "http://[::1]:9000"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, false, "http://" + net.JoinHostPort(host, "8080")},
		{&net.TCPAddr{Port: 7000}, false, "http://" + net.JoinHostPort(host, "7000")},
	} {
		if got := advertisedURL(c.addr, c.tls); got != c.want {
			t.Errorf("advertisedURL(%v, tls %v) = %q, want %q", c.addr, c.tls, got, c.want)
		}
	}
}
