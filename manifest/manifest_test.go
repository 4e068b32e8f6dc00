package manifest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

func u64(v uint64) *uint64 { return &v }
func str(v string) *string { return &v }

func recs(n int, ts ...uint64) []batchfmt.Record {
	out := make([]batchfmt.Record, n)
	for i := range out {
		out[i].Body = []byte(fmt.Sprintf("r%d", i))
		if i < len(ts) {
			out[i].Timestamp, out[i].HasTimestamp = ts[i], true
		}
	}
	return out
}

func newState(t *testing.T, cfg Config) *State {
	t.Helper()
	s, err := NewState(cfg, time.UnixMilli(1000))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var batchCounter uint64

func batch(pid string, num uint64, arrival uint64, appends ...*batchfmt.AppendInput) *Batch {
	batchCounter++
	return &Batch{Key: fmt.Sprintf("ingest/obj-%s-%d-%d", pid, num, batchCounter), ObjectBytes: 100, ProducerID: pid, BatchNum: num, ArrivalMs: arrival, Appends: appends}
}

func TestApplyMatchSeqNumAutoIncrementAcrossBatches(t *testing.T) {
	s := newState(t, DefaultConfig())
	// The seeds: match_seq_num 0, then 0 + first batch's length, and so on.
	next := uint64(0)
	for i, n := range []int{3, 5, 1} {
		res, err := s.Apply(batch("p", uint64(i+1), 10, &batchfmt.AppendInput{Records: recs(n), MatchSeqNum: u64(next)}))
		if err != nil {
			t.Fatal(err)
		}
		a := res.Appends[0]
		if a.Err != nil || a.Start.SeqNum != next || a.End.SeqNum != next+uint64(n) {
			t.Fatalf("batch %d: %+v", i, a)
		}
		next = a.End.SeqNum
	}
	// A stale match_seq_num fails with the expected value; the next append still commits.
	res, err := s.Apply(batch("p", 4, 10,
		&batchfmt.AppendInput{Records: recs(2), MatchSeqNum: u64(3)},
		&batchfmt.AppendInput{Records: recs(2), MatchSeqNum: u64(9)}))
	if err != nil {
		t.Fatal(err)
	}
	var mm *SeqNumMismatchError
	if !errors.As(res.Appends[0].Err, &mm) || mm.Expected != 9 || !errors.Is(res.Appends[0].Err, ErrConditionFailed) {
		t.Fatalf("want seq_num mismatch expecting 9, got %v", res.Appends[0].Err)
	}
	if res.Appends[1].Err != nil || res.Appends[1].Start.SeqNum != 9 || s.Tail.SeqNum != 11 {
		t.Fatalf("second append %+v, tail %d", res.Appends[1], s.Tail.SeqNum)
	}
	if e := s.Entries[len(s.Entries)-1]; e.Records != 2 || e.FirstSeq != 9 || !e.IsRejected(0) || e.IsRejected(1) {
		t.Fatalf("entry %+v", e)
	}
}

func TestApplyFencing(t *testing.T) {
	s := newState(t, DefaultConfig())
	// The token starts empty: a fence with condition "" succeeds and sets it; an append in the
	// same batch with the old token then fails carrying the new one.
	res, err := s.Apply(batch("p", 1, 10,
		&batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("tok-1")}, FencingToken: str("")},
		&batchfmt.AppendInput{Records: recs(1), FencingToken: str("")},
		&batchfmt.AppendInput{Records: recs(2), FencingToken: str("tok-1")},
		&batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("tok-2")}, FencingToken: str("wrong")},
	))
	if err != nil {
		t.Fatal(err)
	}
	if res.Appends[0].Err != nil || s.FencingToken != "tok-1" {
		t.Fatalf("fence: %v token %q", res.Appends[0].Err, s.FencingToken)
	}
	var fm *FencingTokenMismatchError
	if !errors.As(res.Appends[1].Err, &fm) || fm.Actual != "tok-1" {
		t.Fatalf("want token mismatch carrying tok-1, got %v", res.Appends[1].Err)
	}
	if res.Appends[2].Err != nil || res.Appends[2].Start.SeqNum != 1 {
		t.Fatalf("append with new token: %+v", res.Appends[2])
	}
	if !errors.As(res.Appends[3].Err, &fm) || fm.Actual != "tok-1" || s.FencingToken != "tok-1" {
		t.Fatalf("rejected fence must not set the token: %v, %q", res.Appends[3].Err, s.FencingToken)
	}
	// Fencing is checked before match_seq_num.
	res, _ = s.Apply(batch("p", 2, 10, &batchfmt.AppendInput{Records: recs(1), FencingToken: str("x"), MatchSeqNum: u64(99)}))
	if !errors.As(res.Appends[0].Err, &fm) {
		t.Fatalf("want fencing error first, got %v", res.Appends[0].Err)
	}
}

