package daemon

import (
	"net"
	"os"
	"strconv"
)

// advertisedURL is the committer URL derived from the address the daemon listens on: its
// host (the machine's hostname for a wildcard address) and port, https with TLS.
func advertisedURL(addr net.Addr, tls bool) string {
	host, port := "127.0.0.1", "8080"
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
		switch {
		case ta.IP == nil || ta.IP.IsUnspecified():
			if h, err := os.Hostname(); err == nil && h != "" {
				host = h
			}
		default:
			host = ta.IP.String()
		}
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
