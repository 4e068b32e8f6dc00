package s3_test

// Tests of S3Config.ReadTimeout's watchdog (s3_idle.go) with the SDK: retries, caller
// cancellation, TLS, Expect: 100-continue, connection reuse, concurrent bodies, HTTP/2,
// and what is not the server's silence.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// isIdleErr reports whether err is (or wraps) the watchdog's error.
func isIdleErr(err error) bool {
	return err != nil && strings.Contains(err.Error(), "read_timeout")
}

// The SDK's retryer retries a Get, Head, List and Delete whose first attempt the watchdog
// cut (no answer at all, or a List whose XML body stalls half-way), as it did with the
// SDK's read deadline.
func TestS3IdleCutCallsAreRetried(t *testing.T) {
	var calls sync.Map // method+path -> *atomic.Int64
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, _ := calls.LoadOrStore(r.Method+" "+r.URL.Path, new(atomic.Int64))
		first := v.(*atomic.Int64).Add(1) == 1
		isList := r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2"
		if first && !isList {
			select { // no answer at all
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		switch {
		case isList:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name>`)
			if first { // the body stalls half-way
				w.(http.Flusher).Flush()
				select {
				case <-hang:
				case <-r.Context().Done():
				}
				return
			}
			io.WriteString(w, `<Prefix></Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>k</Key><ETag>"e"</ETag><Size>4</Size><LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents></ListBucketResult>`)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("ETag", `"e"`)
			w.Header().Set("Content-Length", "4")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				io.WriteString(w, "body")
			}
		}
	}))
	t.Cleanup(func() { close(hang); srv.Close() })
	s := readTimeoutStore(t, srv.URL, 200*time.Millisecond, nil)
	ctx := context.Background()
	if _, _, err := objectstore.ReadAll(ctx, s, "g"); err != nil {
		t.Errorf("get: %v", err)
	}
	if _, err := s.Head(ctx, "h"); err != nil {
		t.Errorf("head: %v", err)
	}
	if p, err := s.List(ctx, "", "", 0); err != nil || len(p.Objects) != 1 {
		t.Errorf("list: %v, %v", p, err)
	}
	if err := s.Delete(ctx, "d"); err != nil {
		t.Errorf("delete: %v", err)
	}
	calls.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n != 2 {
			t.Errorf("%s: %d attempts, want 2 (the cut one and a retry)", k, n)
		}
		return true
	})
}

// A caller's context that ends while the request waits on a silent server (before the
// answer, or in the middle of the body) surfaces as the caller's context error, not as the
// watchdog's.
func TestS3IdleCallerCancelIsNotIdle(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bucket/body" {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "0123456789")
			w.(http.Flusher).Flush()
		}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); srv.Close() })
	s := readTimeoutStore(t, srv.URL, 2*time.Second, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Head(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || isIdleErr(err) {
		t.Errorf("head whose context ended: %v, want context.DeadlineExceeded", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	obj, err := s.Get(ctx2, "body", objectstore.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	time.AfterFunc(200*time.Millisecond, cancel2)
	_, err = io.ReadAll(obj.Body)
	if !errors.Is(err, context.Canceled) || isIdleErr(err) {
		t.Errorf("body read whose context ended: %v, want context.Canceled", err)
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel3()
	_, err = objectstore.PutBytes(ctx3, s, "p", []byte("x"), objectstore.PutCondition{})
	if isIdleErr(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("put whose context ended: %v, want context.DeadlineExceeded", err)
	}
}

// A put the watchdog cuts before its headers were written (a TLS handshake the server
// never answers) is a plain error, not ErrOutcomeUnknown; one cut after them is
// ErrOutcomeUnknown (TestS3ReadTimeoutHungServer).
func TestS3IdlePutCutBeforeHeadersIsPlain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // accepted, never a TLS answer
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	s := readTimeoutStore(t, "https://"+ln.Addr().String(), 300*time.Millisecond, nil)
	start := time.Now()
	_, err = objectstore.PutBytes(context.Background(), s, "k", []byte("x"), objectstore.PutCondition{})
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
	if err == nil || errors.Is(err, objectstore.ErrOutcomeUnknown) {
		t.Errorf("put cut during the TLS handshake: %v, want a plain error", err)
	}
}

// A put over 2 MiB goes with Expect: 100-continue; a server that takes a while (under the
// timeout) to ask for the body, then takes it, answers within the timeout.
func TestS3IdleExpectContinue(t *testing.T) {
	const size = 3 << 20
	var expect atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			return // HeadBucket
		}
		expect.Store(r.Header.Get("Expect"))
		time.Sleep(400 * time.Millisecond) // before asking for the body (100 Continue)
		n, _ := io.Copy(io.Discard, r.Body)
		if n != size {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("ETag", `"e"`)
	}))
	t.Cleanup(srv.Close)
	s := readTimeoutStore(t, srv.URL, 700*time.Millisecond, nil)
	if _, err := objectstore.PutBytes(context.Background(), s, "k", make([]byte, size), objectstore.PutCondition{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := expect.Load().(string); got != "100-continue" {
		t.Errorf("Expect %q, want 100-continue (the test shows nothing)", got)
	}
}

// Connections are reused as without the watchdog: it closes nothing early.
func TestS3IdleConnectionsReused(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Second} {
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			switch {
			case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
				w.Header().Set("Content-Type", "application/xml")
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
			case r.Method == http.MethodGet:
				w.Header().Set("ETag", `"e"`)
				w.Header().Set("Content-Length", "4")
				io.WriteString(w, "body")
			default:
				w.Header().Set("ETag", `"e"`)
			}
		}))
		srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		s := readTimeoutStore(t, srv.URL, timeout, nil)
		ctx := context.Background()
		for range 20 {
			if _, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), objectstore.PutCondition{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := objectstore.ReadAll(ctx, s, "k"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Head(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.List(ctx, "", "", 0); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("read timeout %v: %d connections for 80 requests", timeout, conns.Load())
		if conns.Load() > 2 {
			t.Errorf("read timeout %v: %d connections for 80 sequential requests", timeout, conns.Load())
		}
		srv.Close()
	}
}

// Many concurrent gets whose callers pause (some past the timeout), close early or read to
// the end, under -race. The timeout is a second: with 250ms, a CI run under the race
// detector, beside other packages' tests on two cores, once starved a read that long.
func TestS3IdleConcurrentBodies(t *testing.T) {
	const size = 256 << 10
	body := bytes.Repeat([]byte("x"), size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	const timeout = time.Second
	s := readTimeoutStore(t, srv.URL, timeout, nil)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(i)))
			obj, err := s.Get(context.Background(), "k", objectstore.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			buf := make([]byte, 1+rng.Intn(64<<10))
			total := 0
			for {
				if rng.Intn(24) == 0 {
					time.Sleep(time.Duration(rng.Int63n(int64(2 * timeout)))) // often past the timeout
				}
				if rng.Intn(200) == 0 {
					obj.Body.Close() // early close
					return
				}
				n, err := obj.Body.Read(buf)
				total += n
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Errorf("read after %d bytes: %v", total, err)
					break
				}
			}
			obj.Body.Close()
			if total != size && total != 0 {
				t.Errorf("read %d bytes, want %d", total, size)
			}
		}()
	}
	wg.Wait()
}

// Waiting for a connection of the client's own is not the server's silence: with an
// HTTPClient whose transport caps connections per host (MaxConnsPerHost), a put queued
// behind a long, steady get goes through. (Before the trace hooks it failed with "no byte
// from the server" while the server answered everything it was sent at once.)
func TestS3IdleQueuedForAConnectionIsNotSilence(t *testing.T) {
	const chunks = 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"e"`)
		if r.Method != http.MethodGet {
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(10*chunks))
		w.WriteHeader(http.StatusOK)
		for range chunks { // 1 s in all, steady
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CA_BUNDLE", "")
	cli := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	s := readTimeoutStore(t, srv.URL, 300*time.Millisecond, cli)
	ctx := context.Background()
	if _, err := objectstore.PutBytes(ctx, s, "warm", []byte("x"), objectstore.PutCondition{}); err != nil {
		t.Fatal(err) // the bucket check is done
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := objectstore.ReadAll(ctx, s, "slow")
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	_, perr := objectstore.PutBytes(ctx, s, "k", []byte("x"), objectstore.PutCondition{})
	if err := <-done; err != nil {
		t.Fatalf("the slow get: %v", err)
	}
	if perr != nil {
		t.Errorf("a put queued for the only connection behind a steady 1 s get (read timeout 300 ms), the server answering at once: %v", perr)
	}
}

// The time the put's own body source (the caller's reader) takes is not the server's
// silence either: a put whose body pauses for longer than the timeout goes through.
// (Store.Put takes any io.Reader; sluice's own callers pass bytes.)
func TestS3IdleSlowBodySourceIsNotSilence(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"e"`)
	}))
	t.Cleanup(srv.Close)
	s := readTimeoutStore(t, srv.URL, 300*time.Millisecond, nil)
	body := io.MultiReader(strings.NewReader("first half "), slowReader{600 * time.Millisecond, strings.NewReader("second half")})
	_, err := s.Put(context.Background(), "k", body, int64(len("first half second half")), objectstore.PutCondition{})
	if err != nil {
		t.Errorf("a put whose own body paused 600 ms (read timeout 300 ms; the server took each byte at once): %v", err)
	}
}

type slowReader struct {
	d time.Duration
	r io.Reader
}

func (z slowReader) Read(p []byte) (int, error) {
	time.Sleep(z.d)
	return z.r.Read(p)
}

// A get body read to its end lets go of its per-request context (a child of the caller's)
// even if the caller never closes it.
func TestS3IdleContextEndsAtEOF(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", "4")
		io.WriteString(w, "body")
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CA_BUNDLE", "")
	rec := &recordCtx{rt: &http.Transport{}}
	s := readTimeoutStore(t, srv.URL, time.Second, &http.Client{Transport: rec})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	obj, err := s.Get(parent, "k", objectstore.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(obj.Body); err != nil {
		t.Fatal(err)
	}
	if rec.ctx.Load().(*context.Context) != nil && (*rec.ctx.Load().(*context.Context)).Err() == nil {
		t.Errorf("after the body's EOF the request's context is still alive (registered with the caller's until Close or the caller's end)")
	}
	obj.Body.Close()
}

type recordCtx struct {
	rt  http.RoundTripper
	ctx atomic.Value
}

func (z *recordCtx) RoundTrip(r *http.Request) (*http.Response, error) {
	c := r.Context()
	z.ctx.Store(&c)
	return z.rt.RoundTrip(r)
}

// Over HTTP/2 (TLS; the SDK's transport attempts it): a hung request is cut, a slow reader
// and a steady get go through, a put of 3 MiB goes through.
func TestS3IdleHTTP2(t *testing.T) {
	var first atomic.Bool
	first.Store(true)
	hang := make(chan struct{})
	var proto atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/bucket/hung" && first.Swap(false) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("ETag", `"e"`)
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Length", strconv.Itoa(1<<20))
			w.WriteHeader(http.StatusOK)
			for range 8 {
				w.Write(make([]byte, 128<<10))
				w.(http.Flusher).Flush()
				time.Sleep(50 * time.Millisecond)
			}
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() { close(hang); srv.Close() })
	t.Setenv("AWS_CA_BUNDLE", "")
	s := readTimeoutStore(t, srv.URL, 300*time.Millisecond, srv.Client())
	ctx := context.Background()
	if _, _, err := objectstore.ReadAll(ctx, s, "hung"); err != nil {
		t.Errorf("get hung once: %v", err)
	}
	obj, err := s.Get(ctx, "slow", objectstore.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if b, err := io.ReadAll(obj.Body); err != nil || len(b) != 1<<20 {
		t.Errorf("slow reader over h2: %d bytes, %v", len(b), err)
	}
	obj.Body.Close()
	if _, err := objectstore.PutBytes(ctx, s, "p", make([]byte, 3<<20), objectstore.PutCondition{}); err != nil {
		t.Errorf("put over h2: %v", err)
	}
	if p, _ := proto.Load().(string); p != "HTTP/2.0" {
		t.Errorf("proto %q: the test shows nothing", p)
	}
}

// Against the server in SLUICE_TEST_S3_URL (versitygw under scripts/test.sh): puts over 2 MiB
// (Expect: 100-continue) with a short read timeout, and a misspelt bucket.
func TestS3IdleRealServer(t *testing.T) {
	raw := os.Getenv("SLUICE_TEST_S3_URL")
	if raw == "" {
		t.Skip("SLUICE_TEST_S3_URL not set")
	}
	loc, err := storeurl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loc.S3Config()
	cfg.ReadTimeout = time.Second
	s, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, size := range []int{3 << 20, 40 << 20} {
		data := bytes.Repeat([]byte{byte(size)}, size)
		key := fmt.Sprintf("idle-check/%d", size)
		if _, err := objectstore.PutBytes(ctx, s, key, data, objectstore.PutCondition{}); err != nil {
			t.Errorf("put %d: %v", size, err)
			continue
		}
		got, _, err := objectstore.ReadAll(ctx, s, key)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("get %d: %d bytes, %v", size, len(got), err)
		}
		s.Delete(ctx, key)
	}
	cfg.Bucket = "no-such-bucket-idle-check"
	s2, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_, err = objectstore.PutBytes(ctx, s2, "k", []byte("x"), objectstore.IfAbsent())
	if !errors.Is(err, objectstore.ErrNoBucket) {
		t.Errorf("put to a missing bucket: %v", err)
	}
}
