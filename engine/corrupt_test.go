package engine_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/server"
)

// Corrupt objects and manifests: reading or appending to a damaged stream gives a typed error
// (manifest.ErrCorrupt, consumer.ErrCorrupt wrapping batchfmt.ErrCorrupt,
// consumer.ErrMissingObject, objectstore.ErrCorrupt for a damaged file-store header) and HTTP
// 500 "storage", never a panic or a hang, and every other stream of the store reads and
// appends as before.

// damage rewrites one object of the store with mutate applied to its bytes.
type damager func(t *testing.T, key string, mutate func([]byte) []byte)

// onDisk damages a file-store object in place, bypassing the store: the object bytes follow
// the file store's 24-byte header, which stays intact unless header is set.
func onDisk(dir string, header bool) damager {
	return func(t *testing.T, key string, mutate func([]byte) []byte) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(key))
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		const hdr = 24
		var out []byte
		if header {
			out = mutate(raw)
		} else {
			out = append(append([]byte(nil), raw[:hdr]...), mutate(append([]byte(nil), raw[hdr:]...))...)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// viaStore damages an object by overwriting it through the store (for S3).
func viaStore(st objectstore.Store) damager {
	return func(t *testing.T, key string, mutate func([]byte) []byte) {
		t.Helper()
		ctx := context.Background()
		data, _, err := objectstore.ReadAll(ctx, st, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := objectstore.PutBytes(ctx, st, key, mutate(data), objectstore.Unconditional()); err != nil {
			t.Fatal(err)
		}
	}
}

// mutations: each returns a changed copy.
func mutations(r *rand.Rand) map[string]func([]byte) []byte {
	return map[string]func([]byte) []byte{
		"flip a bit": func(b []byte) []byte {
			b = append([]byte(nil), b...)
			i := r.IntN(len(b))
			b[i] ^= 1 << r.IntN(8)
			return b
		},
		"truncate": func(b []byte) []byte { return append([]byte(nil), b[:r.IntN(len(b))]...) },
		"garbage": func(b []byte) []byte {
			g := make([]byte, 1+r.IntN(2*len(b)))
			for i := range g {
				g[i] = byte(r.Uint32())
			}
			return g
		},
		"empty":    func([]byte) []byte { return nil },
		"trailing": func(b []byte) []byte { return append(append([]byte(nil), b...), 0) },
	}
}

// basin holds the test streams (the HTTP API names streams within a basin).
const basin = "corrupt-basin"

func newEngine(t *testing.T, st objectstore.Store) *engine.Engine {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.Store = st
	cfg.Producer.Backoff = manifest.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond, Multiplier: 2}
	cfg.Consumer.Backoff = cfg.Producer.Backoff
	cfg.Consumer.FetchAttempts = 2
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateBasin(context.Background(), basin, nil); err != nil && !errors.Is(err, engine.ErrBasinExists) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.Close(ctx)
	})
	return e
}

