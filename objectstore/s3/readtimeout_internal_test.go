package s3

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// The S3 client applies the defaults mode's connect and TLS-handshake timeouts
// (AWS_DEFAULTS_MODE=standard, in-region, ...: 3.1 s) only to a *awshttp.BuildableClient,
// so the watchdog wraps the client the S3 client settled on, not the configuration's: the
// timeouts hold with and without read_timeout (they were dropped when it wrapped the
// configuration's client).
func TestS3IdleKeepsDefaultsModeTimeouts(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_DEFAULTS_MODE", "standard")
	for _, rt := range []time.Duration{0, DefaultReadTimeout} {
		s, err := New(context.Background(), Config{Bucket: "bucket", Region: "us-east-1", Endpoint: "http://127.0.0.1:1", PathStyle: true, ReadTimeout: rt})
		if err != nil {
			t.Fatal(err)
		}
		var cli aws.HTTPClient = s.client.Options().HTTPClient
		if w, ok := cli.(*idleWatch); ok {
			cli = w.next
		}
		b, ok := cli.(*awshttp.BuildableClient)
		if !ok {
			t.Fatalf("read timeout %v: client %T", rt, cli)
		}
		dial, tls := b.GetDialer().Timeout, b.GetTransport().TLSHandshakeTimeout
		t.Logf("read timeout %v: connect timeout %v, TLS handshake timeout %v", rt, dial, tls)
		if dial != 3100*time.Millisecond || tls != 3100*time.Millisecond {
			t.Errorf("read timeout %v, AWS_DEFAULTS_MODE=standard: connect timeout %v and TLS handshake timeout %v, want 3.1s (the mode's)", rt, dial, tls)
		}
	}
}
