package producer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// A fixed producer id whose row was evicted from the producer table restarts its batch
// numbers at 1, so the manifest still holds an entry of an earlier run under the same
// (producer id, batch number). When the first write of the new run fails, the commit loop must
// not take that old entry for its own batch: the new append would be acknowledged with the
// old records' positions and never committed.
func TestEvictedRowRestartDoesNotResolveFromOldEntry(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	cfg := testConfig(mem)
	cfg.ProducerID = "ingest-host-1"

	p := newProducer(t, cfg)
	oldAck, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("old")})
	if err != nil {
		t.Fatal(err)
	}
	closeProducer(t, p)

	// MaxProducers busier producers evict the row, least recently seen first (as Apply's
	// PruneProducers does).
	if _, err := manifest.Open(mem, cfg.Stream.ManifestKey()).Update(ctx, func(st *manifest.State) error {
		seen := st.Producers[cfg.ProducerID].LastSeenMs
		for i := range manifest.MaxProducers {
			st.Producers[fmt.Sprintf("other-%04d", i)] = manifest.ProducerState{LastBatch: 1, LastSeenMs: seen + 1}
		}
		st.PruneProducers(seen + 1)
		if _, ok := st.Producers[cfg.ProducerID]; ok {
			return fmt.Errorf("row not evicted")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The restarted producer's first manifest write fails (nothing written).
	f := &failManifest{Store: mem, left: 1, keys: map[string]bool{}}
	cfg.ObjectStore = f
	p = newProducer(t, cfg)
	newAck, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("new")})
	if err != nil {
		t.Fatal(err)
	}
	closeProducer(t, p)
	if f.left != 0 {
		t.Fatalf("the injected failure did not happen")
	}
	recs, _ := readStream(t, mem, cfg.Stream.ManifestKey())
	verify(t, recs, []ackedAppend{{bodies: []string{"old"}, ack: oldAck}, {bodies: []string{"new"}, ack: newAck}}, nil,
		map[string]bool{"old": true, "new": true})
}

// ageStore delays chosen uploads and the first manifest write (which then fails), and checks
// at every manifest write that each newly committed batch object's upload began at most
// deadline+slack ago.
type ageStore struct {
	objectstore.Store
	deadline, slack time.Duration

	mu         sync.Mutex
	started    map[string]time.Time
	puts       map[string]int // uploads per record body
	committed  map[string]bool
	writes     int
	violations []string
}

func (s *ageStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	now := time.Now()
	switch {
	case strings.HasPrefix(key, "ingest/0"):
		var delay time.Duration
		s.mu.Lock()
		s.started[key] = now
		for _, b := range []string{"b1-record", "b2-record"} {
			if bytes.Contains(data, []byte(b)) {
				s.puts[b]++
				if b == "b1-record" && s.puts[b] == 1 {
					delay = 20 * time.Millisecond // so b2 is uploaded first: one group of two
				}
				if b == "b2-record" && s.puts[b] == 2 {
					delay = 100 * time.Millisecond // a slow re-upload
				}
			}
		}
		s.mu.Unlock()
		time.Sleep(delay)
	case key == "ingest/manifest" && cond.IfMatch != "":
		s.mu.Lock()
		s.writes++
		first := s.writes == 1
		if !first {
			st, err := manifest.Decode(key, data)
			if err != nil {
				s.mu.Unlock()
				return objectstore.ObjectInfo{}, err
			}
			for _, e := range st.Entries {
				if s.committed[e.Key] {
					continue
				}
				s.committed[e.Key] = true
				if age := now.Sub(s.started[e.Key]); age > s.deadline+s.slack {
					s.violations = append(s.violations, fmt.Sprintf("%s committed %v after its upload began", e.Key, age))
				}
			}
		}
		s.mu.Unlock()
		if first {
			time.Sleep(50 * time.Millisecond)
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, errInjected)
		}
	}
	return s.Store.Put(ctx, key, bytes.NewReader(data), int64(len(data)), cond)
}

