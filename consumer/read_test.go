package consumer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/stream"
)

// expectations computed from the writer's records.
func fromSeq(want []wantRec, s uint64) []wantRec {
	if s >= uint64(len(want)) {
		return nil
	}
	return want[s:]
}

func fromTS(want []wantRec, ts uint64) []wantRec {
	for i := range want {
		if want[i].ts >= ts {
			return want[i:]
		}
	}
	return nil
}

func limit(want []wantRec, count, bytes, until *uint64) []wantRec {
	var sum uint64
	for i := range want {
		if count != nil && uint64(i) >= *count {
			return want[:i]
		}
		if until != nil && want[i].ts >= *until {
			return want[:i]
		}
		sum += uint64(want[i].metered)
		if bytes != nil && sum > *bytes {
			return want[:i]
		}
	}
	return want
}

func TestStartPositions(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		rng := rand.New(rand.NewPCG(seed(t), 1))
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 10)
		r := f.reader(func(c *Config) { c.ReadAheadDepth = 1 + rng.IntN(4); c.MaxBatchRecords = 1 + rng.IntN(7) })
		ctx := context.Background()
		n := uint64(len(f.want))
		last := f.want[n-1].ts
		t.Logf("%d records", n)

		starts := []uint64{0, 1, n - 1, n}
		for range 12 {
			starts = append(starts, uint64(rng.IntN(int(n+1))))
		}
		for _, s := range starts {
			got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(s)})
			if err != nil {
				t.Fatalf("seq_num %d: %v", s, err)
			}
			check(t, fmt.Sprintf("seq_num %d", s), got, fromSeq(f.want, s))
		}
		tss := []uint64{0, baseTS, f.want[0].ts, last, last + 1}
		for range 12 {
			w := f.want[rng.IntN(int(n))].ts
			tss = append(tss, w, w-1, w+1)
		}
		for _, ts := range tss {
			got, err := r.ReadAll(ctx, ReadRequest{Start: AtTimestamp(ts)})
			if err != nil {
				t.Fatalf("timestamp %d: %v", ts, err)
			}
			check(t, fmt.Sprintf("timestamp %d", ts), got, fromTS(f.want, ts))
		}
		for _, k := range []uint64{0, 1, 2, n - 1, n, n + 1, n + 100, uint64(rng.IntN(int(n)))} {
			got, err := r.ReadAll(ctx, ReadRequest{Start: AtTailOffset(k)})
			if err != nil {
				t.Fatalf("tail_offset %d: %v", k, err)
			}
			check(t, fmt.Sprintf("tail_offset %d", k), got, f.want[n-min(k, n):])
		}
		// Past the tail: a typed error carrying the tail, or with clamp an empty read.
		for _, s := range []uint64{n + 1, n + 1000} {
			_, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(s)})
			var re *RangeError
			if !errors.As(err, &re) || !errors.Is(err, ErrOutOfRange) || re.Tail != (manifest.Position{SeqNum: n, Timestamp: last}) || re.Start != s {
				t.Fatalf("seq_num %d past the tail: %v", s, err)
			}
			got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(s).Clamped()})
			if err != nil || len(got) != 0 {
				t.Fatalf("clamped seq_num %d: %d records, %v", s, len(got), err)
			}
		}
		tail, err := r.CheckTail(ctx)
		if err != nil || tail != (manifest.Position{SeqNum: n, Timestamp: last}) {
			t.Fatalf("check tail: %+v, %v", tail, err)
		}
	})
}

