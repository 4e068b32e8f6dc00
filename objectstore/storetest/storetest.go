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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// SkipLarge skips the >= 64 MiB round trip (only under testing.Short()).
	SkipLarge bool
}

// LargeSize is the size of the large round-trip object.
const LargeSize = 64<<20 + 12345

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
	objectstore.ErrCorrupt,
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

func (s *suite) roundTrip(t *testing.T, st objectstore.Store, key string, data []byte) {
	t.Helper()
	put := mustPut(t, st, key, data, objectstore.Unconditional())
	got, info := mustGet(t, st, key)
	if !bytes.Equal(got, data) {
		t.Fatalf("get %q: %d bytes differ from the %d put", key, len(got), len(data))
	}
	checkInfo(t, "get", info, put)
	head, err := st.Head(ctxFor(t), key)
	if err != nil {
		t.Fatalf("head %q: %v", key, err)
	}
	checkInfo(t, "head", head, put)
}

func (s *suite) roundTripEmpty(t *testing.T, st objectstore.Store) {
	s.roundTrip(t, st, "empty", nil)
	s.roundTrip(t, st, "dir/empty", []byte{})
}

func (s *suite) roundTripSmall(t *testing.T, st objectstore.Store) {
	r := s.rng(t)
	for _, n := range []int{1, 17, 4096, 100_003} {
		s.roundTrip(t, st, fmt.Sprintf("small/%d", n), randBytes(r, n))
	}
}

// patternReader yields n pseudo-random bytes without holding them in memory. Byte i depends
// only on the seed and i, so any range of the stream can be regenerated.
type patternReader struct {
	seed uint64
	pos  int64
	left int64
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	for i := 0; i < len(b); {
		pos := p.pos + int64(i)
		if pos&7 == 0 && len(b)-i >= 8 {
			binary.LittleEndian.PutUint64(b[i:], splitmix(p.seed^uint64(pos>>3)))
			i += 8
			continue
		}
		b[i] = byte(splitmix(p.seed^uint64(pos>>3)) >> (8 * (pos & 7)))
		i++
	}
	p.pos += int64(len(b))
	p.left -= int64(len(b))
	return len(b), nil
}

func (s *suite) roundTripLarge(t *testing.T, st objectstore.Store) {
	if s.opts.SkipLarge && testing.Short() {
		t.Skip("large round trip skipped under -short")
	}
	ctx := ctxFor(t)
	seed := s.seed ^ 0x9e3779b97f4a7c15
	want := sha256.New()
	if _, err := io.Copy(want, &patternReader{seed: seed, left: LargeSize}); err != nil {
		t.Fatal(err)
	}
	info, err := st.Put(ctx, "large/object", &patternReader{seed: seed, left: LargeSize}, LargeSize, objectstore.IfAbsent())
	if err != nil {
		t.Fatalf("put large: %v", err)
	}
	if info.Size != LargeSize {
		t.Fatalf("put large: size %d, want %d", info.Size, LargeSize)
	}
	obj, err := st.Get(ctx, "large/object", objectstore.GetOptions{})
	if err != nil {
		t.Fatalf("get large: %v", err)
	}
	defer obj.Body.Close()
	checkInfo(t, "get large", obj.ObjectInfo, info)
	got := sha256.New()
	n, err := io.Copy(got, obj.Body)
	if err != nil {
		t.Fatalf("read large: %v after %d bytes", err, n)
	}
	if n != LargeSize || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("large object: read %d bytes, sha256 %x, want %d bytes, sha256 %x", n, got.Sum(nil), LargeSize, want.Sum(nil))
	}
	// A range deep inside the large object.
	const off, length = 40<<20 + 7, 1 << 20
	rg, err := st.Get(ctx, "large/object", objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: off, Length: length}})
	if err != nil {
		t.Fatalf("range get large: %v", err)
	}
	part, err := io.ReadAll(rg.Body)
	rg.Body.Close()
	if err != nil {
		t.Fatalf("range read large: %v", err)
	}
	pr := &patternReader{seed: seed, left: LargeSize}
	if _, err := io.CopyN(io.Discard, pr, off); err != nil {
		t.Fatal(err)
	}
	wantPart := make([]byte, length)
	if _, err := io.ReadFull(pr, wantPart); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, wantPart) {
		t.Fatalf("range [%d, +%d) of large object: %d bytes, differ from expected", off, length, len(part))
	}
}

