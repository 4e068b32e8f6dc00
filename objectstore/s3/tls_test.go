package s3_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// Self-hosted S3-compatible servers (MinIO, Ceph RGW, Garage, SeaweedFS, versitygw) are often
// run with a self-signed or private-CA certificate, or on plain http while the endpoint says
// https. The TLS handshake then fails before a byte of the request is written: the put
// certainly did not happen, so it is a plain error, not ErrOutcomeUnknown (the Store contract
// reserves that for "a timeout or a lost connection after the request was sent").
func TestS3PutTLSFailureIsNotSent(t *testing.T) {
	cases := []struct {
		name string
		srv  func(http.Handler) *httptest.Server
		url  func(*httptest.Server) string
	}{
		{"untrusted certificate", httptest.NewTLSServer, func(s *httptest.Server) string { return s.URL }},
		{"https endpoint on an http server", httptest.NewServer, func(s *httptest.Server) string { return "https://" + s.Listener.Addr().String() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var reached atomic.Int64
			srv := c.srv(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
			defer srv.Close()
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			s, err := s3.New(context.Background(), s3.Config{Bucket: "bucket", Region: "us-east-1", Endpoint: c.url(srv), PathStyle: true, TrustConditionalWrites: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = objectstore.PutBytes(context.Background(), s, "k", []byte("x"), objectstore.IfAbsent())
			if reached.Load() != 0 {
				t.Fatalf("request reached the handler")
			}
			if err == nil || errors.Is(err, objectstore.ErrOutcomeUnknown) {
				t.Fatalf("put that failed in the TLS handshake: %v\nwant a plain error (nothing was sent)", err)
			}
		})
	}
}