func TestLimits(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		rng := rand.New(rand.NewPCG(seed(t), 2))
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionZstd)
		f.standard(rng, 8)
		r := f.reader(func(c *Config) { c.ReadAheadDepth = 1 + rng.IntN(4); c.MaxBatchRecords = 1 + rng.IntN(7) })
		ctx := context.Background()
		n := uint64(len(f.want))
		var total uint64
		for _, w := range f.want {
			total += uint64(w.metered)
		}
		for i := range 40 {
			s := uint64(rng.IntN(int(n + 1)))
			var count, bytes, until *uint64
			if i%4 == 0 || rng.IntN(2) == 0 {
				count = u64(uint64(rng.IntN(int(n + 2))))
			}
			if i%4 == 1 || rng.IntN(3) == 0 {
				bytes = u64(uint64(rng.IntN(int(total/2 + 1))))
			}
			if i%4 == 2 || rng.IntN(3) == 0 {
				until = u64(f.want[rng.IntN(int(n))].ts + uint64(rng.IntN(3)) - 1)
			}
			req := ReadRequest{Start: AtSeqNum(s), Count: count, Bytes: bytes, Until: until}
			what := fmt.Sprintf("from %d count %v bytes %v until %v", s, deref(count), deref(bytes), deref(until))
			got, err := r.ReadAll(ctx, req)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			check(t, what, got, limit(fromSeq(f.want, s), count, bytes, until))
			// A following read with limits ends at them too when they fall inside the stream.
			if count != nil && s+*count <= n {
				req.Follow = true
				got, err := r.ReadAll(ctx, req)
				if err != nil {
					t.Fatalf("follow %s: %v", what, err)
				}
				check(t, "follow "+what, got, limit(fromSeq(f.want, s), count, bytes, until))
			}
		}
		// Exact byte boundary: the bytes of the first k records admit exactly k.
		for k := range 5 {
			var b uint64
			for _, w := range f.want[:k] {
				b += uint64(w.metered)
			}
			got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0), Bytes: u64(b)})
			if err != nil || len(got) != k {
				t.Fatalf("bytes %d: %d records (want %d), %v", b, len(got), k, err)
			}
			got, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0), Bytes: u64(b + uint64(f.want[k].metered) - 1)})
			if err != nil || len(got) != k {
				t.Fatalf("bytes %d-1: %d records (want %d), %v", b+uint64(f.want[k].metered), len(got), k, err)
			}
		}
	})
}

func deref(p *uint64) any {
	if p == nil {
		return "-"
	}
	return *p
}

func TestSkipCommandsAndTrim(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 3))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 6)
	r := f.reader(nil)
	got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0), SkipCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	var envelopes []wantRec
	for _, w := range f.want {
		if w.command == "" {
			envelopes = append(envelopes, w)
		}
	}
	if len(envelopes) == len(f.want) {
		t.Fatal("fixture has no command records")
	}
	check(t, "skip commands", got, envelopes)
	// Count does not count skipped command records.
	got, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0), SkipCommands: true, Count: u64(uint64(len(envelopes) - 1))})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "skip commands, count", got, envelopes[:len(envelopes)-1])

	// Trim to the middle: reads starting below the trim point start at it.
	n := uint64(len(f.want))
	tp := n / 2
	f.object([]batchfmt.Record{batchfmt.TrimRecord(tp)})
	for _, req := range []ReadRequest{{Start: AtSeqNum(0)}, {Start: AtSeqNum(tp - 1)}, {Start: AtTimestamp(0)}, {Start: AtTailOffset(n + 5)}} {
		got, err := r.ReadAll(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprintf("after trim, %s %d", req.Start.Kind, req.Start.Value), got, f.want[tp:])
	}
}

func TestUnaryRead(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 4))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 6)
	n := uint64(len(f.want))
	r := f.reader(func(c *Config) { c.MaxBatchRecords = 7 })
	b, err := r.Read(ctx, ReadRequest{Start: AtSeqNum(3)})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "unary", b.Records, f.want[3:10])
	if b.Tail.SeqNum != n || b.NextSeq != 10 {
		t.Fatalf("tail %+v next %d", b.Tail, b.NextSeq)
	}
	b, err = r.Read(ctx, ReadRequest{Start: AtSeqNum(n)})
	if err != nil || len(b.Records) != 0 || b.Tail.SeqNum != n {
		t.Fatalf("read at the tail: %d records, tail %+v, %v", len(b.Records), b.Tail, err)
	}
	// wait: nothing arrives, an empty batch and no error; something arrives, it is returned.
	b, err = r.Read(ctx, ReadRequest{Start: AtSeqNum(n), Wait: 20 * time.Millisecond})
	if err != nil || len(b.Records) != 0 || b.Tail.SeqNum != n {
		t.Fatalf("wait with nothing new: %d records, tail %+v, %v", len(b.Records), b.Tail, err)
	}
	appended := make(chan error, 1)
	go func() {
		tk, err := f.p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{rec(f.want[n-1].ts, "late")}})
		if err == nil {
			err = f.p.Flush(ctx)
		}
		if err == nil {
			_, err = tk.Wait(ctx)
		}
		appended <- err
	}()
	rw := f.reader(func(c *Config) { c.PollInterval = time.Millisecond })
	b, err = rw.Read(ctx, ReadRequest{Start: AtSeqNum(n), Wait: time.Minute})
	if aerr := <-appended; aerr != nil {
		t.Fatal(aerr)
	}
	if err != nil || len(b.Records) != 1 || string(b.Records[0].Body) != "late" {
		t.Fatalf("wait with a late record: %d records, %v", len(b.Records), err)
	}
	if _, err := r.Read(ctx, ReadRequest{Start: AtSeqNum(0), Wait: -1}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("negative wait: %v", err)
	}
	if _, err := r.Read(ctx, ReadRequest{}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("no start: %v", err)
	}
	missing := DefaultConfig()
	missing.ObjectStore = store
	missing.Stream = stream.MustNew("nope/manifest", "nope/data")
	rm, _ := NewReader(missing)
	if _, err := rm.Read(ctx, ReadRequest{Start: AtSeqNum(0)}); !errors.Is(err, ErrStreamNotFound) || !errors.Is(err, manifest.ErrNotExist) {
		t.Fatalf("missing stream: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	var c Config
	err := c.Validate()
	if err == nil {
		t.Fatal("zero config accepted")
	}
	n := len(err.(interface{ Unwrap() []error }).Unwrap())
	if n < 10 || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "start from DefaultConfig()") {
		t.Fatalf("zero config: %d problems reported: %v", n, err)
	}
	c = DefaultConfig()
	c.ObjectStore = objectstore.NewMemStore()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	nl := c
	nl.Logger = nil // documented as discarding
	r, err := NewReader(nl)
	if err != nil {
		t.Fatalf("nil logger: %v", err)
	}
	if _, err := r.Read(context.Background(), ReadRequest{Start: AtSeqNum(0)}); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("read with a nil logger: %v", err)
	}
	g := DefaultGroupConfig()
	g.Config = c
	if _, err := Open(context.Background(), g, GroupOptions{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("open without a group: %v", err)
	}
}

