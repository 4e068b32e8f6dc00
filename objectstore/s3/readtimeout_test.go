package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// A server that stops answering (it reads the request, then sends nothing) fails requests
// once ReadTimeout passes without a byte: a put with ErrOutcomeUnknown (the server has the
// request and may apply it), a get with an error, after the SDK's retries. Without it they
// would wait for ever; a context is not needed to end them.
func TestS3ReadTimeoutHungServer(t *testing.T) {
	hung := make(chan struct{})
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && r.URL.Path == "/bucket" {
			return // the bucket check, before the first put, still gets its answer
		}
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hung); srv.Close() })
	s := readTimeoutStore(t, srv.URL, 200*time.Millisecond, nil)

	done := make(chan error, 2)
	go func() {
		_, err := objectstore.PutBytes(context.Background(), s, "k", []byte("body"), objectstore.IfAbsent())
		done <- err
	}()
	go func() {
		_, _, err := objectstore.ReadAll(context.Background(), s, "k")
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a request to a server that never answers succeeded")
			}
			t.Logf("%v", err)
			var oe *objectstore.OpError
			if !errors.As(err, &oe) {
				t.Errorf("%v: not an *objectstore.OpError", err)
			}
			if oe != nil && oe.Op == "put" && !errors.Is(err, objectstore.ErrOutcomeUnknown) {
				t.Errorf("put to a hung server: %v, want ErrOutcomeUnknown", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a request to a hung server still waits after 30 s (read timeout 200 ms)")
		}
	}
	if n.Load() < 2 {
		t.Errorf("%d requests reached the server, want at least 2", n.Load())
	}
}

func TestS3ReadTimeoutValidation(t *testing.T) {
	_, err := s3.New(context.Background(), s3.Config{Bucket: "bucket", Region: "us-east-1", ReadTimeout: -time.Second})
	if err == nil {
		t.Fatal("a negative read timeout was accepted")
	}
	loc, err := storeurl.Parse("s3://bucket/p?region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.S3Config().ReadTimeout; got != s3.DefaultReadTimeout {
		t.Errorf("a store URL's read timeout is %v, want DefaultS3ReadTimeout", got)
	}
}

// A get whose body arrives slowly but steadily, for longer than ReadTimeout in all, is not
// cut: the bound is on silence, not on the whole transfer.
func TestS3ReadTimeoutSlowBodyGoesThrough(t *testing.T) {
	const chunks = 30
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", "300")
		w.WriteHeader(http.StatusOK)
		for range chunks {
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	s := readTimeoutStore(t, srv.URL, time.Second, nil)
	data, _, err := objectstore.ReadAll(context.Background(), s, "k")
	if err != nil || len(data) != 10*chunks {
		t.Fatalf("slow but steady get (%d ms in all, read timeout 1 s): %d bytes, %v", chunks*50, len(data), err)
	}
}

// readTimeoutStore returns an S3 store on a fake server at url with the given read timeout
// (and HTTP client, if not nil).
func readTimeoutStore(t *testing.T, url string, timeout time.Duration, cli *http.Client) *s3.Store {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := s3.New(context.Background(), s3.Config{
		Bucket: "bucket", Region: "us-east-1", Endpoint: url, PathStyle: true, TrustConditionalWrites: true,
		ReadTimeout: timeout, HTTPClient: cli,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A request sent on a connection that sat idle in the pool for most of the read timeout
// still has the whole timeout for its answer: the time before the request does not count.
// (A read deadline on the connection, the SDK's WithReadTimeout, counted it: the put below
// failed with ErrOutcomeUnknown 300 ms in, while the server was answering.)
func TestS3ReadTimeoutIgnoresIdleTimeBefore(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n.Add(1) > 1 {
			time.Sleep(600 * time.Millisecond) // the answer takes 0.6 of the timeout
		}
		w.Header().Set("ETag", `"e"`)
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Length", "4")
			w.Write([]byte("body"))
		}
	}))
	t.Cleanup(srv.Close)
	s := readTimeoutStore(t, srv.URL, time.Second, nil)
	ctx := context.Background()
	for _, op := range []string{"put", "get"} {
		if _, err := objectstore.PutBytes(ctx, s, "warm", []byte("body"), objectstore.PutCondition{}); err != nil {
			t.Fatal(err)
		}
		n.Store(1)
		time.Sleep(700 * time.Millisecond) // the connection idles for 0.7 of the timeout
		var err error
		if op == "put" {
			_, err = objectstore.PutBytes(ctx, s, "k", []byte("body"), objectstore.PutCondition{})
		} else {
			_, _, err = objectstore.ReadAll(ctx, s, "k")
		}
		if err != nil {
			t.Errorf("%s answered in 0.6 s on a connection idle for 0.7 s (read timeout 1 s): %v", op, err)
		}
		if got := n.Load(); got != 2 {
			t.Errorf("%s: %d requests after the warm-up, want 1 (no retry)", op, got-1)
		}
	}
}

// An upload that the server takes slowly but steadily, for longer than the read timeout in
// all, is not cut, although the server sends nothing until it has the whole body. The
// socket buffers are kept small (but above loopback's segment size, so that the window
// reopens as the server reads) so that the upload moves only as the server reads.
func TestS3ReadTimeoutSlowUploadGoesThrough(t *testing.T) {
	const size, chunk = 8 << 20, 512 << 10
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, chunk)
		total := 0
		for {
			k, err := io.ReadFull(r.Body, buf)
			total += k
			if err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond) // 16 chunks: 1.6 s in all
		}
		if total != size {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("ETag", `"e"`)
		w.WriteHeader(http.StatusOK)
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		c.(*net.TCPConn).SetReadBuffer(256 << 10)
		return ctx
	}
	srv.Start()
	t.Cleanup(srv.Close)
	dialer := &net.Dialer{}
	cli := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				c.(*net.TCPConn).SetWriteBuffer(256 << 10)
			}
			return c, err
		},
		WriteBufferSize: 4 << 10,
	}}
	t.Setenv("AWS_CA_BUNDLE", "") // the SDK cannot apply one to a plain http.Client
	s := readTimeoutStore(t, srv.URL, 500*time.Millisecond, cli)
	start := time.Now()
	_, err := objectstore.PutBytes(context.Background(), s, "k", bytes.Repeat([]byte("x"), size), objectstore.PutCondition{})
	if err != nil {
		t.Fatalf("an upload the server took steadily over %v (read timeout 500 ms): %v", time.Since(start).Round(time.Millisecond), err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("the upload took %v: the server did not hold it back, so the test shows nothing", d)
	}
}

// A caller that stops reading a get's body for longer than the read timeout, then goes on,
// gets the whole body: the clock runs only while the caller waits on the server.
func TestS3ReadTimeoutSlowReaderGoesThrough(t *testing.T) {
	const size = 4 << 20
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	s := readTimeoutStore(t, srv.URL, 300*time.Millisecond, nil)
	obj, err := s.Get(context.Background(), "k", objectstore.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(obj.Body, head); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond) // the caller is busy elsewhere
	rest, err := io.ReadAll(obj.Body)
	if err != nil {
		t.Fatalf("reading on after a pause of 0.8 s (read timeout 300 ms): %v", err)
	}
	if got := append(head, rest...); !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, not the body of %d", len(got), size)
	}
}
