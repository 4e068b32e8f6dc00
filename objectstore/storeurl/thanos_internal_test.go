package storeurl

import (
	"testing"

	"github.com/sluice-dev/sluice/objectstore/s3"
)

// TestThanosS3Mapping: Thanos's S3 fields become sluice's S3 config as minio-go reads them:
// the endpoint is host:port over https unless insecure, AWS endpoints mean AWS (with the
// region a regional endpoint names), and auto lookup is path style off AWS.
func TestThanosS3Mapping(t *testing.T) {
	cases := []struct {
		yaml string
		want s3.Config
	}{
		{"type: S3\nconfig:\n  bucket: b\n  endpoint: minio:9000\n  insecure: true\n",
			s3.Config{Bucket: "b", Endpoint: "http://minio:9000", Region: "us-east-1", PathStyle: true}},
		{"type: S3\nconfig:\n  bucket: b\n  endpoint: storage.example.com\n  region: eu-1\n  bucket_lookup_type: virtual-hosted\n",
			s3.Config{Bucket: "b", Endpoint: "https://storage.example.com", Region: "eu-1"}},
		{"type: S3\nconfig:\n  bucket: b\n  endpoint: s3.eu-west-1.amazonaws.com\n",
			s3.Config{Bucket: "b", Region: "eu-west-1"}},
		{"type: S3\nconfig:\n  bucket: b\n  endpoint: s3.amazonaws.com\n  region: us-west-2\n",
			s3.Config{Bucket: "b", Region: "us-west-2"}},
		{"type: S3\nconfig:\n  bucket: b\n  endpoint: s3.amazonaws.com\n  bucket_lookup_type: path\n",
			s3.Config{Bucket: "b", PathStyle: true}},
	}
	for _, c := range cases {
		tc, err := ParseThanosConfig([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		got := thanosS3(*tc.S3, nil)
		if got.Bucket != c.want.Bucket || got.Endpoint != c.want.Endpoint || got.Region != c.want.Region || got.PathStyle != c.want.PathStyle || got.Credentials != nil {
			t.Errorf("%q: got bucket %q endpoint %q region %q path %v creds %v, want %+v", c.yaml, got.Bucket, got.Endpoint, got.Region, got.PathStyle, got.Credentials != nil, c.want)
		}
	}
	tc, err := ParseThanosConfig([]byte("type: S3\nconfig:\n  bucket: b\n  access_key: a\n  secret_key: s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := thanosS3(*tc.S3, nil); got.Credentials == nil {
		t.Error("access_key and secret_key gave no credentials")
	}
}