func appendN(t *testing.T, e *engine.Engine, stream string, n int) {
	t.Helper()
	in := batchfmt.AppendInput{}
	for i := range n {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte(fmt.Sprintf("%s-%d", stream, i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Stream(ctx, basin, stream); errors.Is(err, manifest.ErrNotExist) {
		if _, err := e.CreateStream(ctx, basin, stream, manifest.DefaultConfig()); err != nil {
			t.Fatalf("create %s: %v", stream, err)
		}
	}
	if _, err := e.Append(ctx, basin, stream, in); err != nil {
		t.Fatalf("append to %s: %v", stream, err)
	}
}

// readAll reads a stream from 0 to its tail through the engine.
func readAll(e *engine.Engine, stream string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.Open(ctx, basin, stream, consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []string
	for {
		b, err := s.Next(ctx)
		if errors.Is(err, consumer.ErrDone) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for _, r := range b.Records {
			out = append(out, string(r.Body))
		}
	}
}

// typedCorruption reports whether err is one of the corruption classes.
func typedCorruption(err error) bool {
	return errors.Is(err, manifest.ErrCorrupt) || errors.Is(err, consumer.ErrCorrupt) ||
		errors.Is(err, batchfmt.ErrCorrupt) || errors.Is(err, consumer.ErrMissingObject) ||
		errors.Is(err, objectstore.ErrCorrupt) || errors.Is(err, manifest.ErrUnsupportedVersion)
}

func httpStatus(t *testing.T, srv http.Handler, target string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
	defer cancel()
	req.Header.Set("S2-Basin", basin)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req.WithContext(ctx))
	return rec.Code, rec.Body.String()
}

// runCorruption damages, on a store holding a healthy stream and a victim stream, first a
// batch object of the victim, then its manifest, with every mutation; it checks the typed
// errors and that the healthy stream is untouched.
func runCorruption(t *testing.T, st objectstore.Store, damage damager, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	// In a fixed order: every mutation draws from r, so map order would defeat the seed.
	ms := mutations(r)
	for _, name := range slices.Sorted(maps.Keys(ms)) {
		mutate := ms[name]
		for _, target := range []string{"batch", "manifest"} {
			t.Run(target+"/"+name, func(t *testing.T) {
				e := newEngine(t, st)
				healthy := "healthy-" + strings.ReplaceAll(target+name, " ", "-")
				victim := "victim-" + strings.ReplaceAll(target+name, " ", "-")
				appendN(t, e, healthy, 5)
				appendN(t, e, victim, 5)
				appendN(t, e, victim, 5)
				loc, err := e.Locate(basin, victim)
				if err != nil {
					t.Fatal(err)
				}
				key := loc.ManifestKey()
				if target == "batch" {
					snap, err := e.Stream(context.Background(), basin, victim)
					if err != nil {
						t.Fatal(err)
					}
					key = snap.State.Entries[r.IntN(len(snap.State.Entries))].Key
				}
				damage(t, key, mutate)

				// A fresh engine (no cached state) sees the damage.
				e2 := newEngine(t, st)
				// An empty manifest is how the collector marks a stream being deleted (package
				// gc, delete_on_empty): it reads as a deleted stream, not as corruption.
				deleted := target == "manifest" && name == "empty"
				_, err = readAll(e2, victim)
				if deleted {
					if !errors.Is(err, consumer.ErrStreamNotFound) {
						t.Errorf("read of a stream whose manifest is empty: %v, want ErrStreamNotFound", err)
					}
				} else if !typedCorruption(err) {
					t.Errorf("read of the damaged stream: %v, want a typed corruption error", err)
				}
				srv, err := server.New(e2.S2())
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				code, body := httpStatus(t, srv, "/v1/streams/"+victim+"/records?seq_num=0&count=100")
				if deleted {
					if code != 404 {
						t.Errorf("HTTP read of a stream whose manifest is empty: %d %s, want 404", code, body)
					}
				} else if code != 500 || !strings.Contains(body, `"storage"`) {
					t.Errorf("HTTP read of the damaged stream: %d %s, want 500 storage", code, body)
				}
				if target == "manifest" && !deleted {
					if _, err := e2.Tail(context.Background(), basin, victim); !typedCorruption(err) {
						t.Errorf("tail of a damaged manifest: %v", err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					_, err := e2.Append(ctx, basin, victim, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("after")}}})
					cancel()
					if err == nil || errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("append to a damaged manifest: %v, want a prompt error", err)
					}
				}
				// The healthy stream reads and appends as before.
				got, err := readAll(e2, healthy)
				if err != nil || len(got) != 5 || got[0] != healthy+"-0" {
					t.Errorf("healthy stream after the damage: %q, %v", got, err)
				}
				appendN(t, e2, healthy, 1)
				if got, err := readAll(e2, healthy); err != nil || len(got) != 6 {
					t.Errorf("healthy stream after an append: %d records, %v", len(got), err)
				}
				if code, body := httpStatus(t, srv, "/v1/streams/"+healthy+"/records?seq_num=0&count=100"); code != 200 {
					t.Errorf("HTTP read of the healthy stream: %d %s", code, body)
				}
			})
		}
	}
}

func TestCorruptionOnDisk(t *testing.T) {
	dir := t.TempDir()
	st, err := file.New(dir, file.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runCorruption(t, st, onDisk(dir, false), testseed.Get(t))
}

// TestCorruptionOfFileHeader damages the file store's own header (magic, version): the store
// reports objectstore.ErrCorrupt.
func TestCorruptionOfFileHeader(t *testing.T) {
	dir := t.TempDir()
	st, err := file.New(dir, file.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEngine(t, st)
	appendN(t, e, "healthy", 3)
	appendN(t, e, "victim", 3)
	snap, err := e.Stream(context.Background(), basin, "victim")
	if err != nil {
		t.Fatal(err)
	}
	onDisk(dir, true)(t, snap.State.Entries[0].Key, func(b []byte) []byte {
		b = append([]byte(nil), b...)
		b[2] ^= 0xff
		return b
	})
	e2 := newEngine(t, st)
	if _, err := readAll(e2, "victim"); !typedCorruption(err) {
		t.Errorf("read with a damaged file header: %v", err)
	}
	if got, err := readAll(e2, "healthy"); err != nil || len(got) != 3 {
		t.Errorf("healthy stream: %q, %v", got, err)
	}
}

func TestCorruptionOnS3(t *testing.T) {
	st := storetest.S3(t)
	runCorruption(t, st, viaStore(st), testseed.Get(t))
}

// TestMissingObject: a batch object the manifest references is gone (deleted by hand): the
// read fails with consumer.ErrMissingObject naming it, other streams are unaffected.
func TestMissingObject(t *testing.T) {
	st := objectstore.NewMemStore()
	e := newEngine(t, st)
	appendN(t, e, "healthy", 3)
	appendN(t, e, "victim", 3)
	snap, err := e.Stream(context.Background(), basin, "victim")
	if err != nil {
		t.Fatal(err)
	}
	key := snap.State.Entries[0].Key
	if err := st.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	_, err = readAll(e, "victim")
	var oe *consumer.ObjectError
	if !errors.Is(err, consumer.ErrMissingObject) || !errors.As(err, &oe) || oe.Key != key {
		t.Errorf("read with a missing object: %v", err)
	}
	if got, err := readAll(e, "healthy"); err != nil || len(got) != 3 {
		t.Errorf("healthy stream: %q, %v", got, err)
	}
}