func TestApplyTrim(t *testing.T) {
	s := newState(t, DefaultConfig())
	s.Apply(batch("p", 1, 10, &batchfmt.AppendInput{Records: recs(10)}))
	// Trim to 5 at seq 10: trim point 5.
	s.Apply(batch("p", 2, 10, &batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.TrimRecord(5)}}))
	if s.TrimPoint != 5 {
		t.Fatalf("trim point %d", s.TrimPoint)
	}
	// Backwards: no change.
	s.Apply(batch("p", 3, 10, &batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.TrimRecord(2)}}))
	if s.TrimPoint != 5 {
		t.Fatalf("trim point moved back to %d", s.TrimPoint)
	}
	// Past the trim record itself (seq 12): capped at 13, as S2 does, so the trim record is
	// trimmed too, and nothing after it.
	s.Apply(batch("p", 4, 10, &batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.TrimRecord(1000)}}))
	if s.TrimPoint != 13 {
		t.Fatalf("trim point %d, want 13", s.TrimPoint)
	}
}

func TestApplyTimestamps(t *testing.T) {
	t.Run("client-prefer capped", func(t *testing.T) {
		s := newState(t, DefaultConfig())
		res, _ := s.Apply(batch("p", 1, 100, &batchfmt.AppendInput{Records: recs(4, 50, 40, 500)}))
		// 50; 40 clamps to 50; 500 capped to arrival 100; missing uses arrival 100.
		a := res.Appends[0]
		if a.Start.Timestamp != 50 || a.End.Timestamp != 100 || s.Tail.Timestamp != 100 {
			t.Fatalf("%+v tail %+v", a, s.Tail)
		}
		// A later batch with an earlier arrival still cannot go backwards.
		res, _ = s.Apply(batch("p", 2, 70, &batchfmt.AppendInput{Records: recs(1)}))
		if res.Appends[0].Start.Timestamp != 100 {
			t.Fatalf("timestamp went backwards: %+v", res.Appends[0])
		}
	})
	t.Run("uncapped", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Timestamping.Uncapped = true
		s := newState(t, cfg)
		res, _ := s.Apply(batch("p", 1, 100, &batchfmt.AppendInput{Records: recs(1, 500)}))
		if res.Appends[0].Start.Timestamp != 500 {
			t.Fatalf("%+v", res.Appends[0])
		}
	})
	t.Run("arrival", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Timestamping.Mode = Arrival
		s := newState(t, cfg)
		res, _ := s.Apply(batch("p", 1, 100, &batchfmt.AppendInput{Records: recs(1, 5)}))
		if res.Appends[0].Start.Timestamp != 100 {
			t.Fatalf("%+v", res.Appends[0])
		}
	})
	t.Run("client-require", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Timestamping.Mode = ClientRequire
		s := newState(t, cfg)
		res, _ := s.Apply(batch("p", 1, 100,
			&batchfmt.AppendInput{Records: recs(2, 5)},
			&batchfmt.AppendInput{Records: recs(2, 5, 6)}))
		if !errors.Is(res.Appends[0].Err, ErrTimestampRequired) || res.Appends[1].Err != nil || res.Appends[1].Start.SeqNum != 0 {
			t.Fatalf("%+v", res.Appends)
		}
	})
}

