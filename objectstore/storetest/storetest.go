// Package storetest is the conformance suite that every objectstore.Store backend passes, and
// the helpers that hand tests a fresh store on each backend.
//
// Run a backend through the suite with
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) objectstore.Store { return newMyStore(t) })
//	}
//
// newStore is called once per subtest and must return an empty store that the subtest owns; the
// suite closes it when the subtest ends (a second Close must be harmless).
//
// What the suite checks: round trips of empty, small and large (>= 64 MiB) objects; range reads;
// Head agreeing with Get, Put and List; a create-only race (N goroutines, exactly one winner);
// a compare-and-swap race (N goroutines x R rounds, exactly one winner per round, the stored
// content is the winner's); stale versions rejected; If-Match on a missing key rejected; delete
// then create; Get with IfNoneMatch; listing order (byte order, including keys like "a/b" and
// "a-b" that directory walks get wrong) and paging past 1000 keys; keys with spaces, unicode and
// slashes; invalid keys; bodies shorter or longer than the declared size; error classes, each
// error matching exactly one sentinel.
//
// Randomness is seeded. The seed is logged; set SLUICE_SEED to replay a run.
//
// Helpers: File(t) returns a file store in t.TempDir(); S3(t) returns a store on the server named
// by SLUICE_TEST_S3_URL under a prefix unique to the test, creating the bucket if needed and
// deleting the test's objects afterwards. When SLUICE_TEST_S3_URL is unset, S3 skips the test,
// unless CI=true, when it fails it.
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
)

// Options tune the suite for a backend's documented differences.
type Options struct {
	// ContentVersions: the backend's version is a hash of the content (S3 ETags), so rewriting
	// identical bytes may keep the version. The suite then only writes distinct contents where
	// it expects the version to change, and skips the "same bytes, new version" check.
	ContentVersions bool
	// RefusedKeys reports keys the backend refuses with ErrInvalidKey although ValidateKey
	// accepts them (Azure Blob Storage turns '\' into '/', so its store refuses keys with
	// a backslash). The suite checks that they are refused, and leaves them out elsewhere.
	RefusedKeys func(key string) bool
	// SkipLarge skips the >= 64 MiB round trip (only under testing.Short()).
	SkipLarge bool
}

// Run runs the conformance suite with default options.
func Run(t *testing.T, newStore func(t *testing.T) objectstore.Store) {
	t.Helper()
	RunWith(t, Options{}, newStore)
}

// RunWith runs the conformance suite with opts.
func RunWith(t *testing.T, opts Options, newStore func(t *testing.T) objectstore.Store) {
	t.Helper()
	seed := Seed(t)
	s := &suite{opts: opts, seed: seed}
	tests := []struct {
		name string
		fn   func(t *testing.T, st objectstore.Store)
	}{
		{"RoundTripEmpty", s.roundTripEmpty},
		{"RoundTripSmall", s.roundTripSmall},
		{"RoundTripLarge", s.roundTripLarge},
		{"RangeReads", s.rangeReads},
		{"OverwriteChangesVersion", s.overwriteChangesVersion},
		{"CreateOnly", s.createOnly},
		{"CreateOnlyRace", s.createOnlyRace},
		{"CompareAndSwapRace", s.casRace},
		{"StaleVersionRejected", s.staleVersion},
		{"IfMatchMissingKey", s.ifMatchMissing},
		{"DeleteThenCreate", s.deleteThenCreate},
		{"GetIfNoneMatch", s.getIfNoneMatch},
		{"ListOrder", s.listOrder},
		{"ListPagingPast1000", s.listPaging},
		{"OddKeys", s.oddKeys},
		{"InvalidKeys", s.invalidKeys},
		{"BodySizeMismatch", s.bodySizeMismatch},
		{"ErrorClasses", s.errorClasses},
		{"ContextCanceled", s.contextCanceled},
		{"Closed", s.closed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			t.Cleanup(func() { _ = st.Close() })
			tc.fn(t, st)
		})
	}
}

// Seed returns the seed for this test's randomness, from SLUICE_SEED if set (package
// internal/testseed), and logs it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	return testseed.Get(t)
}

type suite struct {
	opts Options
	seed uint64
}

func (s *suite) rng(t *testing.T) *rand.Rand {
	h := sha256.Sum256([]byte(t.Name()))
	var x uint64
	for _, b := range h[:8] {
		x = x<<8 | uint64(b)
	}
	return rand.New(rand.NewPCG(s.seed, x))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// sentinels are the error classes of package objectstore.
var sentinels = []error{
	objectstore.ErrNotFound, objectstore.ErrPreconditionFailed, objectstore.ErrNotModified,
	objectstore.ErrOutcomeUnknown, objectstore.ErrInvalidKey, objectstore.ErrClosed,
	objectstore.ErrCorrupt, objectstore.ErrThrottled,
}

// wantClass fails t unless err matches want and no other sentinel.
func wantClass(t *testing.T, err, want error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %v", what, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want an error matching %v", what, err, want)
	}
	for _, s := range sentinels {
		if s != want && errors.Is(err, s) {
			t.Fatalf("%s: error %v matches both %v and %v", what, err, want, s)
		}
	}
}

func mustPut(t *testing.T, st objectstore.Store, key string, data []byte, cond objectstore.PutCondition) objectstore.ObjectInfo {
	t.Helper()
	info, err := objectstore.PutBytes(ctxFor(t), st, key, data, cond)
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	if info.Key != key || info.Size != int64(len(data)) || info.Version == "" {
		t.Fatalf("put %q returned %+v, want key %q, size %d and a version", key, info, key, len(data))
	}
	return info
}

func mustGet(t *testing.T, st objectstore.Store, key string) ([]byte, objectstore.ObjectInfo) {
	t.Helper()
	data, info, err := objectstore.ReadAll(ctxFor(t), st, key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return data, info
}

func checkInfo(t *testing.T, what string, got, want objectstore.ObjectInfo) {
	t.Helper()
	if got.Key != want.Key || got.Size != want.Size || got.Version != want.Version {
		t.Fatalf("%s: got {key %q size %d version %q}, want {key %q size %d version %q}",
			what, got.Key, got.Size, got.Version, want.Key, want.Size, want.Version)
	}
	if got.ModTime.IsZero() {
		t.Fatalf("%s: zero modification time", what)
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