func (s *suite) rangeReads(t *testing.T, st objectstore.Store) {
	r := s.rng(t)
	data := randBytes(r, 1000)
	put := mustPut(t, st, "ranged", data, objectstore.Unconditional())
	cases := []struct{ off, length int64 }{
		{0, -1}, {0, 1000}, {0, 1}, {0, 10}, {10, 20}, {999, 1}, {999, -1}, {500, 10_000},
		{1000, -1}, {1000, 5}, {5000, 5}, {0, 0}, {300, 0},
	}
	for i := 0; i < 20; i++ {
		cases = append(cases, struct{ off, length int64 }{r.Int64N(1100), r.Int64N(1100) - 1})
	}
	for _, c := range cases {
		obj, err := st.Get(ctxFor(t), "ranged", objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: c.off, Length: c.length}})
		if err != nil {
			t.Fatalf("range [%d,+%d): %v", c.off, c.length, err)
		}
		got, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatalf("range [%d,+%d): read: %v", c.off, c.length, err)
		}
		lo := min(c.off, int64(len(data)))
		hi := int64(len(data))
		if c.length >= 0 {
			hi = min(hi, lo+c.length)
		}
		if !bytes.Equal(got, data[lo:hi]) {
			t.Fatalf("range [%d,+%d): got %d bytes, want data[%d:%d]", c.off, c.length, len(got), lo, hi)
		}
		checkInfo(t, fmt.Sprintf("range [%d,+%d) info", c.off, c.length), obj.ObjectInfo, put)
	}
	// Ranges of an empty object are empty.
	mustPut(t, st, "ranged-empty", nil, objectstore.Unconditional())
	for _, c := range []struct{ off, length int64 }{{0, -1}, {0, 10}, {3, 1}} {
		obj, err := st.Get(ctxFor(t), "ranged-empty", objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: c.off, Length: c.length}})
		if err != nil {
			t.Fatalf("empty object range [%d,+%d): %v", c.off, c.length, err)
		}
		got, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil || len(got) != 0 || obj.Size != 0 {
			t.Fatalf("empty object range [%d,+%d): got %d bytes, size %d, err %v", c.off, c.length, len(got), obj.Size, err)
		}
	}
	// A range of a missing object is not found.
	_, err := st.Get(ctxFor(t), "ranged-missing", objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: 0, Length: 1}})
	wantClass(t, err, objectstore.ErrNotFound, "range of missing key")
}

func (s *suite) overwriteChangesVersion(t *testing.T, st objectstore.Store) {
	seen := map[string]int{}
	for i := 0; i < 5; i++ {
		info := mustPut(t, st, "ow", []byte("content "+strconv.Itoa(i)), objectstore.Unconditional())
		if j, dup := seen[info.Version]; dup {
			t.Fatalf("write %d got version %q, already returned for write %d", i, info.Version, j)
		}
		seen[info.Version] = i
		got, _ := mustGet(t, st, "ow")
		if string(got) != "content "+strconv.Itoa(i) {
			t.Fatalf("after write %d read %q", i, got)
		}
	}
	if s.opts.ContentVersions {
		return
	}
	a := mustPut(t, st, "same", []byte("same bytes"), objectstore.Unconditional())
	b := mustPut(t, st, "same", []byte("same bytes"), objectstore.Unconditional())
	if a.Version == b.Version {
		t.Fatalf("two writes of the same bytes share version %q", a.Version)
	}
}

func (s *suite) createOnly(t *testing.T, st objectstore.Store) {
	first := mustPut(t, st, "co", []byte("first"), objectstore.IfAbsent())
	_, err := objectstore.PutBytes(ctxFor(t), st, "co", []byte("second"), objectstore.IfAbsent())
	wantClass(t, err, objectstore.ErrPreconditionFailed, "create-only over an existing key")
	got, info := mustGet(t, st, "co")
	if string(got) != "first" {
		t.Fatalf("create-only overwrote: read %q", got)
	}
	checkInfo(t, "after failed create", info, first)
	// Contradictory conditions are refused without effect.
	_, err = objectstore.PutBytes(ctxFor(t), st, "co2", []byte("x"), objectstore.PutCondition{IfAbsent: true, IfMatch: first.Version})
	if err == nil {
		t.Fatal("put with both IfAbsent and IfMatch succeeded")
	}
	if _, err := st.Head(ctxFor(t), "co2"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("refused put left an object: head: %v", err)
	}
}