// TestGroupConfigValidate: a group config reports its reader's problems and its own at
// once, and refuses a zero ack interval rather than taking it for the default.
func TestGroupConfigValidate(t *testing.T) {
	var g GroupConfig
	err := g.Validate()
	for _, want := range []string{"object store is required", "group name is required", "ack interval", "ack records"} {
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("zero group config: %v, want it to say %q", err, want)
		}
	}
	g = DefaultGroupConfig()
	g.ObjectStore = objectstore.NewMemStore()
	g.Group = strings.Repeat("g", MaxGroupNameLen+1)
	if err := g.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("long group name: %v", err)
	}
	g.Group = "g"
	if err := g.Validate(); err != nil {
		t.Fatalf("defaults with a store and a group: %v", err)
	}
}

func TestCorruptAndMissingObjects(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(seed(t), 5))
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 5)
		snap, err := manifest.Open(store, f.path).Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		victim := snap.State.Entries[2]
		r := f.reader(func(c *Config) { c.FetchAttempts = 1 })

		data, _, err := objectstore.ReadAll(ctx, store, victim.Key)
		if err != nil {
			t.Fatal(err)
		}
		bad := append([]byte(nil), data...)
		bad[len(bad)/2] ^= 0x40
		if _, err := objectstore.PutBytes(ctx, store, victim.Key, bad, objectstore.Unconditional()); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)})
		var oe *ObjectError
		if !errors.As(err, &oe) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, batchfmt.ErrCorrupt) ||
			oe.Key != victim.Key || oe.FirstSeq != victim.FirstSeq || oe.EndSeq != victim.EndSeq() {
			t.Fatalf("corrupt object: %v", err)
		}
		// Everything before the corrupt object was delivered, nothing after it.
		check(t, "before corruption", got, f.want[:victim.FirstSeq])

		if err := store.Delete(ctx, victim.Key); err != nil {
			t.Fatal(err)
		}
		_, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(victim.FirstSeq)})
		if !errors.As(err, &oe) || !errors.Is(err, ErrMissingObject) || errors.Is(err, ErrCorrupt) ||
			oe.Key != victim.Key || oe.FirstSeq != victim.FirstSeq {
			t.Fatalf("missing object: %v", err)
		}
		// A truncated object (valid prefix) is corrupt too.
		if _, err := objectstore.PutBytes(ctx, store, victim.Key, data[:len(data)-1], objectstore.Unconditional()); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(victim.FirstSeq)}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated object: %v", err)
		}
		// An object written wrongly: its CRC32C is valid, its first record frame is not. The
		// read stops there with the same error, having returned nothing of that object.
		wrong := append([]byte(nil), data...)
		if victim.IsRejected(0) {
			t.Fatalf("the fixture's entry 2 starts with a rejected append")
		}
		at := batchfmt.HeaderSize + 11 // flags, count, metered, length
		flags := wrong[batchfmt.HeaderSize]
		if flags&1 != 0 {
			at += 8 // match_seq_num
		}
		if flags&2 != 0 {
			at += 1 + int(wrong[at]) // fencing token
		}
		wrong[at] = 0x07 // record type 7 does not exist
		binary.BigEndian.PutUint32(wrong[len(wrong)-4:], crc32.Checksum(wrong[:len(wrong)-4], crc32.MakeTable(crc32.Castagnoli)))
		if _, err := objectstore.PutBytes(ctx, store, victim.Key, wrong, objectstore.Unconditional()); err != nil {
			t.Fatal(err)
		}
		got, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)})
		if !errors.As(err, &oe) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, batchfmt.ErrCorrupt) || oe.Key != victim.Key {
			t.Fatalf("object with a bad record behind a valid CRC: %v", err)
		}
		check(t, "before the bad record", got, f.want[:victim.FirstSeq])

		// Reads that do not touch it are unaffected.
		got, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(victim.EndSeq())})
		if err != nil {
			t.Fatal(err)
		}
		check(t, "after the bad object", got, f.want[victim.EndSeq():])
	})
}

