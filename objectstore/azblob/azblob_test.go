package azblob_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestAzureQuotedETags: one object has one version whichever operation saw it (write
// answers and properties carry ETags quoted, listings bare), an If-Match put takes either
// form, and a version that is no ETag of the blob ("0", garbage) fails the condition.
func TestAzureQuotedETags(t *testing.T) {
	st := storetest.Azure(t)
	ctx := ctxFor(t)
	v1, err := objectstore.PutBytes(ctx, st, "k", []byte("one"), objectstore.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v1.Version, `"`) || !strings.HasSuffix(v1.Version, `"`) {
		t.Fatalf("put version %q is not a quoted ETag", v1.Version)
	}
	head, err := st.Head(ctx, "k")
	if err != nil || head.Version != v1.Version {
		t.Fatalf("head: %+v %v, want version %s", head, err, v1.Version)
	}
	page, err := st.List(ctx, "", "", 0)
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Version != v1.Version {
		t.Fatalf("list: %+v %v, want one object at version %s", page, err, v1.Version)
	}
	for _, bad := range []string{"0", "garbage", `"0x0"`, `*`} {
		_, err := objectstore.PutBytes(ctx, st, "k", []byte("x"), objectstore.IfMatch(bad))
		if !errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Errorf("If-Match %q: %v, want ErrPreconditionFailed", bad, err)
		}
		_, err = objectstore.PutBytes(ctx, st, "absent", []byte("x"), objectstore.IfMatch(bad))
		if !errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Errorf("If-Match %q on an absent key: %v, want ErrPreconditionFailed", bad, err)
		}
	}
	bare := strings.Trim(v1.Version, `"`)
	v2, err := objectstore.PutBytes(ctx, st, "k", []byte("two"), objectstore.IfMatch(bare))
	if err != nil {
		t.Fatalf("If-Match with the bare ETag %s: %v", bare, err)
	}
	if data, info, err := objectstore.ReadAll(ctx, st, "k"); err != nil || string(data) != "two" || info.Version != v2.Version {
		t.Fatalf("read back: %q %+v %v", data, info, err)
	}
	if _, err := st.Head(ctx, "absent"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("a refused If-Match put created the key: %v", err)
	}
}

var blobEndpoint = regexp.MustCompile(`BlobEndpoint=([^;]+)`)

// proxied returns a store whose requests go through a storetest.Proxy in front of Azurite.
func proxied(t *testing.T, throttled func(http.ResponseWriter)) (objectstore.Store, *storetest.Proxy) {
	storetest.CloudURL(t, storetest.EnvAzureURL, "azblob")
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	m := blobEndpoint.FindStringSubmatch(cs)
	if m == nil {
		t.Skip("AZURE_STORAGE_CONNECTION_STRING names no BlobEndpoint: these tests need the emulator")
	}
	ep := strings.TrimSuffix(m[1], "/")
	i := strings.Index(strings.TrimPrefix(ep, "http://"), "/")
	if !strings.HasPrefix(ep, "http://") || i < 0 {
		t.Skipf("BlobEndpoint %q is not an emulator's http://host/account", ep)
	}
	host, account := ep[:len("http://")+i], ep[len("http://")+i:]
	p := storetest.NewProxy(t, host, throttled)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", strings.Replace(cs, m[0], "BlobEndpoint="+p.URL+account, 1))
	return storetest.Azure(t), p
}

func isUpload(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodPut && q.Get("restype") == "" && q.Get("comp") == ""
}