const (
	raceWorkers = 8
	raceRounds  = 12
)

func (s *suite) createOnlyRace(t *testing.T, st objectstore.Store) {
	for round := 0; round < 3; round++ {
		key := fmt.Sprintf("race/create/%d", round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wins := make([]bool, raceWorkers)
		errs := make([]error, raceWorkers)
		infos := make([]objectstore.ObjectInfo, raceWorkers)
		for w := 0; w < raceWorkers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				info, err := objectstore.PutBytes(ctxFor(t), st, key, []byte(fmt.Sprintf("worker %d", w)), objectstore.IfAbsent())
				infos[w], errs[w], wins[w] = info, err, err == nil
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for w := 0; w < raceWorkers; w++ {
			switch {
			case wins[w] && winner >= 0:
				t.Fatalf("round %d: workers %d and %d both created %q", round, winner, w, key)
			case wins[w]:
				winner = w
			case !errors.Is(errs[w], objectstore.ErrPreconditionFailed):
				t.Fatalf("round %d: worker %d: %v, want precondition failed", round, w, errs[w])
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no worker created %q", round, key)
		}
		got, info := mustGet(t, st, key)
		if want := fmt.Sprintf("worker %d", winner); string(got) != want {
			t.Fatalf("round %d: stored %q, winner wrote %q", round, got, want)
		}
		checkInfo(t, "winner's object", info, infos[winner])
	}
}

func (s *suite) casRace(t *testing.T, st objectstore.Store) {
	const key = "race/cas"
	cur := mustPut(t, st, key, []byte("round -1"), objectstore.IfAbsent())
	for round := 0; round < raceRounds; round++ {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, raceWorkers)
		infos := make([]objectstore.ObjectInfo, raceWorkers)
		for w := 0; w < raceWorkers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				body := fmt.Sprintf("round %d worker %d", round, w)
				infos[w], errs[w] = objectstore.PutBytes(ctxFor(t), st, key, []byte(body), objectstore.IfMatch(cur.Version))
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for w := 0; w < raceWorkers; w++ {
			switch {
			case errs[w] == nil && winner >= 0:
				t.Fatalf("round %d: workers %d and %d both swapped version %q", round, winner, w, cur.Version)
			case errs[w] == nil:
				winner = w
			case !errors.Is(errs[w], objectstore.ErrPreconditionFailed):
				t.Fatalf("round %d: worker %d: %v, want precondition failed", round, w, errs[w])
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody swapped version %q", round, cur.Version)
		}
		got, info := mustGet(t, st, key)
		if want := fmt.Sprintf("round %d worker %d", round, winner); string(got) != want {
			t.Fatalf("round %d: stored %q, winner wrote %q", round, got, want)
		}
		checkInfo(t, fmt.Sprintf("round %d winner", round), info, infos[winner])
		if info.Version == cur.Version {
			t.Fatalf("round %d: version unchanged (%q) after a swap", round, cur.Version)
		}
		cur = info
	}
}

func (s *suite) staleVersion(t *testing.T, st objectstore.Store) {
	v1 := mustPut(t, st, "stale", []byte("one"), objectstore.Unconditional())
	v2 := mustPut(t, st, "stale", []byte("two"), objectstore.IfMatch(v1.Version))
	_, err := objectstore.PutBytes(ctxFor(t), st, "stale", []byte("three"), objectstore.IfMatch(v1.Version))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "put with a stale version")
	_, err = objectstore.PutBytes(ctxFor(t), st, "stale", []byte("four"), objectstore.IfMatch("not-a-version"))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "put with a made-up version")
	got, info := mustGet(t, st, "stale")
	if string(got) != "two" {
		t.Fatalf("stale put overwrote: read %q", got)
	}
	checkInfo(t, "after stale put", info, v2)
	v3 := mustPut(t, st, "stale", []byte("five"), objectstore.IfMatch(v2.Version))
	if v3.Version == v2.Version || v3.Version == v1.Version {
		t.Fatalf("version %q repeats an earlier one (%q, %q)", v3.Version, v1.Version, v2.Version)
	}
}