// TestSessionRead: per-call bounds, and a following session that does not wait returns an
// empty batch carrying the tail.
func TestSessionRead(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 12))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 4)
	n := uint64(len(f.want))
	r := f.reader(nil)
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []SequencedRecord
	for uint64(len(got)) < n {
		b, err := s.Read(ctx, 3, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Records) == 0 || len(b.Records) > 3 {
			t.Fatalf("batch of %d records before the tail", len(b.Records))
		}
		got = append(got, b.Records...)
	}
	check(t, "session reads", got, f.want)
	b, err := s.Read(ctx, 3, 1<<20, false)
	if err != nil || len(b.Records) != 0 || b.Tail.SeqNum != n || b.NextSeq != n {
		t.Fatalf("at the tail without waiting: %d records, tail %+v, next %d, %v", len(b.Records), b.Tail, b.NextSeq, err)
	}
	// A record larger than the per-call byte bound still comes, alone.
	big := f.want[0].metered
	s2, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	b, err = s2.Read(ctx, 10, 8, true)
	if err != nil || len(b.Records) != 1 || big <= 8 {
		t.Fatalf("oversized record: %d records, %v", len(b.Records), err)
	}
	if _, err := s2.Read(ctx, 0, 8, true); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("zero records: %v", err)
	}
}

// TestReadAcrossSegments: a stream long enough to have sealed segments reads exactly from
// positions inside segments and in the recent entries, by seq_num, timestamp and tail offset,
// also after a trim into a segment.
func TestReadAcrossSegments(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 13))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	objects := manifest.MaxRecentEntries + manifest.SealEntries/2
	ts := uint64(baseTS)
	for i := range objects {
		ts += uint64(rng.IntN(3))
		f.object([]batchfmt.Record{rec(ts, fmt.Sprintf("o%d", i))})
	}
	snap, err := manifest.Open(store, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.State.Segments) == 0 {
		t.Fatal("no segments")
	}
	n := uint64(len(f.want))
	reg := prometheus.NewRegistry()
	r := f.reader(func(c *Config) { c.Registerer = reg; c.MaxBatchRecords = 1 + rng.IntN(50) })
	delivered := 0
	for _, s := range []uint64{0, 1, 255, 256, 257, 400, n - 10, n - 1, uint64(rng.IntN(int(n)))} {
		got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(s), Count: u64(20)})
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprintf("seq_num %d", s), got, limit(fromSeq(f.want, s), u64(20), nil, nil))
		delivered += len(got)
		w := f.want[s].ts
		got, err = r.ReadAll(ctx, ReadRequest{Start: AtTimestamp(w), Count: u64(5)})
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprintf("timestamp %d", w), got, limit(fromTS(f.want, w), u64(5), nil, nil))
		delivered += len(got)
	}
	got, err := r.ReadAll(ctx, ReadRequest{Start: AtTailOffset(n - 3)})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "tail offset", got, f.want[3:])
	delivered += len(got)

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var counted float64
	for _, fam := range fams {
		if fam.GetName() == "sluice_consumer_records_total" {
			counted = fam.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if counted != float64(delivered) {
		t.Fatalf("records metric %v, delivered %d", counted, delivered)
	}

	tp := uint64(300)
	f.object([]batchfmt.Record{batchfmt.TrimRecord(tp)})
	got, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(10), Count: u64(3)})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "after trim into a segment", got, f.want[tp:tp+3])
}