func TestApplyDuplicateAndResults(t *testing.T) {
	s := newState(t, DefaultConfig())
	appends := []*batchfmt.AppendInput{
		{Records: recs(3, 7, 9)},
		{Records: recs(1), MatchSeqNum: u64(42)},
		{Records: recs(2, 3)},
	}
	b := batch("p", 1, 20, appends...)
	res, err := s.Apply(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := s.Apply(b)
	if !again.Duplicate || s.Tail.SeqNum != 5 || len(s.Entries) != 1 {
		t.Fatalf("duplicate applied: %+v tail %d", again, s.Tail)
	}
	e, ok, err := NewIndex(nil, s).FindBatch(context.Background(), "p", 1)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	rebuilt, err := Results(&e, appends)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt, res.Appends) {
		t.Fatalf("rebuilt %+v\nwant %+v", rebuilt, res.Appends)
	}
	if _, err := Results(&e, appends[:2]); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("want ErrInvalidBatch, got %v", err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	s := sampleState(t)
	data := s.Encode()
	got, err := Decode("m", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
	// Every single-byte flip and every truncation is detected as corruption.
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x40
		if _, err := Decode("m", bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}
	for n := range len(data) {
		if _, err := Decode("m", data[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

func sampleState(t *testing.T) *State {
	s := newState(t, Config{Timestamping: Timestamping{Mode: ClientPrefer}, Retention: Retention{AgeSecs: 3600}, DeleteOnEmpty: DeleteOnEmpty{MinAgeSecs: 60}, QueueMode: true})
	s.Apply(batch("p1", 1, 10, &batchfmt.AppendInput{Records: recs(3, 1, 2, 3)}, &batchfmt.AppendInput{Records: recs(1), MatchSeqNum: u64(7)}))
	s.Apply(batch("p2", 5, 11, &batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("tok")}}, &batchfmt.AppendInput{Records: recs(1), FencingToken: str("nope")}))
	chained := batch("p3", 1, 12, &batchfmt.AppendInput{Records: recs(1)}, &batchfmt.AppendInput{Records: recs(2)})
	chained.Skip = func(i int) bool { return i == 1 }
	s.Apply(chained)
	s.OpenGroup("g1")
	s.SetCheckpoint("g1", 1, 2)
	s.RecentWrites = [][8]byte{{1, 2, 3, 4, 5, 6, 7, 8}}
	s.WriteCounter = 7
	return s
}

func FuzzDecode(f *testing.F) {
	s := &State{Groups: map[string]Group{}, Producers: map[string]ProducerState{}, Config: DefaultConfig()}
	f.Add(s.Encode())
	for _, n := range []int{1, 3} {
		st, _ := NewState(DefaultConfig(), time.UnixMilli(5))
		for i := range n {
			st.Apply(batch("p", uint64(i+1), 10, &batchfmt.AppendInput{Records: recs(2, 5)}, &batchfmt.AppendInput{Records: recs(1), MatchSeqNum: u64(1000)}))
		}
		st.OpenGroup("g")
		f.Add(st.Encode())
		st.TakeRole("c1", "http://127.0.0.1:7070", time.UnixMilli(5), time.Second)
		f.Add(st.Encode())
		st.Journal = &JournalPointer{ID: 9, From: 2}
		st.Entries[0].Offset, st.Entries[0].Length = 64, st.Entries[0].ObjectBytes
		f.Add(st.Encode())
	}
	seg := &Segment{Level: 0, Entries: []Entry{{Key: "k", Records: 2, Appends: 1}}}
	f.Add(seg.Encode())
	seg.Entries[0].ObjectBytes, seg.Entries[0].Length = 9, 9
	f.Add(seg.Encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Decode("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error of the wrong class: %v", err)
			}
		} else if again, err := Decode("fuzz", st.Encode()); err != nil || !reflect.DeepEqual(again, st) {
			t.Fatalf("re-encode differs: %v", err)
		}
		g, err := DecodeSegment("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("segment error of the wrong class: %v", err)
			}
		} else if _, err := DecodeSegment("fuzz", g.Encode()); err != nil {
			t.Fatalf("segment re-encode: %v", err)
		}
	})
}