func (s *suite) ifMatchMissing(t *testing.T, st objectstore.Store) {
	v := mustPut(t, st, "present", []byte("x"), objectstore.Unconditional())
	_, err := objectstore.PutBytes(ctxFor(t), st, "absent", []byte("y"), objectstore.IfMatch(v.Version))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "if-match put on a missing key")
	if _, err := st.Head(ctxFor(t), "absent"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("failed if-match put created the key: head: %v", err)
	}
}

func (s *suite) deleteThenCreate(t *testing.T, st objectstore.Store) {
	old := mustPut(t, st, "d/obj", []byte("old"), objectstore.IfAbsent())
	if err := st.Delete(ctxFor(t), "d/obj"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err := st.Get(ctxFor(t), "d/obj", objectstore.GetOptions{})
	wantClass(t, err, objectstore.ErrNotFound, "get after delete")
	_, err = st.Head(ctxFor(t), "d/obj")
	wantClass(t, err, objectstore.ErrNotFound, "head after delete")
	if err := st.Delete(ctxFor(t), "d/obj"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if err := st.Delete(ctxFor(t), "never/existed"); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	_, err = objectstore.PutBytes(ctxFor(t), st, "d/obj", []byte("x"), objectstore.IfMatch(old.Version))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "if-match on a deleted object")
	nu := mustPut(t, st, "d/obj", []byte("new"), objectstore.IfAbsent())
	got, info := mustGet(t, st, "d/obj")
	if string(got) != "new" {
		t.Fatalf("after re-create read %q", got)
	}
	checkInfo(t, "re-created", info, nu)
	page, err := st.List(ctxFor(t), "d/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "d/obj" {
		t.Fatalf("list after re-create: %+v", page.Objects)
	}
}

func (s *suite) getIfNoneMatch(t *testing.T, st objectstore.Store) {
	v1 := mustPut(t, st, "inm", []byte("one"), objectstore.Unconditional())
	_, err := st.Get(ctxFor(t), "inm", objectstore.GetOptions{IfNoneMatch: v1.Version})
	wantClass(t, err, objectstore.ErrNotModified, "get with the current version")
	_, err = st.Get(ctxFor(t), "inm", objectstore.GetOptions{IfNoneMatch: v1.Version, Range: &objectstore.ByteRange{Offset: 1, Length: 1}})
	wantClass(t, err, objectstore.ErrNotModified, "ranged get with the current version")
	v2 := mustPut(t, st, "inm", []byte("two"), objectstore.Unconditional())
	obj, err := st.Get(ctxFor(t), "inm", objectstore.GetOptions{IfNoneMatch: v1.Version})
	if err != nil {
		t.Fatalf("get with an old version: %v", err)
	}
	got, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil || string(got) != "two" {
		t.Fatalf("get with an old version read %q, %v", got, err)
	}
	checkInfo(t, "get with an old version", obj.ObjectInfo, v2)
	_, err = st.Get(ctxFor(t), "inm-missing", objectstore.GetOptions{IfNoneMatch: v1.Version})
	wantClass(t, err, objectstore.ErrNotFound, "if-none-match get of a missing key")
}

// listKeys lists everything under prefix with page size limit, checking the paging contract.
func listKeys(t *testing.T, st objectstore.Store, prefix, startAfter string, limit int) ([]objectstore.ObjectInfo, int) {
	t.Helper()
	var out []objectstore.ObjectInfo
	pages := 0
	after := startAfter
	for {
		page, err := st.List(ctxFor(t), prefix, after, limit)
		if err != nil {
			t.Fatalf("list %q after %q: %v", prefix, after, err)
		}
		pages++
		max := limit
		if max <= 0 || max > 1000 {
			max = 1000
		}
		if len(page.Objects) > max {
			t.Fatalf("list %q limit %d returned %d objects", prefix, limit, len(page.Objects))
		}
		if page.NextStartAfter != "" && len(page.Objects) == 0 {
			t.Fatalf("list %q: empty page with NextStartAfter %q", prefix, page.NextStartAfter)
		}
		if page.NextStartAfter != "" && page.NextStartAfter != page.Objects[len(page.Objects)-1].Key {
			t.Fatalf("list %q: NextStartAfter %q is not the page's last key %q", prefix, page.NextStartAfter, page.Objects[len(page.Objects)-1].Key)
		}
		out = append(out, page.Objects...)
		if page.NextStartAfter == "" {
			return out, pages
		}
		after = page.NextStartAfter
		if pages > 100_000 {
			t.Fatalf("list %q: no end after %d pages", prefix, pages)
		}
	}
}

func keysOf(objs []objectstore.ObjectInfo) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// expected returns the sorted keys of all that start with prefix and sort after startAfter.
func expected(all []string, prefix, startAfter string) []string {
	var out []string
	for _, k := range all {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// trickyKeys sort differently by full key than by a directory walk.
var trickyKeys = []string{
	"a", "a-b", "a.b", "a/b", "a/b/c", "a/b-c", "a/b0", "a0", "a/", "ab", "a b", "a/ b",
	"b/ä", "b/z", "b/é/x", "b/\u00ff", "b/\u4e16\u754c", "b/~", "b/!", "c/x/y/z/1", "c/x/y/z/2", "c/x-",
}

func (s *suite) listOrder(t *testing.T, st objectstore.Store) {
	var keys []string
	for _, k := range trickyKeys {
		if objectstore.ValidateKey(k) == nil {
			keys = append(keys, k)
		}
	}
	// "a" as an object and "a/b" as an object cannot both exist on some backends (a file and a
	// directory of the same name); the suite puts the conflicting pairs under separate roots.
	var all []string
	infos := map[string]objectstore.ObjectInfo{}
	for i, k := range keys {
		for _, root := range rootsFor(k) {
			full := root + k
			infos[full] = mustPut(t, st, full, []byte(fmt.Sprintf("%d %s", i, full)), objectstore.Unconditional())
			all = append(all, full)
		}
	}
	slices.Sort(all)
	for _, limit := range []int{0, 1, 2, 3, 5, 1000, 5000} {
		got, _ := listKeys(t, st, "", "", limit)
		if !slices.Equal(keysOf(got), all) {
			t.Fatalf("list all (limit %d):\n got %q\nwant %q", limit, keysOf(got), all)
		}
		for _, o := range got {
			checkInfo(t, "listed "+o.Key, o, infos[o.Key])
		}
	}
	r := s.rng(t)
	probes := []string{"", "l0/", "l0/a", "l0/a/", "l1/a/b", "l0/a-", "l1/", "l0/b/", "l0/c/x/y/", "zzz", "m/b/\u4e16", "l2/a/b/c", "l1/a/b"}
	for i := 0; i < 30; i++ {
		k := all[r.IntN(len(all))]
		probes = append(probes, k[:r.IntN(len(k)+1)])
	}
	for _, prefix := range probes {
		for _, after := range []string{"", "l1/a", "l0/a", "l1/a/b", "l0/a.", "l1/a/b/", "m/b/é", "l2", probes[r.IntN(len(probes))], all[r.IntN(len(all))]} {
			limit := r.IntN(4)
			got, _ := listKeys(t, st, prefix, after, limit)
			if want := expected(all, prefix, after); !slices.Equal(keysOf(got), want) {
				t.Fatalf("list prefix %q after %q limit %d:\n got %q\nwant %q", prefix, after, limit, keysOf(got), want)
			}
		}
	}
}

// rootsFor spreads keys so that no key is a path prefix of another key under the same root
// (some backends cannot hold both "a" and "a/b"): a key goes under "lN/", N being the number of
// other keys that are its path prefixes. Keys unrelated to any other also go under "m/".
func rootsFor(k string) []string {
	level, related := 0, false
	for _, other := range trickyKeys {
		if other != k && strings.HasPrefix(k, other+"/") {
			level++
			related = true
		}
		if other != k && strings.HasPrefix(other, k+"/") {
			related = true
		}
	}
	roots := []string{fmt.Sprintf("l%d/", level)}
	if !related {
		roots = append(roots, "m/")
	}
	return roots
}

func (s *suite) listPaging(t *testing.T, st objectstore.Store) {
	const n = 1234
	var all []string
	var mu sync.Mutex
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var firstErr error
	for i := 0; i < n; i++ {
		// Mixed widths and a nested level make byte order differ from numeric order.
		key := fmt.Sprintf("p/%d", i)
		if i%10 == 0 {
			key = fmt.Sprintf("p/%d/x", i)
		}
		all = append(all, key)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := objectstore.PutBytes(ctxFor(t), st, key, []byte(key), objectstore.IfAbsent()); err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("writing %d keys: %v", n, firstErr)
	}
	mustPut(t, st, "q/outside", []byte("x"), objectstore.Unconditional())
	slices.Sort(all)
	got, pages := listKeys(t, st, "p/", "", 0)
	if !slices.Equal(keysOf(got), all) {
		t.Fatalf("paged listing of %d keys returned %d keys, or out of order", n, len(got))
	}
	if pages < 2 {
		t.Fatalf("listing %d keys took %d page(s); the default page holds at most 1000", n, pages)
	}
	got, _ = listKeys(t, st, "p/", "", 333)
	if !slices.Equal(keysOf(got), all) {
		t.Fatalf("listing with limit 333 returned %d keys, or out of order", len(got))
	}
	got, _ = listKeys(t, st, "p/", all[700], 1000)
	if want := all[701:]; !slices.Equal(keysOf(got), want) {
		t.Fatalf("listing after %q returned %d keys, want %d", all[700], len(got), len(want))
	}
	got, _ = listKeys(t, st, "", "", 0)
	if len(got) != n+1 || got[len(got)-1].Key != "q/outside" {
		t.Fatalf("listing everything returned %d keys, want %d ending in q/outside", len(got), n+1)
	}
}

func (s *suite) oddKeys(t *testing.T, st objectstore.Store) {
	keys := []string{
		"with space", "with  two  spaces/and more ", " leading", "trailing ",
		"unicode/\u00e9t\u00e9/\u65e5\u672c\u8a9e/\U0001F600", "deep/a/b/c/d/e/f/g/h/i/j",
		"punct/!$&'()*+,;=:@", "punct/%2F%00%", "punct/?#[]", "tab\there", "plus+and=equals",
		"dots/..a/a../...", "dots/.hidden", "back\\slash", "quote\"s", "tilde~", "x/.sluice",
	}
	for i, k := range keys {
		data := []byte(fmt.Sprintf("%d:%s", i, k))
		put := mustPut(t, st, k, data, objectstore.IfAbsent())
		got, info := mustGet(t, st, k)
		if !bytes.Equal(got, data) {
			t.Fatalf("key %q: read %q", k, got)
		}
		checkInfo(t, "key "+strconv.Quote(k), info, put)
	}
	got, _ := listKeys(t, st, "", "", 0)
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(keysOf(got), want) {
		t.Fatalf("listing odd keys:\n got %q\nwant %q", keysOf(got), want)
	}
	for _, k := range keys {
		if err := st.Delete(ctxFor(t), k); err != nil {
			t.Fatalf("delete %q: %v", k, err)
		}
	}
	if got, _ := listKeys(t, st, "", "", 0); len(got) != 0 {
		t.Fatalf("after deleting every key, listing returned %q", keysOf(got))
	}
}

// InvalidKeys are keys every Store must reject with ErrInvalidKey.
var InvalidKeys = []string{
	"", "/abs", "a//b", "a/", "..", ".", "a/../b", "../x", "a/./b", "a\x00b", "\xff\xfe", "a/..",
}

func (s *suite) invalidKeys(t *testing.T, st objectstore.Store) {
	ctx := ctxFor(t)
	for _, k := range InvalidKeys {
		_, err := st.Get(ctx, k, objectstore.GetOptions{})
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("get %q", k))
		_, err = st.Head(ctx, k)
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("head %q", k))
		_, err = objectstore.PutBytes(ctx, st, k, []byte("x"), objectstore.Unconditional())
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("put %q", k))
		_, err = objectstore.PutBytes(ctx, st, k, []byte("x"), objectstore.IfAbsent())
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("create %q", k))
		err = st.Delete(ctx, k)
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("delete %q", k))
	}
	if got, _ := listKeys(t, st, "", "", 0); len(got) != 0 {
		t.Fatalf("rejected puts left objects: %q", keysOf(got))
	}
}

