package gc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

const (
	mpath = "ingest/manifest"
	dpre  = "ingest"
)

var ingest = stream.Default()

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type testStream struct {
	t     testing.TB
	store objectstore.Store
	p     *producer.Producer
	now   atomic.Int64 // producer clock, ms
	n     uint64       // records written
}

func newStream(t testing.TB, store objectstore.Store, scfg manifest.Config, mod func(*producer.Config)) *testStream {
	t.Helper()
	s := &testStream{t: t, store: store}
	s.now.Store(t0.UnixMilli())
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.FlushInterval = time.Hour
	cfg.StreamConfig = scfg
	cfg.Now = func() time.Time { return time.UnixMilli(s.now.Load()) }
	if mod != nil {
		mod(&cfg)
	}
	p, err := producer.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	s.p = p
	return s
}

// object commits one batch object of k records (or the given records).
func (s *testStream) object(k int, recs ...batchfmt.Record) {
	s.t.Helper()
	ctx := context.Background()
	for i := range k {
		recs = append(recs, batchfmt.Record{Body: []byte(fmt.Sprintf("rec-%d", s.n+uint64(i)))})
	}
	tk, err := s.p.Append(ctx, batchfmt.AppendInput{Records: recs})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.p.Flush(ctx); err != nil {
		s.t.Fatal(err)
	}
	ack, err := tk.Wait(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	s.n = ack.End.SeqNum
}

func load(t testing.TB, store objectstore.Store) *manifest.State {
	t.Helper()
	snap, err := manifest.Open(store, mpath).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.State
}

// allReferenced returns every key the manifest references, segments included, by walking
// them with the manifest's own index (independently of the collector's code): every segment,
// and the object of every entry that holds a readable record (one wholly below the readable
// start holds none, and its object may be gone).
func allReferenced(t testing.TB, store objectstore.Store) []string {
	t.Helper()
	ctx := context.Background()
	st := load(t, store)
	readable := st.ReadableStart()
	var out []string
	var walk func(refs []manifest.SegmentRef)
	walk = func(refs []manifest.SegmentRef) {
		for _, r := range refs {
			out = append(out, r.Key)
			seg, err := manifest.LoadSegment(ctx, store, r.Key)
			if err != nil {
				t.Fatalf("referenced segment %s: %v", r.Key, err)
			}
			for _, e := range seg.Entries {
				if e.EndSeq() > readable {
					out = append(out, e.Key)
				}
			}
			walk(seg.Refs)
		}
	}
	walk(st.Segments)
	for _, e := range st.Entries {
		if e.EndSeq() > readable {
			out = append(out, e.Key)
		}
	}
	return out
}

// checkIntact fails if any referenced object is missing, and reads the whole stream.
func checkIntact(t testing.TB, store objectstore.Store) []consumer.SequencedRecord {
	t.Helper()
	ctx := context.Background()
	for _, k := range allReferenced(t, store) {
		if _, err := store.Head(ctx, k); err != nil {
			t.Fatalf("referenced object %s: %v", k, err)
		}
	}
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = store
	r, err := consumer.NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.ReadAll(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	if err != nil {
		t.Fatalf("read after gc: %v", err)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].SeqNum != recs[i-1].SeqNum+1 {
			t.Fatalf("gap in the stream after gc: %d then %d", recs[i-1].SeqNum, recs[i].SeqNum)
		}
	}
	return recs
}

func testConfig(now func() time.Time) Config {
	cfg := DefaultConfig()
	cfg.Now = now
	cfg.KeepRecent = 0
	cfg.ProbeReuse = 0
	return cfg
}

func batchKeys(t testing.TB, store objectstore.Store) []string {
	var out []string
	for _, k := range keys(t, store, dpre+"/") {
		if ingest.Classify(k) == stream.KeyBatch {
			out = append(out, k)
		}
	}
	return out
}

// TestPassDeletesOnlyUnreferencedOld: orphans are deleted only once older than the grace
// period by the store's clock; referenced objects, the manifest and foreign keys never; a
// failed delete is counted and retried next pass; trimmed entries leave the manifest and
// their objects follow.
func TestPassDeletesOnlyUnreferencedOld(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 1))
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	for range 6 {
		s.object(1 + rng.IntN(5))
	}
	orphans := []string{dpre + "/00000000000000000000000000aa", dpre + "/0000000000000000000000000bbb"}
	for _, k := range orphans {
		if _, err := objectstore.PutBytes(ctx, fs, k, []byte("junk"), objectstore.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	foreign := []string{dpre + "/notes.txt", dpre + "/sub/00000000000000000000000000aa", mpath + ".seg/not-a-segment"}
	for _, k := range foreign {
		if _, err := objectstore.PutBytes(ctx, fs, k, []byte("keep"), objectstore.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	// The local clock is far ahead of the store's: it must not matter.
	c, err := NewCollector(fs, testConfig(func() time.Time { return t0.Add(1000 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	before := checkIntact(t, fs)

	fs.advance(9 * time.Minute)
	rep, err := c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	// Foreign: the three foreign keys, the manifest and the clock probe; every object
	// listed is counted once, in one of the kinds.
	if rep.Deleted != 0 || rep.Young != 2 || rep.Referenced != 6 || rep.Foreign != 5 || rep.Listed != 13 {
		t.Fatalf("young pass: %+v", rep)
	}

	fs.advance(2 * time.Minute) // 11 minutes: the orphans are old now
	fs.mu.Lock()
	failed := false
	fs.failDel = func(key string) bool {
		if key == orphans[1] && !failed {
			failed = true
			return true
		}
		return false
	}
	fs.mu.Unlock()
	rep, err = c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 1 || rep.DeleteErrors != 1 || rep.Referenced != 6 {
		t.Fatalf("old pass: %+v", rep)
	}
	rep, err = c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 1 || rep.DeleteErrors != 0 {
		t.Fatalf("retry pass: %+v", rep)
	}
	if got := fs.deleted(); !slices.Equal(got, orphans) {
		t.Fatalf("deleted %v, want %v", got, orphans)
	}
	for _, k := range foreign {
		if _, err := fs.Head(ctx, k); err != nil {
			t.Fatalf("foreign key %s: %v", k, err)
		}
	}
	check := checkIntact(t, fs)
	if len(check) != len(before) {
		t.Fatalf("stream changed: %d records, was %d", len(check), len(before))
	}

	// Trim: entries wholly below the trim point leave the manifest and are collected once
	// old; the straddling one stays.
	st := load(t, fs)
	tp := st.Entries[3].FirstSeq + 1
	wantDropped := 0
	for _, e := range st.Entries {
		if e.EndSeq() <= tp {
			wantDropped++
		}
	}
	s.object(0, batchfmt.TrimRecord(tp))
	fs.advance(time.Minute)
	rep, err = c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.EntriesDropped != wantDropped || rep.Deleted != wantDropped {
		t.Fatalf("trim pass: %+v", rep)
	}
	recs := checkIntact(t, fs)
	if len(recs) == 0 || recs[0].SeqNum != tp || recs[len(recs)-1].SeqNum != s.n-1 {
		t.Fatalf("after trim: %d records from %d", len(recs), recs[0].SeqNum)
	}
	if _, err := fs.Head(ctx, mpath); err != nil {
		t.Fatalf("manifest: %v", err)
	}
}

// TestRetentionByAge: entries older than retention_policy.age by the collector's (injected)
// clock leave the manifest; the rest stay.
func TestRetentionByAge(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.Retention = manifest.Retention{AgeSecs: 60}
	s := newStream(t, fs, scfg, nil)
	var starts []uint64
	for i := range 5 {
		s.now.Store(t0.Add(time.Duration(i) * 30 * time.Second).UnixMilli()) // arrivals 0, 30, 60, 90, 120 s
		starts = append(starts, s.n)
		s.object(3)
	}
	now := t0
	c, err := NewCollector(fs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at      time.Duration
		dropped int
		first   uint64
	}{
		{60 * time.Second, 0, 0},          // arrival 0 + 60 s is not older than 60 s
		{61 * time.Second, 1, starts[1]},  // the first entry expired
		{150 * time.Second, 2, starts[3]}, // 30 s and 60 s arrivals expired
		{180 * time.Second, 1, starts[4]}, // 120 s not yet (it is exactly 60 s old)
		{181 * time.Second, 1, starts[4]}, // everything expired: the stream is empty
	} {
		now = t0.Add(tc.at)
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatal(err)
		}
		if rep.EntriesDropped != tc.dropped {
			t.Fatalf("at %v: dropped %d entries, want %d", tc.at, rep.EntriesDropped, tc.dropped)
		}
		st := load(t, fs)
		if tc.at == 181*time.Second {
			if !st.IsEmpty() || len(st.Entries) != 0 || st.Tail.SeqNum != s.n {
				t.Fatalf("at %v: %d entries left, tail %+v", tc.at, len(st.Entries), st.Tail)
			}
			continue
		}
		if st.FirstSeq() != tc.first {
			t.Fatalf("at %v: first seq %d, want %d", tc.at, st.FirstSeq(), tc.first)
		}
		recs := checkIntact(t, fs)
		if recs[0].SeqNum != tc.first {
			t.Fatalf("at %v: read starts at %d, want %d", tc.at, recs[0].SeqNum, tc.first)
		}
	}
	// The expired objects go once old by the store's clock; none is left.
	fs.advance(11 * time.Minute)
	if _, err := c.Pass(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	if left := batchKeys(t, fs); len(left) != 0 {
		t.Fatalf("objects left: %v", left)
	}
	// seq_nums continue after the stream emptied.
	s.now.Store(now.UnixMilli())
	s.object(2)
	recs := checkIntact(t, fs)
	if len(recs) != 2 || recs[0].SeqNum != starts[4]+3 {
		t.Fatalf("after emptying: %v", recs)
	}
}

// TestQueueModeLeavesNothing: in queue mode, once every group acknowledged everything and the
// collector ran past the grace period, no batch or segment object is left, though the stream
// was long enough to have sealed segments.
func TestQueueModeLeavesNothing(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.QueueMode = true
	s := newStream(t, fs, scfg, nil)
	objects := manifest.MaxRecentEntries + manifest.SealEntries/2
	for range objects {
		s.object(2)
	}
	if st := load(t, fs); len(st.Segments) == 0 {
		t.Fatal("no segments sealed")
	}
	c, err := NewCollector(fs, testConfig(func() time.Time { return t0.Add(time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	fs.advance(time.Hour)
	rep, err := c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 0 || rep.Referenced != objects+len(load(t, fs).Segments) {
		t.Fatalf("nothing acked yet, but %+v", rep)
	}
	checkIntact(t, fs)

	groups := []string{"a", "b"}
	for _, g := range groups {
		cfg := consumer.DefaultGroupConfig()
		cfg.ObjectStore = fs
		cfg.Group = g
		m, err := consumer.Open(ctx, cfg, consumer.GroupOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var seen uint64
		for seen < s.n {
			b, err := m.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seen = b.NextSeq
			// Group a acknowledges everything; b everything but the last record at first.
			if g == "b" && seen == s.n {
				seen--
			}
			if err := m.AckThrough(seen - 1); err != nil {
				t.Fatal(err)
			}
			seen = b.NextSeq
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if left := batchKeys(t, fs); len(left) != 1 {
		t.Fatalf("with one record unacknowledged by b, %d objects left (%+v)", len(left), rep)
	}
	recs := checkIntact(t, fs)
	if len(recs) != 2 || recs[1].SeqNum != s.n-1 {
		t.Fatalf("readable after partial ack: %d records", len(recs))
	}
	cfg := consumer.DefaultGroupConfig()
	cfg.ObjectStore = fs
	cfg.Group = "b"
	m, err := consumer.Open(ctx, cfg, consumer.GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AckThrough(s.n - 1); !errors.Is(err, consumer.ErrNotDelivered) {
		t.Fatalf("ack before delivery: %v", err)
	}
	if _, err := m.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.AckThrough(s.n - 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pass(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	st := load(t, fs)
	if len(st.Entries) != 0 || len(st.Segments) != 0 || st.Tail.SeqNum != s.n {
		t.Fatalf("manifest after draining: %d entries, %d segments, tail %+v", len(st.Entries), len(st.Segments), st.Tail)
	}
	var left []string
	for _, k := range keys(t, fs, "") {
		if k != mpath && k != ingest.ProbeKey() {
			left = append(left, k)
		}
	}
	if len(left) != 0 {
		t.Fatalf("objects left after draining the queue: %d, e.g. %v", len(left), left[:min(3, len(left))])
	}
}

// streamWithOrphans returns a store holding a stream with one referenced batch object and
// n unreferenced ones, all an hour old, and a collector config for it.
func streamWithOrphans(t *testing.T, n int) (*faultStore, Config) {
	t.Helper()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	s.object(1)
	putOrphans(t, fs, 0, n)
	fs.advance(time.Hour)
	return fs, testConfig(time.Now)
}

// TestBoundedResumablePasses: a pass lists and deletes at most its budget; successive passes
// resume and together cover everything.
func TestBoundedResumablePasses(t *testing.T) {
	ctx := context.Background()
	fs, cfg := streamWithOrphans(t, 25)
	cfg.MaxListPerPass = 10
	cfg.MaxDeletesPerPass = 4
	c, err := NewCollector(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for pass := 0; len(batchKeys(t, fs)) > 1; pass++ {
		if pass > 20 {
			t.Fatal("passes do not converge")
		}
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Listed > 10 || rep.Deleted > 4 {
			t.Fatalf("pass %d over budget: %+v", pass, rep)
		}
		total += rep.Deleted
	}
	if total != 25 {
		t.Fatalf("deleted %d, want 25", total)
	}
	checkIntact(t, fs)
}

// TestFullPassListsEverything: FullPass lists both prefixes from their start to their end in
// rounds of MaxListPerPass, even after a bounded pass, deletes every unreferenced old object
// within MaxDeletesPerPass in all, and leaves the referenced ones; the next FullPass starts
// the listings over.
func TestFullPassListsEverything(t *testing.T) {
	ctx := context.Background()
	const garbage = 37
	fs, cfg := streamWithOrphans(t, garbage)
	cfg.MaxListPerPass = 5
	cfg.MaxDeletesPerPass = 30
	c, err := NewCollector(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A bounded pass first, which leaves the listing mid-way; the full one starts over.
	rep, err := c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Listed != 5 || rep.Wrapped {
		t.Fatalf("bounded pass: %+v", rep)
	}
	first := rep.Deleted
	rep, err = c.FullPass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Wrapped || rep.Deleted != 30 {
		t.Fatalf("full pass: %+v, want the listing to its end and 30 deletes (the budget)", rep)
	}
	if left := len(batchKeys(t, fs)); left != 1+garbage-first-30 {
		t.Fatalf("%d batch objects left after the full pass, want %d", left, 1+garbage-first-30)
	}
	rep, err = c.FullPass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	if want := garbage - first - 30; rep.Deleted != want || rep.Referenced != 1 {
		t.Fatalf("second full pass: %+v, want %d deleted and the referenced object seen", rep, want)
	}
	if left := batchKeys(t, fs); len(left) != 1 {
		t.Fatalf("batch objects left: %v, want only the referenced one", left)
	}
	checkIntact(t, fs)
}

// TestPassFuncListsEverything: the package-level Pass, whose fresh collector remembers no
// listing position, lists every object rather than the same first MaxListPerPass each call.
func TestPassFuncListsEverything(t *testing.T) {
	ctx := context.Background()
	const garbage = 12
	fs, cfg := streamWithOrphans(t, garbage)
	cfg.MaxListPerPass = 5
	rep, err := Pass(ctx, fs, ingest, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != garbage || rep.Referenced != 1 {
		t.Fatalf("Pass: %+v, want %d deleted and the referenced object seen", rep, garbage)
	}
	checkIntact(t, fs)
}

// TestDeleteOnEmpty: a stream empty for min_age_secs, whose objects are all collected, is
// deleted; readers then see it as not found. A non-empty stream is never deleted.
func TestDeleteOnEmpty(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.Retention = manifest.Retention{AgeSecs: 10}
	scfg.DeleteOnEmpty = manifest.DeleteOnEmpty{MinAgeSecs: 60}
	s := newStream(t, fs, scfg, nil)
	s.object(3)
	s.object(3)
	s.p.Close(ctx)
	now := t0.Add(5 * time.Second)
	c, err := NewCollector(fs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	pass := func(want bool) {
		t.Helper()
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatal(err)
		}
		if rep.StreamDeleted != want {
			t.Fatalf("at %v: stream deleted %v, want %v (%+v)", now.Sub(t0), rep.StreamDeleted, want, rep)
		}
	}
	pass(false) // not empty
	now = t0.Add(20 * time.Second)
	pass(false) // empty from now on; objects young
	now = t0.Add(90 * time.Second)
	pass(false) // empty for 70 s, but the objects are not collected yet
	fs.advance(11 * time.Minute)
	pass(true) // collects the objects, then nothing is left: the stream goes
	if _, err := manifest.Open(fs, mpath).Load(ctx); !errors.Is(err, manifest.ErrNotExist) {
		t.Fatalf("manifest after delete_on_empty: %v", err)
	}
	// Only the tombstone stays (see manifest.Handle.Create).
	if left := keys(t, fs, ""); len(left) != 1 || left[0] != mpath {
		t.Fatalf("left behind: %v", left)
	}
	if h, err := fs.Head(ctx, mpath); err != nil || h.Size != 0 {
		t.Fatalf("tombstone: %+v %v", h, err)
	}
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = fs
	r, _ := consumer.NewReader(cfg)
	if _, err := r.Read(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0)}); !errors.Is(err, consumer.ErrStreamNotFound) {
		t.Fatalf("read of the deleted stream: %v", err)
	}
	if _, err := c.Pass(ctx, ingest); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("pass over the deleted stream: %v", err)
	}
}

// TestDeleteOnEmptyInterrupted: a deletion whose probe cleanup failed is finished by the next
// pass; readers see the tombstone as a deleted stream.
func TestDeleteOnEmptyInterrupted(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.DeleteOnEmpty = manifest.DeleteOnEmpty{MinAgeSecs: 1}
	if _, err := manifest.Open(fs, mpath).Create(ctx, scfg, t0); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	c, err := NewCollector(fs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Pass(ctx, ingest); err != nil || rep.StreamDeleted {
		t.Fatalf("first sight of the empty stream: %+v %v", rep, err)
	}
	now = now.Add(2 * time.Second)
	fs.mu.Lock()
	fs.failDel = func(key string) bool { return key == ingest.ProbeKey() }
	fs.mu.Unlock()
	if rep, err := c.Pass(ctx, ingest); err != nil || !rep.StreamDeleted {
		t.Fatalf("deletion: %+v %v", rep, err)
	}
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = fs
	r, _ := consumer.NewReader(cfg)
	if _, err := r.Read(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0)}); !errors.Is(err, consumer.ErrStreamNotFound) {
		t.Fatalf("read of the deleted stream: %v", err)
	}
	fs.mu.Lock()
	fs.failDel = nil
	fs.mu.Unlock()
	if _, err := c.Pass(ctx, ingest); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("pass over the tombstone: %v", err)
	}
	if left := keys(t, fs, ""); len(left) != 1 || left[0] != mpath {
		t.Fatalf("left behind: %v", left)
	}
}

// TestTombstoneRaceWithRecreate: a collector that saw a stream deleted never deletes the
// stream created again under its name (the tombstone is replaced, never deleted), and the new
// stream's records survive another collector's pass.
func TestTombstoneRaceWithRecreate(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.DeleteOnEmpty = manifest.DeleteOnEmpty{MinAgeSecs: 1}
	if _, err := manifest.Open(fs, mpath).Create(ctx, scfg, t0); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	a, _ := NewCollector(fs, testConfig(func() time.Time { return now }))
	b, _ := NewCollector(fs, testConfig(func() time.Time { return now }))
	if _, err := a.Pass(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if rep, err := a.Pass(ctx, ingest); err != nil || !rep.StreamDeleted {
		t.Fatalf("deletion: %+v %v", rep, err)
	}
	// A client creates the stream again; b, which never saw it live, passes over it.
	snap, err := manifest.Open(fs, mpath).Create(ctx, manifest.DefaultConfig(), now)
	if err != nil {
		t.Fatalf("create over the tombstone: %v", err)
	}
	for _, c := range []*Collector{a, b} {
		if _, err := c.Pass(ctx, ingest); err != nil {
			t.Fatalf("pass over the re-created stream: %v", err)
		}
	}
	got, err := manifest.Open(fs, mpath).Load(ctx)
	if err != nil || got.State.Generation != snap.State.Generation {
		t.Fatalf("re-created stream: %v", err)
	}
	if _, err := manifest.Open(fs, mpath).Create(ctx, manifest.DefaultConfig(), now); !errors.Is(err, manifest.ErrExists) {
		t.Fatalf("create over a live stream: %v", err)
	}
}

// TestProbeReuse: within ProbeReuse a pass uses the previous probe of the store's clock, which
// only delays deletions; afterwards it probes again.
func TestProbeReuse(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	s.object(1)
	orphan := dpre + "/00000000000000000000000000aa"
	if _, err := objectstore.PutBytes(ctx, fs, orphan, []byte("x"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	probes := 0
	fs.onPut = func(key string) {
		if key == ingest.ProbeKey() {
			probes++
		}
	}
	cfg := testConfig(time.Now)
	cfg.ProbeReuse = time.Hour
	c, err := NewCollector(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Pass(ctx, ingest); err != nil || rep.Young != 1 {
		t.Fatalf("first pass: %+v %v", rep, err)
	}
	fs.advance(11 * time.Minute)
	if rep, err := c.Pass(ctx, ingest); err != nil || rep.Deleted != 0 || rep.Young != 1 || probes != 1 {
		t.Fatalf("pass with the reused probe: %+v %v, %d probes", rep, err, probes)
	}
	c.probeMu.Lock()
	c.probeLocal = c.probeLocal.Add(-2 * time.Hour) // the reuse window has passed
	c.probeMu.Unlock()
	if rep, err := c.Pass(ctx, ingest); err != nil || rep.Deleted != 1 || probes != 2 {
		t.Fatalf("pass with a new probe: %+v %v, %d probes", rep, err, probes)
	}
}

func TestKeyShapes(t *testing.T) {
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), func(c *producer.Config) { c.MaxGroupBatches = 1 })
	for range manifest.MaxRecentEntries + 1 {
		s.object(1)
	}
	st := load(t, fs)
	if len(st.Segments) == 0 {
		t.Fatal("no segment")
	}
	for _, e := range st.Entries {
		if k := ingest.Classify(e.Key); k != stream.KeyBatch {
			t.Fatalf("producer key %q taken for %v", e.Key, k)
		}
	}
	for _, r := range st.Segments {
		if k := ingest.Classify(r.Key); k != stream.KeySegment {
			t.Fatalf("segment key %q taken for %v", r.Key, k)
		}
	}
	for _, k := range []string{dpre + "/x", dpre + "/ABCDEF0123456789abcdef012345", "other/" + strings.Repeat("a", 28)} {
		if kind := ingest.Classify(k); kind != stream.KeyForeign {
			t.Fatalf("%q taken for %v", k, kind)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	var c Config
	err := c.Validate()
	if err == nil || !errors.Is(err, ErrInvalidConfig) || len(err.(interface{ Unwrap() []error }).Unwrap()) < 6 {
		t.Fatalf("zero config: %v", err)
	}
	if !strings.Contains(err.Error(), "start from DefaultConfig()") {
		t.Fatalf("zero config without the hint: %v", err)
	}
	c = DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCollector(nil, c); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil store: %v", err)
	}
	c.Logger, c.Now = nil, nil
	if _, err := NewCollector(objectstore.NewMemStore(), c); err != nil {
		t.Fatalf("nil logger and clock: %v", err)
	}
}

// TestConfigRefusesGraceUnderTwiceTheCommitDeadline: a grace period shorter than twice the
// producers' commit deadline is refused, so that a program embedding producers and a
// collector cannot have an upload committed after the collector could have deleted it; a
// shorter deadline declared with it is accepted.
func TestConfigRefusesGraceUnderTwiceTheCommitDeadline(t *testing.T) {
	c := DefaultConfig()
	c.GracePeriod = 9 * time.Minute // default deadline 5 minutes
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, manifest.ErrUnsafeCommitDeadline) {
		t.Fatalf("grace 9m beside a 5m deadline: %v", err)
	}
	c.CommitDeadline = 4*time.Minute + 30*time.Second
	if err := c.Validate(); err != nil {
		t.Fatalf("grace 9m beside a 4m30s deadline: %v", err)
	}
	c.CommitDeadline = 0
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("zero deadline: %v", err)
	}
	c.CommitDeadline, c.GracePeriod = 25*time.Hour, 60*time.Hour
	if err := c.Validate(); !errors.Is(err, manifest.ErrUnsafeCommitDeadline) {
		t.Fatalf("deadline beyond the producer expiry: %v", err)
	}
}

// TestFullPassAfterBoundedPass: a FullPass examines every object even after a bounded Pass
// left the listings mid-way: orphans that were young during the bounded pass, and are old
// now, all go (FullPass must not resume from the bounded pass's cursor).
func TestFullPassAfterBoundedPass(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	s.object(1)
	const garbage = 20
	putOrphans(t, fs, 0, garbage)
	cfg := testConfig(time.Now)
	cfg.MaxListPerPass = 8
	c, err := NewCollector(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A bounded pass while everything is young: it examines the first 8 objects, deletes none.
	if rep, err := c.Pass(ctx, ingest); err != nil || rep.Deleted != 0 || rep.Wrapped {
		t.Fatalf("bounded pass: %+v, %v", rep, err)
	}
	fs.advance(time.Hour) // every orphan is old now
	rep, err := c.FullPass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	total := len(keys(t, fs, dpre+"/")) + rep.Deleted
	left := len(batchKeys(t, fs)) - 1 // but the referenced one
	if left != 0 || rep.Listed < total {
		t.Fatalf("FullPass listed %d of %d objects and left %d old unreferenced batch objects (report %+v)",
			rep.Listed, total, left, rep)
	}
}

// hidingStore hides the keys that contain "hidden" from listings, as a store that filters
// on the server side may: a page can then hold no object and still go on.
type hidingStore struct{ objectstore.Store }

func (h hidingStore) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	page, err := h.Store.List(ctx, prefix, startAfter, limit)
	kept := page.Objects[:0:0]
	for _, o := range page.Objects {
		if !strings.Contains(o.Key, "hidden") {
			kept = append(kept, o)
		}
	}
	page.Objects = kept
	return page, err
}

// TestSweepPastEmptyPages: a listing page with no objects but a continuation moves the
// listing on (the cursor follows the page, not its last object) instead of asking for the
// same page forever.
func TestSweepPastEmptyPages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	s.object(1)
	for i := range 12 {
		// Sorting before the batch objects' names (hex digits): whole pages of them.
		k := fmt.Sprintf("%s/0-hidden-%02d", dpre, i)
		if _, err := objectstore.PutBytes(ctx, fs, k, []byte("x"), objectstore.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	const garbage = 5
	putOrphans(t, fs, 1, garbage)
	fs.advance(time.Hour)
	cfg := testConfig(time.Now)
	cfg.MaxListPerPass = 4
	rep, err := Pass(ctx, hidingStore{fs}, ingest, cfg)
	if err != nil {
		t.Fatalf("pass over pages of hidden keys: %v (%+v)", err, rep)
	}
	if rep.Deleted != garbage || rep.Referenced != 1 {
		t.Fatalf("pass: %+v, want %d deleted and the referenced object seen", rep, garbage)
	}
}

// putOrphans puts n batch objects that no manifest references, named for first, first+1, ...
func putOrphans(t *testing.T, store objectstore.Store, first, n int) {
	t.Helper()
	for i := range n {
		k := fmt.Sprintf("%s/%012x%016x", dpre, first+i, i)
		if _, err := objectstore.PutBytes(context.Background(), store, k, []byte("x"), objectstore.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
}
