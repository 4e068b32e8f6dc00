package s3_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/internal/testlog"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// A server that closes every connection is named in one warning; one that keeps them is not.
func TestServerClosingEveryConnectionIsWarnedOnce(t *testing.T) {
	for _, closing := range []bool{true, false} {
		t.Run(fmt.Sprintf("closing=%v", closing), func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if closing {
					w.Header().Set("Connection", "close")
				}
				w.Header().Set("ETag", `"e"`)
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			var logs testlog.Buffer
			s, err := s3.New(context.Background(), s3.Config{Bucket: "bucket", Region: "us-east-1", Endpoint: srv.URL, PathStyle: true,
				TrustConditionalWrites: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const puts = 40
			for i := range puts {
				if _, err := objectstore.PutBytes(context.Background(), s, fmt.Sprintf("k/%d", i), []byte("x"), objectstore.Unconditional()); err != nil {
					t.Fatal(err)
				}
			}
			n := conns.Load()
			warnings := strings.Count(logs.String(), "closed the connection")
			switch {
			case closing && (n < puts || warnings != 1):
				t.Fatalf("server closing every connection: %d connections for %d puts, %d warnings (want 1):\n%s", n, puts, warnings, logs.String())
			case !closing && (n > 2 || warnings != 0):
				t.Fatalf("server keeping connections: %d connections for %d puts, %d warnings (want 0):\n%s", n, puts, warnings, logs.String())
			}
		})
	}
}