// bodySizeMismatch: a body shorter or longer than its declared size (or a negative size) is
// refused and leaves nothing behind.
func (s *suite) bodySizeMismatch(t *testing.T, st objectstore.Store) {
	ctx := ctxFor(t)
	_, err := st.Put(ctx, "short", strings.NewReader("abc"), 10, objectstore.Unconditional())
	if err == nil {
		t.Fatal("put of a body shorter than its size succeeded")
	}
	_, err = st.Put(ctx, "long", strings.NewReader("abcdefghijkl"), 10, objectstore.IfAbsent())
	if err == nil {
		t.Fatal("put of a body longer than its size succeeded")
	}
	_, err = st.Put(ctx, "negative", strings.NewReader(""), -1, objectstore.Unconditional())
	if err == nil {
		t.Fatal("put with a negative size succeeded")
	}
	for _, k := range []string{"short", "long", "negative"} {
		_, err := st.Head(ctx, k)
		wantClass(t, err, objectstore.ErrNotFound, "head after a refused put of "+k)
	}
	// A refused put leaves the previous object in place.
	prev := mustPut(t, st, "keep", []byte("previous"), objectstore.Unconditional())
	if _, err := st.Put(ctx, "keep", strings.NewReader("xy"), 5, objectstore.IfMatch(prev.Version)); err == nil {
		t.Fatal("short if-match put succeeded")
	}
	got, info := mustGet(t, st, "keep")
	if string(got) != "previous" {
		t.Fatalf("refused put replaced the object with %q", got)
	}
	checkInfo(t, "after refused put", info, prev)
}

