package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testlog"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/s2api"
)

// malformedAppendSession is the body of an S2S append session that goes wrong: a valid
// input or two, then a frame that does not decode (bad flag, truncated, bad protobuf,
// garbage), and sometimes more bytes after it.
func malformedAppendSession(rng *rand.Rand) []byte {
	var body []byte
	good, _ := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})})
	for range rng.IntN(3) {
		body = append(body, good...)
	}
	switch rng.IntN(5) {
	case 0: // a body that is not an AppendInput
		junk := make([]byte, 1+rng.IntN(40))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		f, _ := s2api.AppendFrame(nil, s2api.Frame{Body: junk})
		body = append(body, f...)
	case 1: // a bad flag
		body = append(body, 0, 0, 2, 0x60|byte(rng.IntN(16)), 1)
	case 2: // a truncated frame
		body = append(body, good[:1+rng.IntN(len(good)-1)]...)
	case 3: // a compressed body that does not decompress
		body = append(body, 0, 0, 4, s2api.FlagGzip, 1, 2, 3)
	default: // garbage
		junk := make([]byte, 1+rng.IntN(64))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		body = append(body, junk...)
	}
	if rng.IntN(2) == 0 {
		body = append(body, good...)
	}
	return body
}

// Malformed S2S append sessions over HTTP/1.1 keep-alive connections: each gets its answer,
// and the server never panics (a handler must not leave the body being read after it returns:
// net/http then panics with "invalid concurrent Body.Read call" on the connection's next
// request).
func TestAppendSessionMalformedFramesKeepAlive(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	srv := newEngineServer(t)
	var errLog testlog.Buffer
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ErrorLog = log.New(&errLog, "", 0)
	ts.Start()
	defer ts.Close()

	const conns, perConn = 8, 60
	var wg sync.WaitGroup
	for c := range conns {
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for i := range perConn {
				body := malformedAppendSession(rng)
				var req bytes.Buffer
				fmt.Fprintf(&req, "POST /v1/streams/s/records HTTP/1.1\r\nHost: x\r\nContent-Type: s2s/proto\r\nS2-Basin: %s\r\n", fuzzBasin)
				if rng.IntN(2) == 0 {
					fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n", len(body))
					req.Write(body)
				} else {
					req.WriteString("Transfer-Encoding: chunked\r\n\r\n")
					fmt.Fprintf(&req, "%x\r\n", len(body))
					req.Write(body)
					req.WriteString("\r\n0\r\n\r\n")
				}
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Write(req.Bytes()); err != nil {
					return // the server closed the connection: allowed
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.Close {
					return
				}
				if resp.StatusCode != http.StatusOK {
					t.Errorf("conn %d request %d: status %d", c, i, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := errLog.String(); strings.Contains(s, "panic") {
		t.Fatalf("the server panicked:\n%.3000s", s)
	}
}
