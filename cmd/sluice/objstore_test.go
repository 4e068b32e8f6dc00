package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// TestObjstoreConfigFlags: --objstore.config-file and --objstore.config open the bucket a
// Thanos bucket config names (here a FILESYSTEM one, the very directory --store names), a
// type without conditional writes is refused saying so, and the flags exclude --store.
func TestObjstoreConfigFlags(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := fmt.Sprintf("type: FILESYSTEM\nconfig:\n  directory: %s\nprefix: thanos\n", data)
	cfgFile := filepath.Join(dir, "bucket.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	sluiceOK(t, dir, "one\ntwo\n", nil, "append", "--objstore.config-file", cfgFile, "--create", "s")
	out := sluiceOK(t, dir, "", nil, "read", "--objstore.config", cfg, "s", "--seq-num", "0")
	if !strings.Contains(out, `"body":"one"`) || !strings.Contains(out, `"body":"two"`) {
		t.Fatalf("read through --objstore.config: %s", out)
	}
	out = sluiceOK(t, dir, "", nil, "read", "--store", "file://"+data+"/thanos", "s", "--seq-num", "0")
	if !strings.Contains(out, `"body":"two"`) {
		t.Fatalf("the config's prefix in the same directory, read with --store: %s", out)
	}
	// From the --config file too, as every flag.
	conf := filepath.Join(dir, "sluice.yml")
	if err := os.WriteFile(conf, []byte("objstore.config-file: "+cfgFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := sluiceOK(t, dir, "", nil, "tail", "--config", conf, "s"); !strings.Contains(out, `"seq_num":2`) {
		t.Fatalf("tail through --config's objstore.config-file: %s", out)
	}
	// And from the environment, under a name a shell can set.
	if out := sluiceOK(t, dir, "", []string{"SLUICE_OBJSTORE_CONFIG_FILE=" + cfgFile}, "tail", "s"); !strings.Contains(out, `"seq_num":2`) {
		t.Fatalf("tail through SLUICE_OBJSTORE_CONFIG_FILE: %s", out)
	}
	cos := filepath.Join(dir, "cos.yml")
	if err := os.WriteFile(cos, []byte("type: COS\nconfig:\n  bucket: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"read", "--objstore.config-file", cos, "s"}, []string{"COS", "create-only or compare-and-swap"}},
		{[]string{"read", "--objstore.config", "type: S3\nconfig:\n  bucket: b\n  sse_config: {type: SSE-KMS}\n", "s"}, []string{"sse_config"}},
		{[]string{"read", "--objstore.config-file", filepath.Join(dir, "missing.yml"), "s"}, []string{"missing.yml"}},
		{[]string{"read", "--store", "mem://", "--objstore.config-file", cfgFile, "s"}, []string{"store", "objstore.config-file"}},
		{[]string{"read", "--endpoint", "http://127.0.0.1:1", "--objstore.config-file", cfgFile, "s"}, []string{"endpoint", "objstore.config-file"}},
	} {
		r := sluice(t, dir, "", nil, c.args...)
		if r.code == 0 {
			t.Fatalf("sluice %q: exit 0", c.args)
		}
		for _, w := range c.wants {
			if !strings.Contains(r.stderr, w) {
				t.Fatalf("sluice %q: stderr %q does not name %q", c.args, r.stderr, w)
			}
		}
	}
}

// TestCloudStoresEndToEnd: append, read, gc and the daemon's S2 API on Google Cloud Storage
// and Azure Blob Storage (their emulators, from scripts/test.sh), each through its store URL
// and through a Thanos bucket config naming the same bucket.
func TestCloudStoresEndToEnd(t *testing.T) {
	clouds := []struct {
		name, env, scheme string
		thanos            func(bucket, prefix string) string
	}{
		{"gcs", storetest.EnvGCSURL, "gs", func(bucket, prefix string) string {
			return fmt.Sprintf("type: GCS\nconfig:\n  bucket: %s\nprefix: %s\n", bucket, prefix)
		}},
		{"azure", storetest.EnvAzureURL, "azblob", func(bucket, prefix string) string {
			cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
			account := ""
			for _, part := range strings.Split(cs, ";") {
				if v, ok := strings.CutPrefix(part, "AccountName="); ok {
					account = v
				}
			}
			return fmt.Sprintf("type: AZURE\nconfig:\n  storage_account: %s\n  storage_connection_string: %q\n  container: %s\nprefix: %s\n", account, cs, bucket, prefix)
		}},
	}
	for _, cl := range clouds {
		t.Run(cl.name, func(t *testing.T) {
			_, loc := storetest.CloudURL(t, cl.env, cl.scheme)
			// A prefix of the test's own; the suite's helper makes the bucket and cleans up.
			if cl.scheme == "gs" {
				storetest.GCS(t)
			} else {
				storetest.Azure(t)
			}
			prefix := strings.Trim(fmt.Sprintf("%s/cli-%s-%d", loc.Prefix, t.Name(), os.Getpid()), "/")
			prefix = strings.ReplaceAll(prefix, "TestCloudStoresEndToEnd/", "")
			storeURL := cl.scheme + "://" + loc.Bucket + "/" + prefix
			t.Cleanup(func() {
				ctx := context.Background()
				st, err := storeurl.Open(ctx, storeURL)
				if err != nil {
					t.Errorf("cleaning up %s: %v", storeURL, err)
					return
				}
				defer st.Close()
				if err := objectstore.ListAll(ctx, st, "", func(o objectstore.ObjectInfo) error { return st.Delete(ctx, o.Key) }); err != nil {
					t.Errorf("cleaning up %s: %v", storeURL, err)
				}
			})
			dir := t.TempDir()
			sluiceOK(t, dir, "a\nb\n", nil, "append", "--store", storeURL, "--create", "s")
			out := sluiceOK(t, dir, "", nil, "read", "--objstore.config", cl.thanos(loc.Bucket, prefix), "s", "--seq-num", "0")
			if !strings.Contains(out, `"body":"a"`) || !strings.Contains(out, `"body":"b"`) {
				t.Fatalf("read through the Thanos config: %s", out)
			}
			sluiceOK(t, dir, "", nil, "gc", "--once", "--store", storeURL)

			base := startServe(t, dir, nil, "--store", storeURL)
			do := apiCaller(t, base, "cloud-basin")
			if code, body := do("POST", "/v1/basins", `{"basin":"cloud-basin"}`); code != 201 {
				t.Fatalf("create basin: %d %s", code, body)
			}
			if code, body := do("PUT", "/streams/events", `{"stream":"events","config":{}}`); code/100 != 2 {
				t.Fatalf("create stream: %d %s", code, body)
			}
			for i := range 3 {
				if code, body := do("POST", "/streams/events/records", fmt.Sprintf(`{"records":[{"body":"http-%d"}]}`, i)); code != 200 || !strings.Contains(body, fmt.Sprintf(`"end":{"seq_num":%d`, i+1)) {
					t.Fatalf("append %d: %d %s", i, code, body)
				}
			}
			out = sluiceOK(t, dir, "", nil, "read", "--store", storeURL, "--basin", "cloud-basin", "events", "--seq-num", "0")
			for i := range 3 {
				if !strings.Contains(out, fmt.Sprintf(`"body":"http-%d"`, i)) {
					t.Fatalf("CLI read of the daemon's appends: %s", out)
				}
			}
			code, body := do("GET", "/streams/events/records?seq_num=0&count=10", "")
			if code != 200 || !strings.Contains(body, "http-2") {
				t.Fatalf("API read: %d %s", code, body)
			}
		})
	}
}