func (s *suite) errorClasses(t *testing.T, st objectstore.Store) {
	ctx := ctxFor(t)
	_, err := st.Get(ctx, "missing", objectstore.GetOptions{})
	wantClass(t, err, objectstore.ErrNotFound, "get missing")
	_, err = st.Head(ctx, "missing")
	wantClass(t, err, objectstore.ErrNotFound, "head missing")
	v := mustPut(t, st, "present", []byte("x"), objectstore.Unconditional())
	_, err = objectstore.PutBytes(ctx, st, "present", []byte("y"), objectstore.IfAbsent())
	wantClass(t, err, objectstore.ErrPreconditionFailed, "create existing")
	_, err = st.Get(ctx, "present", objectstore.GetOptions{IfNoneMatch: v.Version})
	wantClass(t, err, objectstore.ErrNotModified, "get not modified")
	var opErr *objectstore.OpError
	if !errors.As(err, &opErr) || opErr.Op != "get" || !strings.HasSuffix(opErr.Key, "present") {
		t.Fatalf("get not modified: %v is not an *OpError for get of \"present\"", err)
	}
	page, err := st.List(ctx, "nothing-here/", "", 0)
	if err != nil || len(page.Objects) != 0 || page.NextStartAfter != "" {
		t.Fatalf("list of an empty prefix: %+v, %v", page, err)
	}
}

