package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// objectGets counts the Gets of batch objects (every key but the manifest).
type objectGets struct {
	objectstore.Store
	n atomic.Int64
}

func (s *objectGets) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if !strings.HasSuffix(key, "manifest") {
		s.n.Add(1)
	}
	return s.Store.Get(ctx, key, opts)
}

// TestShortReadFetchesWhatItNeeds: a read with a count, and a unary Read (one batch),
// fetch only the objects that can hold the records they want, not the whole read-ahead
// (a soak's random-position reads fetched 1.9 times the bytes they delivered). Ten objects
// of 5 records each.
func TestShortReadFetchesWhatItNeeds(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	f := newFixture(t, mem, manifest.DefaultConfig(), batchfmt.CompressionNone)
	for o := range 10 {
		var recs []batchfmt.Record
		for i := range 5 {
			recs = append(recs, rec(baseTS+uint64(5*o+i), fmt.Sprintf("o%d-r%d", o, i)))
		}
		f.object(recs)
	}
	st := &objectGets{Store: mem}
	f.store = st
	r := f.reader(func(c *Config) { c.MaxBatchRecords = 12 })
	for _, c := range []struct {
		start, count uint64 // count 0: none (a unary Read's batch bound, 12, applies)
		objects      int64
	}{
		{0, 1, 1}, {0, 5, 1}, {0, 6, 2}, {3, 5, 2}, {12, 3, 1}, {0, 0, 3}, {45, 0, 1},
	} {
		st.n.Store(0)
		req := ReadRequest{Start: AtSeqNum(c.start)}
		if c.count > 0 {
			req.Count = &c.count
		}
		b, err := r.Read(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want := c.count
		if want == 0 {
			want = min(12, 50-c.start)
		}
		if uint64(len(b.Records)) != want || b.Records[0].SeqNum != c.start {
			t.Fatalf("read from %d, count %d: %d records from %d", c.start, c.count, len(b.Records), b.Records[0].SeqNum)
		}
		if got := st.n.Load(); got != c.objects {
			t.Errorf("read from %d, count %d: %d object fetches, want %d", c.start, c.count, got, c.objects)
		}
	}
}