// TestAzureLostAnswerIsOutcomeUnknown: a conditional put applied but whose answer was lost
// is ErrOutcomeUnknown, never retried (a retry would answer 412 or 409 against the write's
// own ETag and read as a lost race).
func TestAzureLostAnswerIsOutcomeUnknown(t *testing.T) {
	st, p := proxied(t, nil)
	ctx := ctxFor(t)
	v1, err := objectstore.PutBytes(ctx, st, "k", []byte("one"), objectstore.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range []objectstore.PutCondition{objectstore.IfMatch(v1.Version), objectstore.IfAbsent()} {
		key := "k"
		if cond.IfAbsent {
			key = "fresh"
		}
		uploads := 0
		p.SetDecide(func(r *http.Request) storetest.ProxyAction {
			if isUpload(r) {
				uploads++
				return storetest.LoseAnswer
			}
			return storetest.Forward
		})
		_, err := objectstore.PutBytes(ctx, st, key, []byte("two"), cond)
		p.SetDecide(nil)
		if !errors.Is(err, objectstore.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Fatalf("%+v put with its answer lost: %v, want ErrOutcomeUnknown alone", cond, err)
		}
		if uploads != 1 {
			t.Fatalf("%+v put: %d upload requests, want 1 (puts are never retried)", cond, uploads)
		}
		data, _, err := objectstore.ReadAll(ctx, st, key)
		if err != nil || string(data) != "two" {
			t.Fatalf("%+v: the lost-answer write was not applied (%q, %v): the test proves nothing", cond, data, err)
		}
	}
}

// TestAzureThrottled: 503 ServerBusy is ErrThrottled, not a lost race nor an unknown
// outcome, and nothing is written.
func TestAzureThrottled(t *testing.T) {
	st, p := proxied(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("x-ms-error-code", "ServerBusy")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Operations per second is over the account limit.</Message></Error>`))
	})
	ctx := ctxFor(t)
	v1, err := objectstore.PutBytes(ctx, st, "k", []byte("one"), objectstore.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	p.SetDecide(func(r *http.Request) storetest.ProxyAction {
		if isUpload(r) {
			return storetest.Throttle
		}
		return storetest.Forward
	})
	_, err = objectstore.PutBytes(ctx, st, "k", []byte("two"), objectstore.IfMatch(v1.Version))
	p.SetDecide(nil)
	if !errors.Is(err, objectstore.ErrThrottled) || errors.Is(err, objectstore.ErrPreconditionFailed) || errors.Is(err, objectstore.ErrOutcomeUnknown) {
		t.Fatalf("throttled put: %v, want ErrThrottled alone", err)
	}
	if info, err := st.Head(ctx, "k"); err != nil || info.Version != v1.Version {
		t.Fatalf("after a throttled put: %+v %v, want version %s", info, err, v1.Version)
	}
}

// TestAzureNoContainer: a container that does not exist is ErrNoBucket for every
// operation that can tell (never ErrNotFound, which would read as a missing stream); a
// HEAD's answer has no body to tell by, so Head may say ErrNotFound.
func TestAzureNoContainer(t *testing.T) {
	_, loc := storetest.CloudURL(t, storetest.EnvAzureURL, "azblob")
	ctx := ctxFor(t)
	loc.Bucket = fmt.Sprintf("no-such-container-%d", time.Now().UnixNano())
	st, err := azblob.New(loc.AzureConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(cond objectstore.PutCondition) func() error {
		return func() error {
			_, err := objectstore.PutBytes(ctx, st, "k", []byte("x"), cond)
			return err
		}
	}
	for name, op := range map[string]func() error{
		"get":           func() error { _, err := st.Get(ctx, "k", objectstore.GetOptions{}); return err },
		"head":          func() error { _, err := st.Head(ctx, "k"); return err },
		"list":          func() error { _, err := st.List(ctx, "", "", 0); return err },
		"delete":        func() error { return st.Delete(ctx, "k") },
		"put":           put(objectstore.Unconditional()),
		"put if absent": put(objectstore.IfAbsent()),
		"put if match":  put(objectstore.IfMatch(`"0x8D0"`)),
	} {
		err := op()
		if name == "head" {
			if !errors.Is(err, objectstore.ErrNoBucket) && !errors.Is(err, objectstore.ErrNotFound) {
				t.Errorf("head on a missing container: %v", err)
			}
			continue
		}
		if !errors.Is(err, objectstore.ErrNoBucket) || errors.Is(err, objectstore.ErrNotFound) || errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Errorf("%s on a missing container: %v, want ErrNoBucket alone", name, err)
		}
	}
}

// TestAzureAccessDenied: a wrong account key (Azurite checks signatures) is
// ErrAccessDenied for every operation, so callers fail at once instead of retrying.
func TestAzureAccessDenied(t *testing.T) {
	_, loc := storetest.CloudURL(t, storetest.EnvAzureURL, "azblob")
	storetest.Azure(t) // the container exists
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	key := regexp.MustCompile(`AccountKey=[^;]+`)
	if !key.MatchString(cs) {
		t.Skip("the connection string has no account key to spoil")
	}
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", key.ReplaceAllString(cs, "AccountKey=bm90LXRoZS1rZXk="))
	st, err := azblob.New(loc.AzureConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := ctxFor(t)
	for name, op := range map[string]func() error{
		"get":    func() error { _, err := st.Get(ctx, "k", objectstore.GetOptions{}); return err },
		"head":   func() error { _, err := st.Head(ctx, "k"); return err },
		"list":   func() error { _, err := st.List(ctx, "", "", 0); return err },
		"delete": func() error { return st.Delete(ctx, "k") },
		"put": func() error {
			_, err := objectstore.PutBytes(ctx, st, "k", []byte("x"), objectstore.IfAbsent())
			return err
		},
	} {
		if err := op(); !errors.Is(err, objectstore.ErrAccessDenied) || errors.Is(err, objectstore.ErrOutcomeUnknown) {
			t.Errorf("%s with a wrong key: %v, want ErrAccessDenied", name, err)
		}
	}
}
