package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// An S3 server that ignores If-None-Match and If-Match (every PUT overwrites): stream
// create and append fail at once, naming the server and what sluice needs, and write no
// manifest. (append used to retry its uploads for the whole delivery timeout.)
func TestServerIgnoringConditions(t *testing.T) {
	var mu sync.Mutex
	objs := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/bucket/")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodHead && r.URL.Path == "/bucket":
		case r.Method == http.MethodPut:
			objs[key], _ = io.ReadAll(r.Body)
			w.Header().Set("ETag", `"e"`)
		case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			b, ok := objs[key]
			if !ok {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>fake</Message></Error>`)
				return
			}
			w.Header().Set("ETag", `"e"`)
			w.Write(b)
		case r.Method == http.MethodDelete:
			delete(objs, key)
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	env := []string{"AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}
	store := "s3://bucket/p?endpoint=" + srv.URL + "&region=us-east-1&path_style=true"
	for _, args := range [][]string{{"stream", "create", "s1"}, {"append", "s2", "--create"}} {
		start := time.Now()
		r := sluice(t, t.TempDir(), "x\n", env, append(args, "--store", store)...)
		if r.code != 1 || !strings.Contains(r.stderr, "the server at "+srv.URL+" (bucket bucket) ignores") || !strings.Contains(r.stderr, "needs an S3 server that honours If-None-Match and If-Match") {
			t.Errorf("sluice %v on a server ignoring conditions: exit %d, stderr %q", args, r.code, r.stderr)
		}
		t.Logf("sluice %v: %v, %q", args, time.Since(start).Round(time.Millisecond), r.stderr)
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("sluice %v took %v to fail", args, d)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for key := range objs {
		if strings.HasSuffix(key, "/manifest") {
			t.Errorf("a manifest was written: %s", key)
		}
	}
}