func (s *suite) contextCanceled(t *testing.T, st objectstore.Store) {
	mustPut(t, st, "c", []byte("x"), objectstore.Unconditional())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Get(ctx, "c", objectstore.GetOptions{}); err == nil {
		t.Fatal("get with a canceled context succeeded")
	}
	if _, err := st.Head(ctx, "c"); err == nil {
		t.Fatal("head with a canceled context succeeded")
	}
	if _, err := st.List(ctx, "", "", 0); err == nil {
		t.Fatal("list with a canceled context succeeded")
	}
	_, err := objectstore.PutBytes(ctx, st, "c2", []byte("x"), objectstore.IfAbsent())
	if err == nil {
		t.Fatal("put with a canceled context succeeded")
	}
	if errors.Is(err, objectstore.ErrPreconditionFailed) || errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("put with a canceled context: %v has a misleading class", err)
	}
}

func (s *suite) closed(t *testing.T, st objectstore.Store) {
	mustPut(t, st, "k", []byte("x"), objectstore.Unconditional())
	if err := st.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	ctx := ctxFor(t)
	_, err := st.Get(ctx, "k", objectstore.GetOptions{})
	wantClass(t, err, objectstore.ErrClosed, "get after close")
	_, err = st.Head(ctx, "k")
	wantClass(t, err, objectstore.ErrClosed, "head after close")
	_, err = objectstore.PutBytes(ctx, st, "k", []byte("y"), objectstore.Unconditional())
	wantClass(t, err, objectstore.ErrClosed, "put after close")
	err = st.Delete(ctx, "k")
	wantClass(t, err, objectstore.ErrClosed, "delete after close")
	_, err = st.List(ctx, "", "", 0)
	wantClass(t, err, objectstore.ErrClosed, "list after close")
}