// Re-uploading one stale batch of a group can take long enough for another batch of the group
// (checked or re-uploaded before it) to pass the commit deadline: none may be committed past
// the deadline, or the collector may already have deleted its object.
func TestNoBatchCommittedPastDeadlineAfterSlowReupload(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	s := &ageStore{Store: mem, deadline: 40 * time.Millisecond, slack: 30 * time.Millisecond,
		started: map[string]time.Time{}, puts: map[string]int{}, committed: map[string]bool{}}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend // one batch per append
	cfg.CommitDeadline = s.deadline
	p := newProducer(t, cfg)
	t1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("b1-record")})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("b2-record")})
	if err != nil {
		t.Fatal(err)
	}
	ack1, err1 := t1.Wait(ctx)
	ack2, err2 := t2.Wait(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	closeProducer(t, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.puts["b2-record"] < 2 {
		t.Fatalf("uploads %v: the slow re-upload did not happen", s.puts)
	}
	for _, v := range s.violations {
		t.Error(v)
	}
	recs, _ := readStream(t, mem, cfg.Stream.ManifestKey())
	verify(t, recs, []ackedAppend{{bodies: []string{"b1-record"}, ack: ack1}, {bodies: []string{"b2-record"}, ack: ack2}}, nil,
		map[string]bool{"b1-record": true, "b2-record": true})
}

// floodStore: the first manifest write (of the one producer using it) lands but reports an
// unknown outcome, and before the producer can look, other writers commit enough entries to
// seal its entry into a segment and evict its row from the producer table. Then the first
// read of a segment fails.
type floodStore struct {
	objectstore.Store
	mu       sync.Mutex
	flooded  bool
	segFails int
}

func (f *floodStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	f.mu.Lock()
	flood := key == "ingest/manifest" && cond.IfMatch != "" && !f.flooded
	f.flooded = f.flooded || flood
	f.mu.Unlock()
	if !flood {
		return f.Store.Put(ctx, key, body, size, cond)
	}
	if _, err := f.Store.Put(ctx, key, body, size, cond); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	enc := batchfmt.NewEncoder(batchfmt.CompressionNone)
	fence := &batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("")}}
	enc.Add(fence)
	obj, err := enc.Finish()
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if _, err := objectstore.PutBytes(ctx, f.Store, "ingest/0other", obj, objectstore.IfAbsent()); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	now := uint64(time.Now().UnixMilli()) + 1000
	if _, err := manifest.Open(f.Store, key).Update(ctx, func(st *manifest.State) error {
		for i := range manifest.MaxRecentEntries + 100 {
			if _, err := st.Apply(&manifest.Batch{Key: "ingest/0other", ObjectBytes: uint64(len(obj)), ProducerID: fmt.Sprintf("other-%d", i),
				BatchNum: 1, ArrivalMs: now, Appends: []*batchfmt.AppendInput{fence}}); err != nil {
				return err
			}
		}
		for i := range manifest.MaxProducers {
			st.Producers[fmt.Sprintf("busy-%04d", i)] = manifest.ProducerState{LastBatch: 1, LastSeenMs: now}
		}
		st.PruneProducers(now)
		return nil
	}); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	f.mu.Lock()
	f.segFails = 1
	f.mu.Unlock()
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errInjected)
}

func (f *floodStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	f.mu.Lock()
	fail := strings.HasPrefix(key, stream.SegmentPrefix("ingest/manifest")) && f.segFails > 0
	if fail {
		f.segFails--
	}
	f.mu.Unlock()
	if fail {
		return nil, objectstore.NewOpError("get", key, nil, errInjected)
	}
	return f.Store.Get(ctx, key, opts)
}

// After a write with an unknown outcome that did land, with the producer's row evicted and
// its entry sealed into a segment, a failed segment read must not be taken for "not
// committed": writing the batch again would commit its records twice.
func TestSegmentReadFailureDoesNotRecommit(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	f := &floodStore{Store: mem}
	p := newProducer(t, testConfig(f))
	ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("once")})
	if err != nil {
		t.Fatal(err)
	}
	closeProducer(t, p)
	if !f.flooded || f.segFails != 0 {
		t.Fatalf("scenario did not happen: flooded %v, segment failures left %d", f.flooded, f.segFails)
	}
	recs, st := readStream(t, mem, "ingest/manifest")
	if _, ok := st.Producers[p.ID()]; ok {
		t.Fatalf("the producer's row was not evicted")
	}
	verify(t, recs, []ackedAppend{{bodies: []string{"once"}, ack: ack}}, nil, map[string]bool{"once": true})
}

// hookStore runs hook once, before the first manifest write that passes through it.
type hookStore struct {
	objectstore.Store
	path string
	once sync.Once
	hook func()
}

func (h *hookStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if key == h.path {
		h.once.Do(h.hook)
	}
	return h.Store.Put(ctx, key, body, size, cond)
}

// TestReusedProducerIDIsReported: a fixed id reused while the dead process's write was still
// in flight: that write lands first, with the same batch number. The new producer must not
// take the old entry's positions for its own append's (the append is not in the stream); it
// fails the ticket with ErrProducerIDReused.
func TestReusedProducerIDIsReported(t *testing.T) {
	ctx := context.Background()
	inner := objectstore.NewMemStore()
	cfg := testConfig(inner)
	cfg.ProducerID = "ingest-host-1"
	if _, err := manifest.Open(inner, cfg.Stream.ManifestKey()).Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	hs := &hookStore{Store: inner, path: cfg.Stream.ManifestKey()}
	hs.hook = func() {
		// The old process's in-flight commit of its batch 1 lands now.
		snap, err := manifest.Open(inner, cfg.Stream.ManifestKey()).Load(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		st := snap.State.Clone()
		old := []*batchfmt.AppendInput{{Records: []batchfmt.Record{{Body: []byte("old-1")}, {Body: []byte("old-2")}}}}
		if _, err := st.Apply(&manifest.Batch{Key: cfg.Stream.DataPrefix() + "/old-process-object", ObjectBytes: 10,
			ProducerID: cfg.ProducerID, BatchNum: 1, ArrivalMs: uint64(time.Now().UnixMilli()), Appends: old}); err != nil {
			t.Error(err)
			return
		}
		if _, err := manifest.Open(inner, cfg.Stream.ManifestKey()).Write(ctx, st, snap.Version); err != nil {
			t.Error(err)
		}
	}
	cfg.ObjectStore = hs
	p := newProducer(t, cfg)
	_, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("new-1")}, {Body: []byte("new-2")}}})
	if !errors.Is(err, ErrProducerIDReused) {
		t.Fatalf("append under a reused id: %v, want ErrProducerIDReused", err)
	}
}
