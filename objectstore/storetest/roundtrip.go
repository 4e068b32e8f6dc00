package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// LargeSize is the size of the large round-trip object.
const LargeSize = 64<<20 + 12345

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

func (s *suite) oddKeys(t *testing.T, st objectstore.Store) {
	keys := []string{
		"with space", "with  two  spaces/and more ", " leading", "trailing ",
		"unicode/\u00e9t\u00e9/\u65e5\u672c\u8a9e/\U0001F600", "deep/a/b/c/d/e/f/g/h/i/j",
		"punct/!$&'()*+,;=:@", "punct/%2F%00%", "punct/?#[]", "tab\there", "plus+and=equals",
		"dots/..a/a../...", "dots/.hidden", "back\\slash", "quote\"s", "tilde~", "x/.sluice",
	}
	if s.opts.RefusedKeys != nil {
		keys = slices.DeleteFunc(keys, func(k string) bool {
			if !s.opts.RefusedKeys(k) {
				return false
			}
			_, err := objectstore.PutBytes(ctxFor(t), st, k, []byte("x"), objectstore.IfAbsent())
			wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("put of refused key %q", k))
			return true
		})
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