// drainSession reads s until it is done and returns its records; any other error fails t.
func drainSession(t *testing.T, ctx context.Context, s *Session) []SequencedRecord {
	t.Helper()
	var got []SequencedRecord
	for {
		b, err := s.Next(ctx)
		got = append(got, b.Records...)
		if errors.Is(err, ErrDone) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sessionOverSegments returns a memory store holding a stream with one object of one
// record per entry, long enough for sealed segments, its fixture, and a session (read ahead
// two objects) opened at seq_num 0 for five records, closed when the test ends.
func sessionOverSegments(t *testing.T) (*objectstore.MemStore, *fixture, *Session) {
	t.Helper()
	store := objectstore.NewMemStore()
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	objects := manifest.MaxRecentEntries + manifest.SealEntries/2
	for i := range objects {
		f.object([]batchfmt.Record{rec(baseTS+uint64(i), fmt.Sprintf("o%d", i))})
	}
	r := f.reader(func(c *Config) { c.ReadAheadDepth = 2 })
	s, err := r.Open(context.Background(), ReadRequest{Start: AtSeqNum(0), Count: u64(5)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return store, f, s
}

// TestSegmentsCollectedWhileReading: a session holding a manifest whose first segments were
// dropped by retention and collected (objects and segment objects deleted) re-reads the
// manifest and continues at the first readable record instead of failing.
func TestSegmentsCollectedWhileReading(t *testing.T) {
	ctx := context.Background()
	store, f, s := sessionOverSegments(t)
	// Retention drops everything below 300 (the first segment and more); the collector
	// deletes what is unreferenced.
	before, err := manifest.Open(store, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.object([]batchfmt.Record{batchfmt.TrimRecord(300)})
	after, err := manifest.Open(store, f.path).Update(ctx, func(st *manifest.State) error {
		if st.ApplyRetention(1<<62, 0) == 0 {
			return errors.New("nothing dropped")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, ref := range before.State.Segments {
		if ref.EndSeq <= after.State.FirstSeq() {
			seg, err := manifest.LoadSegment(ctx, store, ref.Key)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range seg.Entries {
				if err := store.Delete(ctx, e.Key); err != nil {
					t.Fatal(err)
				}
			}
			if err := store.Delete(ctx, ref.Key); err != nil {
				t.Fatal(err)
			}
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("no segment dropped")
	}
	got := drainSession(t, ctx, s)
	check(t, "after collection", got, f.want[after.State.ReadableStart():after.State.ReadableStart()+5])
}

// TestTrimmedObjectsCollectedWhileReading: a trim into a sealed segment leaves the segment in
// the manifest, but the collector deletes the objects of the entries wholly below the trim
// point. A session that opened before the trim and meets such a missing object re-reads the
// manifest and continues at the first readable record instead of failing.
func TestTrimmedObjectsCollectedWhileReading(t *testing.T) {
	ctx := context.Background()
	store, f, s := sessionOverSegments(t)
	const tp = 100 // inside the first segment, [0, 256)
	f.object([]batchfmt.Record{batchfmt.TrimRecord(tp)})
	after, err := manifest.Open(store, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.State.Segments) == 0 || after.State.Segments[0].FirstSeq != 0 || after.State.ReadableStart() != tp {
		t.Fatalf("setup: segments %+v, readable from %d; want the first segment kept, readable from %d", after.State.Segments, after.State.ReadableStart(), tp)
	}
	seg, err := manifest.LoadSegment(ctx, store, after.State.Segments[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, e := range seg.Entries {
		if e.EndSeq() <= tp {
			if err := store.Delete(ctx, e.Key); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != tp {
		t.Fatalf("deleted %d objects, want %d", deleted, tp)
	}
	got := drainSession(t, ctx, s)
	check(t, "after collection below the trim point", got, f.want[tp:tp+5])
}

// TestReadEndsAtOpeningTail: a read without Follow ends at the tail it saw when it opened,
// even when records are appended while it reads.
func TestReadEndsAtOpeningTail(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 15))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 3)
	n := uint64(len(f.want))
	r := f.reader(func(c *Config) { c.MaxBatchRecords = 2; c.ReadAheadDepth = 1 })
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Records
	f.object([]batchfmt.Record{rec(f.want[n-1].ts, "later")})
	got = append(got, drainSession(t, ctx, s)...)
	check(t, "read without follow", got, f.want[:n])
}
