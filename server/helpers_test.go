package server_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/memtest"
)

const testBasin = "test-basin"

type testEnv struct {
	srv     *server.Server
	backend *memtest.Backend
	url     string // http://127.0.0.1:port
	h1      *http.Client
	h2c     *http.Client
}

// startServer serves a memtest backend on 127.0.0.1 (HTTP/1.1 and h2c on one port) and
// creates the basin testBasin.
func startServer(t *testing.T, opts ...server.Option) *testEnv {
	t.Helper()
	b := memtest.New(nil)
	srv, err := server.New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	env := &testEnv{
		srv:     srv,
		backend: b,
		url:     "http://" + ln.Addr().String(),
		h1:      &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}},
		h2c:     &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Protocols: &p}},
	}
	t.Cleanup(func() {
		_ = srv.Close()
		_ = hs.Close()
		<-done
		env.h1.CloseIdleConnections()
		env.h2c.CloseIdleConnections()
	})
	if _, err := b.CreateBasin(t.Context(), testBasin, defaultBasinConfig()); err != nil {
		t.Fatal(err)
	}
	return env
}

func withToken(tok string) server.Option { return server.WithBearerToken(tok) }
