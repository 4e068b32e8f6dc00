package gcs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/gcs"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestGCSVersionNotAGeneration: a version that is not a generation of the store ("0",
// garbage, an S3 ETag) is refused as a failed condition, and "0" above all is never sent:
// as ifGenerationMatch=0 it would mean "create only", and create an absent object.
func TestGCSVersionNotAGeneration(t *testing.T) {
	st := storetest.GCS(t)
	ctx := ctxFor(t)
	v, err := objectstore.PutBytes(ctx, st, "k", []byte("one"), objectstore.Unconditional())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"0", "garbage", "-1", "0" + v.Version, `"` + v.Version + `"`, "d41d8cd98f00b204e9800998ecf8427e", ""} {
		if bad == "" {
			continue
		}
		_, err := objectstore.PutBytes(ctx, st, "k", []byte("two"), objectstore.IfMatch(bad))
		if !errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Errorf("If-Match %q on a present key: %v, want ErrPreconditionFailed", bad, err)
		}
		_, err = objectstore.PutBytes(ctx, st, "absent", []byte("two"), objectstore.IfMatch(bad))
		if !errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Errorf("If-Match %q on an absent key: %v, want ErrPreconditionFailed", bad, err)
		}
	}
	if data, info, err := objectstore.ReadAll(ctx, st, "k"); err != nil || string(data) != "one" || info.Version != v.Version {
		t.Fatalf("after refused puts: %q %+v %v, want the first write", data, info, err)
	}
	if _, err := st.Head(ctx, "absent"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("an If-Match put on a bad version created the key: %v", err)
	}
}

// proxied returns a store whose requests go through a storetest.Proxy in front of the
// emulator, and the proxy.
func proxied(t *testing.T, throttled func(http.ResponseWriter)) (objectstore.Store, *storetest.Proxy) {
	storetest.CloudURL(t, storetest.EnvGCSURL, "gs")
	host := os.Getenv("STORAGE_EMULATOR_HOST")
	if host == "" {
		t.Skip("STORAGE_EMULATOR_HOST not set: these tests need the emulator")
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	p := storetest.NewProxy(t, host, throttled)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(p.URL, "http://"))
	return storetest.GCS(t), p
}

func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/upload/")
}

// TestGCSLostAnswerIsOutcomeUnknown: a conditional put whose request was applied but whose
// answer was lost is ErrOutcomeUnknown, and is not retried by the client: a retry would be
// answered 412 against the write's own generation and read as a lost race.
func TestGCSLostAnswerIsOutcomeUnknown(t *testing.T) {
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

// TestGCSThrottled: GCS's 429 is ErrThrottled (class throttled), not a lost race, and
// nothing is written.
func TestGCSThrottled(t *testing.T) {
	st, p := proxied(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"code":429,"message":"The object exceeded the rate limit for object mutation operations.","errors":[{"reason":"rateLimitExceeded","message":"rate"}]}}`))
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
	if c := objectstore.ErrorClass(err); c != "throttled" {
		t.Fatalf("throttled put: class %q", c)
	}
	if info, err := st.Head(ctx, "k"); err != nil || info.Version != v1.Version {
		t.Fatalf("after a throttled put: %+v %v, want version %s", info, err, v1.Version)
	}
	if got := objectstore.KeyWritesPerSecond(objectstore.Instrument(st, objectstore.ObserverFunc(func(objectstore.OpEvent) {}))); got != 1 {
		t.Fatalf("KeyWritesPerSecond through a prefix and instrumentation = %v, want GCS's 1", got)
	}
}

// TestGCSNoBucket: on the emulator, a bucket that does not exist is ErrNoBucket for every
// operation that can tell (never ErrNotFound, which would read as a missing stream), and
// ErrNotFound at most for Get and Head, whose 404 the client reports alike.
func TestGCSNoBucket(t *testing.T) {
	_, loc := storetest.CloudURL(t, storetest.EnvGCSURL, "gs")
	ctx := ctxFor(t)
	loc.Bucket = fmt.Sprintf("no-such-bucket-%d", time.Now().UnixNano())
	st, err := gcs.New(ctx, gcs.Config{Bucket: loc.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, op := range storeOps(ctx, st) {
		err := op()
		canTell := name != "get" && name != "head"
		if canTell && (!errors.Is(err, objectstore.ErrNoBucket) || errors.Is(err, objectstore.ErrNotFound)) {
			t.Errorf("%s on a missing bucket: %v, want ErrNoBucket", name, err)
		}
		if !canTell && !errors.Is(err, objectstore.ErrNoBucket) && !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("%s on a missing bucket: %v, want ErrNoBucket or ErrNotFound", name, err)
		}
	}
}

// storeOps returns one call of each operation on key "k" of st, by name.
func storeOps(ctx context.Context, st objectstore.Store) map[string]func() error {
	put := func(cond objectstore.PutCondition) func() error {
		return func() error {
			_, err := objectstore.PutBytes(ctx, st, "k", []byte("x"), cond)
			return err
		}
	}
	return map[string]func() error{
		"get":           func() error { _, err := st.Get(ctx, "k", objectstore.GetOptions{}); return err },
		"head":          func() error { _, err := st.Head(ctx, "k"); return err },
		"list":          func() error { _, err := st.List(ctx, "", "", 0); return err },
		"delete":        func() error { return st.Delete(ctx, "k") },
		"put":           put(objectstore.Unconditional()),
		"put if absent": put(objectstore.IfAbsent()),
		"put if match":  put(objectstore.IfMatch("12345")),
	}
}
