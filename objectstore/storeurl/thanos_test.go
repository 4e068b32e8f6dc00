package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

func TestParseThanosConfigRefuses(t *testing.T) {
	cases := []struct {
		yaml string
		want error
		says string
	}{
		{"type: COS\nconfig:\n  bucket: b\n", storeurl.ErrThanosTypeUnsupported, "no create-only or compare-and-swap"},
		{"type: SWIFT\nconfig: {}\n", storeurl.ErrThanosTypeUnsupported, "SWIFT"},
		{"type: OCI\nconfig: {}\n", storeurl.ErrThanosTypeUnsupported, "OCI"},
		{"config:\n  bucket: b\n", storeurl.ErrInvalidThanosConfig, "no type"},
		{"type: S3\nconfig:\n  bucket: b\n  endpiont: x\n", storeurl.ErrInvalidThanosConfig, "endpiont"},
		{"type: S3\nconfig:\n  endpoint: x\n", storeurl.ErrInvalidThanosConfig, "no bucket"},
		{"type: S3\nconfig:\n  bucket: b\n  sse_config:\n    type: SSE-S3\n", storeurl.ErrInvalidThanosConfig, "sse_config"},
		{"type: S3\nconfig:\n  bucket: b\n  access_key: a\n", storeurl.ErrInvalidThanosConfig, "go together"},
		{"type: GCS\nconfig: {}\n", storeurl.ErrInvalidThanosConfig, "no bucket"},
		{"type: AZURE\nconfig:\n  container: c\n", storeurl.ErrInvalidThanosConfig, "storage_account"},
		{"type: FILESYSTEM\nconfig: {}\n", storeurl.ErrInvalidThanosConfig, "no directory"},
		{"type: FILESYSTEM\nconfig:\n  directory: /x\nprefix: a/../b\n", storeurl.ErrInvalidThanosConfig, "prefix"},
		{"type: S3\nconfig:\n  bucket: b\nbogus: 1\n", storeurl.ErrInvalidThanosConfig, "bogus"},
	}
	for _, c := range cases {
		_, err := storeurl.ParseThanosConfig([]byte(c.yaml))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseThanosConfig(%q): %v, want %v saying %q", c.yaml, err, c.want, c.says)
		}
	}
}

// TestThanosURLRedacts: the store string of a Thanos config shows its type and bucket,
// never its secrets.
func TestThanosURLRedacts(t *testing.T) {
	u, err := storeurl.ThanosURL([]byte("type: S3\nconfig:\n  bucket: logs\n  endpoint: minio:9000\n  access_key: AKIA\n  secret_key: very-secret\nprefix: sluice\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := storeurl.Redact(u)
	if got != "Thanos bucket config (S3 logs at minio:9000, prefix sluice)" || strings.Contains(got, "secret") {
		t.Fatalf("Redact = %q", got)
	}
}

// thanosRoundTrip opens the Thanos config, writes through it, and checks that the store
// opened from viaURL (the same bucket named by a store URL) sees the write where the
// config's prefix puts it.
func thanosRoundTrip(t *testing.T, cfg string, viaURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := storeurl.ThanosURL([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	st, err := storeurl.Open(ctx, u)
	if err != nil {
		t.Fatalf("open %s: %v", storeurl.Redact(u), err)
	}
	defer st.Close()
	key := fmt.Sprintf("k-%d", time.Now().UnixNano())
	v, err := objectstore.PutBytes(ctx, st, key, []byte("via thanos"), objectstore.IfAbsent())
	if err != nil {
		t.Fatalf("create-only put through %s: %v", storeurl.Redact(u), err)
	}
	if _, err := objectstore.PutBytes(ctx, st, key, []byte("again"), objectstore.IfAbsent()); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("second create-only put: %v, want ErrPreconditionFailed", err)
	}
	other, err := storeurl.Open(ctx, viaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	data, info, err := objectstore.ReadAll(ctx, other, "thanos-test/"+key)
	if err != nil || string(data) != "via thanos" || info.Version != v.Version {
		t.Fatalf("the store URL %s reads %q %+v %v, want the config's write", viaURL, data, info, err)
	}
	_ = st.Delete(ctx, key)
}

func TestThanosConfigFilesystem(t *testing.T) {
	dir := t.TempDir()
	thanosRoundTrip(t, fmt.Sprintf("type: FILESYSTEM\nconfig:\n  directory: %s\nprefix: thanos-test\n", dir), "file://"+dir)
}

func TestThanosConfigS3(t *testing.T) {
	raw, loc := storetest.S3URL(t)
	ep, err := url.Parse(loc.Endpoint)
	if err != nil || ep.Host == "" {
		t.Skipf("%s names no endpoint (%q): this test needs a local server", storetest.EnvS3URL, loc.Endpoint)
	}
	storetest.S3(t) // creates the bucket if needed
	lookup := "virtual-hosted"
	if loc.PathStyle {
		lookup = "path"
	}
	cfg := fmt.Sprintf("type: S3\nconfig:\n  bucket: %s\n  endpoint: %s\n  region: %s\n  insecure: %v\n  bucket_lookup_type: %s\n  access_key: %s\n  secret_key: %s\nprefix: %s\n",
		loc.Bucket, ep.Host, loc.Region, ep.Scheme == "http", lookup, os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), strings.Trim(loc.Prefix+"/thanos-test", "/"))
	thanosRoundTrip(t, cfg, raw)
}

func TestThanosConfigGCS(t *testing.T) {
	raw, loc := storetest.CloudURL(t, storetest.EnvGCSURL, "gs")
	storetest.GCS(t) // creates the bucket if needed
	cfg := fmt.Sprintf("type: GCS\nconfig:\n  bucket: %s\nprefix: %s\n", loc.Bucket, strings.Trim(loc.Prefix+"/thanos-test", "/"))
	thanosRoundTrip(t, cfg, raw)
}

func TestThanosConfigAzure(t *testing.T) {
	raw, loc := storetest.CloudURL(t, storetest.EnvAzureURL, "azblob")
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if cs == "" {
		t.Skip("AZURE_STORAGE_CONNECTION_STRING not set")
	}
	account := ""
	for _, part := range strings.Split(cs, ";") {
		if v, ok := strings.CutPrefix(part, "AccountName="); ok {
			account = v
		}
	}
	cfg := fmt.Sprintf("type: AZURE\nconfig:\n  storage_account: %s\n  storage_connection_string: %q\n  container: %s\nprefix: %s\n",
		account, cs, loc.Bucket, strings.Trim(loc.Prefix+"/thanos-test", "/"))
	thanosRoundTrip(t, cfg, raw)
}