func TestCreateLoadWriteConflict(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := Open(store, "s/manifest")
	if _, err := m.Load(ctx); !errors.Is(err, ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
	snap, err := m.Create(ctx, DefaultConfig(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, DefaultConfig(), time.Now()); !errors.Is(err, ErrExists) {
		t.Fatalf("want ErrExists, got %v", err)
	}
	a, b := snap.State.Clone(), snap.State.Clone()
	if _, err := m.Write(ctx, a, snap.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write(ctx, b, snap.Version); !errors.Is(err, ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	got, err := m.Load(ctx)
	if err != nil || got.State.WriteCounter != 2 {
		t.Fatalf("%v counter %d", err, got.State.WriteCounter)
	}
	// Bad config is reported in full.
	_, err = Open(store, "t/manifest").Create(ctx, Config{Timestamping: Timestamping{Mode: 9}}, time.Now())
	if !errors.Is(err, ErrInvalidConfig) || len(err.(interface{ Unwrap() []error }).Unwrap()) != 2 {
		t.Fatalf("want 2 config problems, got %v", err)
	}
}

func TestUpdateConcurrentCheckpoints(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	if _, err := Open(store, "m").Create(ctx, DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 20
	// The groups exist first: each worker's updates then bump its group's epoch from a known
	// value, so a lost or doubled update shows in the final epoch.
	start, err := Open(store, "m").Update(ctx, func(s *State) error {
		for w := range workers {
			s.OpenGroup(fmt.Sprintf("g%d", w))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := Open(store, "m", WithMaxAttempts(0), WithBackoff(Backoff{Initial: time.Microsecond, Max: time.Millisecond, Multiplier: 2})).Update(ctx, func(s *State) error {
					s.OpenGroup(fmt.Sprintf("g%d", w))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	snap, _ := Open(store, "m").Load(ctx)
	for w := range workers {
		name := fmt.Sprintf("g%d", w)
		if first, g := start.State.Groups[name].Epoch, snap.State.Groups[name]; g.Epoch != first+each {
			t.Fatalf("group %d epoch %d, want %d+%d (lost or doubled update)", w, g.Epoch, first, each)
		}
	}
	if snap.State.WriteCounter != workers*each+2 {
		t.Fatalf("write counter %d", snap.State.WriteCounter)
	}
}

func TestUpdateOutcomeUnknownAppliesOnce(t *testing.T) {
	ctx := context.Background()
	for _, applied := range []bool{true, false} {
		mem := objectstore.NewMemStore()
		if _, err := Open(mem, "m").Create(ctx, DefaultConfig(), time.Now()); err != nil {
			t.Fatal(err)
		}
		before := openGroup(t, mem, "g")
		fs := &flakyPuts{Store: mem, key: "m", script: []bool{applied}}
		snap, err := Open(fs, "m").Update(ctx, func(s *State) error { s.OpenGroup("g"); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if g := snap.State.Groups["g"]; g.Epoch != before+1 {
			t.Fatalf("applied=%v: epoch %d from %d, want exactly one bump", applied, g.Epoch, before)
		}
		if fs.unknowns != 1 {
			t.Fatalf("injected %d unknown outcomes", fs.unknowns)
		}
	}
}

// openGroup opens group name of the manifest "m" in store with an Update of its own and
// returns the group's epoch after it.
func openGroup(t *testing.T, store objectstore.Store, name string) uint64 {
	t.Helper()
	snap, err := Open(store, "m").Update(context.Background(), func(s *State) error { s.OpenGroup(name); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return snap.State.Groups[name].Epoch
}

type flakyPuts struct {
	objectstore.Store
	key      string
	mu       sync.Mutex
	script   []bool
	unknowns int
}

func (f *flakyPuts) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	f.mu.Lock()
	var step *bool
	if key == f.key && len(f.script) > 0 {
		step = &f.script[0]
		f.script = f.script[1:]
		f.unknowns++
	}
	f.mu.Unlock()
	if step == nil {
		return f.Store.Put(ctx, key, body, size, cond)
	}
	if *step {
		if _, err := f.Store.Put(ctx, key, body, size, cond); err != nil {
			return objectstore.ObjectInfo{}, err
		}
	}
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errors.New("injected"))
}

// FuzzDecodeBody frames arbitrary bodies with a valid header and checksum, so the fuzzer
// explores the body parser and the invariant checks rather than the checksum.
func FuzzDecodeBody(f *testing.F) {
	st, _ := NewState(DefaultConfig(), time.UnixMilli(5))
	st.Apply(batch("p", 1, 10, &batchfmt.AppendInput{Records: recs(2, 5)}, &batchfmt.AppendInput{Records: recs(1), MatchSeqNum: u64(1000)}))
	st.OpenGroup("g")
	enc := st.Encode()
	f.Add(false, enc[headerLen:len(enc)-trailerLen])
	seg := (&Segment{Level: 0, Entries: st.Entries}).Encode()
	f.Add(true, seg[headerLen:len(seg)-trailerLen])
	f.Fuzz(func(t *testing.T, segment bool, body []byte) {
		magic := manifestMagic
		if segment {
			magic = segmentMagic
		}
		data := frame(magic, FormatVersion, func(e *encoder) { e.raw(body) })
		if segment {
			g, err := DecodeSegment("fuzz", data)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("wrong error class: %v", err)
				}
				return
			}
			if _, err := DecodeSegment("fuzz", g.Encode()); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			return
		}
		s, err := Decode("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("wrong error class: %v", err)
			}
			return
		}
		again, err := Decode("fuzz", s.Encode())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encode differs: %v", err)
		}
	})
}

// opCounter counts a store's Head and Put calls.
type opCounter struct {
	objectstore.Store
	heads, puts int
}

func (c *opCounter) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	c.heads++
	return c.Store.Head(ctx, key)
}

func (c *opCounter) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	c.puts++
	return c.Store.Put(ctx, key, body, size, cond)
}

// TestCreateRequests: creating a manifest under a free name is one conditional PUT; over a
// tombstone (the collector's deletion) it is replaced, conditionally on its version; over
// a live manifest it is ErrExists and the manifest stays.
func TestCreateRequests(t *testing.T) {
	ctx := context.Background()
	s := &opCounter{Store: objectstore.NewMemStore()}
	now := time.Unix(1700000000, 0)
	if _, err := Open(s, "a/manifest").Create(ctx, DefaultConfig(), now); err != nil {
		t.Fatal(err)
	}
	if s.heads != 0 || s.puts != 1 {
		t.Fatalf("create under a free name: %d HEADs and %d PUTs, want 0 and 1", s.heads, s.puts)
	}
	if _, err := objectstore.PutBytes(ctx, s.Store, "b/manifest", nil, objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(s, "b/manifest").Load(ctx); !errors.Is(err, ErrNotExist) {
		t.Fatalf("load of a tombstone: %v, want ErrNotExist", err)
	}
	snap, err := Open(s, "b/manifest").Create(ctx, DefaultConfig(), now)
	if err != nil {
		t.Fatalf("create over a tombstone: %v", err)
	}
	if got, err := Open(s, "b/manifest").Load(ctx); err != nil || got.State.Generation != snap.State.Generation {
		t.Fatalf("after create over a tombstone: %v, %v", got, err)
	}
	before, _ := Open(s, "a/manifest").Load(ctx)
	if _, err := Open(s, "a/manifest").Create(ctx, DefaultConfig(), now.Add(time.Hour)); !errors.Is(err, ErrExists) {
		t.Fatalf("create over a live manifest: %v, want ErrExists", err)
	}
	if after, err := Open(s, "a/manifest").Load(ctx); err != nil || after.Version != before.Version {
		t.Fatalf("the live manifest changed: %v", err)
	}
}

// headFails fails every Head with a plain (retryable) error.
type headFails struct{ objectstore.Store }

func (headFails) Head(context.Context, string) (objectstore.ObjectInfo, error) {
	return objectstore.ObjectInfo{}, errors.New("injected HEAD failure")
}

// TestCreateHeadFailure: when something is at the path and reading it fails, Create reports
// that failure, not ErrExists (it could be a tombstone the create would replace).
func TestCreateHeadFailure(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	if _, err := objectstore.PutBytes(ctx, mem, "t/manifest", nil, objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	_, err := Open(headFails{mem}, "t/manifest").Create(ctx, DefaultConfig(), time.Unix(1700000000, 0))
	if err == nil || errors.Is(err, ErrExists) {
		t.Fatalf("create over a tombstone whose HEAD failed: %v, want the HEAD's error", err)
	}
}

// TestApplySkipAndRejected: Batch.Skip rejects an append as RejectPreceding (stored, read back
// as ErrPrecedingAppendFailed) before its own conditions, and Batch.Rejected hears of every
// rejection in order, a failed condition's as well as a skip's.
func TestApplySkipAndRejected(t *testing.T) {
	s := newState(t, DefaultConfig())
	b := batch("p1", 1, 10,
		&batchfmt.AppendInput{Records: recs(1)},
		&batchfmt.AppendInput{Records: recs(1), MatchSeqNum: u64(99)},
		&batchfmt.AppendInput{Records: recs(2)},
		&batchfmt.AppendInput{Records: recs(1)})
	var heard []int
	broken := false
	b.Skip = func(i int) bool { return broken }
	b.Rejected = func(i int) { heard = append(heard, i); broken = true }
	res, err := s.Apply(b)
	if err != nil {
		t.Fatal(err)
	}
	var mm *SeqNumMismatchError
	if res.Appends[0].Err != nil || !errors.As(res.Appends[1].Err, &mm) ||
		!errors.Is(res.Appends[2].Err, ErrPrecedingAppendFailed) || !errors.Is(res.Appends[3].Err, ErrPrecedingAppendFailed) {
		t.Fatalf("results %+v", res.Appends)
	}
	if !reflect.DeepEqual(heard, []int{1, 2, 3}) {
		t.Fatalf("Rejected heard %v, want [1 2 3]", heard)
	}
	e := s.Entries[len(s.Entries)-1]
	if e.Records != 1 || !e.IsRejected(1) || !e.IsRejected(2) || !e.IsRejected(3) || s.Tail.SeqNum != 1 {
		t.Fatalf("entry %+v, tail %+v", e, s.Tail)
	}
	got, err := Decode("m", s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	r := got.Entries[len(got.Entries)-1].Rejected
	if len(r) != 3 || r[1].Reason != RejectPreceding || !errors.Is(r[1].Err(), ErrPrecedingAppendFailed) {
		t.Fatalf("decoded rejections %+v", r)
	}
}
