package committer_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// putCounter counts the writes that reach a store, by kind of key.
type putCounter struct {
	objectstore.Store
	windows, manifests, other atomic.Int64
	maxWindow                 atomic.Int64  // the largest window written, in bytes
	windowDelay               time.Duration // each window write takes this long
}

func (s *putCounter) Put(ctx context.Context, key string, r io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	switch {
	case strings.HasPrefix(key, journal.Root):
		s.windows.Add(1)
		for m := s.maxWindow.Load(); size > m && !s.maxWindow.CompareAndSwap(m, size); m = s.maxWindow.Load() {
		}
		time.Sleep(s.windowDelay)
	case strings.HasSuffix(key, "/manifest"):
		s.manifests.Add(1)
	default:
		s.other.Add(1)
	}
	return s.Store.Put(ctx, key, r, size, cond)
}

// journalCommitter is a journal committer over store, answering in process at url.
func journalCommitter(t *testing.T, store objectstore.Store, id string, now func() time.Time) *committer.Committer {
	t.Helper()
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = store, id, "http://"+id+".test"
	cfg.Journal = true
	cfg.Lease, cfg.CheckpointInterval = 2*time.Second, time.Second
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	if now != nil {
		cfg.Now = now
	}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// localProducer is a producer of the stream at dir whose commits go to c in process.
func localProducer(t *testing.T, store objectstore.Store, dir string, c *committer.Committer, now func() time.Time) *producer.Producer {
	t.Helper()
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.Stream = stream.MustNew(dir+"/manifest", dir+"/data")
	cfg.FlushInterval = time.Millisecond
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	cfg.Committer.URL, cfg.Committer.Local = c.URL(), c
	cfg.Committer.DirectFor = 20 * time.Millisecond
	if now != nil {
		cfg.Now, cfg.Committer.Now = now, now
	}
	p, err := producer.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// appendAll appends n records named prefix.i through p, all in flight at once, and
// returns the acked ones.
func appendAll(t *testing.T, p *producer.Producer, prefix string, n int) []acked {
	t.Helper()
	var tickets []*producer.Ticket
	for i := 0; i < n; i++ {
		tk, err := p.Append(context.Background(), batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(fmt.Sprintf("%s.%d", prefix, i))}}})
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	out := make([]acked, 0, n)
	for i, tk := range tickets {
		ack, err := tk.Wait(context.Background())
		if err != nil {
			t.Fatalf("append %s.%d: %v", prefix, i, err)
		}
		out = append(out, acked{bodies: []string{fmt.Sprintf("%s.%d", prefix, i)}, ack: ack})
	}
	return out
}

// verifyAt is verify for the stream whose manifest is at key.
func verifyAt(t *testing.T, store objectstore.Store, key string, acks []acked) {
	t.Helper()
	recs, _, _, err := streamcheck.Read(context.Background(), store, key)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	at := map[string]uint64{}
	for i, r := range recs {
		if r.Seq != uint64(i) {
			t.Fatalf("%s: record %d has seq_num %d", key, i, r.Seq)
		}
		if _, dup := at[r.Body]; dup {
			t.Fatalf("%s: record %q is in the stream twice", key, r.Body)
		}
		at[r.Body] = r.Seq
	}
	for _, a := range acks {
		for k, b := range a.bodies {
			seq, ok := at[b]
			if !ok {
				t.Fatalf("%s: acked record %q is missing", key, b)
			}
			if want := a.ack.Start.SeqNum + uint64(k); seq != want {
				t.Fatalf("%s: record %q at %d, its ack says %d", key, b, seq, want)
			}
		}
	}
	if len(recs) != countBodies(acks) {
		t.Fatalf("%s: %d records in the stream, %d acked", key, len(recs), countBodies(acks))
	}
}

func countBodies(acks []acked) int {
	n := 0
	for _, a := range acks {
		n += len(a.bodies)
	}
	return n
}

func createStream(t *testing.T, store objectstore.Store, key string) {
	t.Helper()
	if _, err := manifest.Open(store, key).Create(context.Background(), manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestJournalWritesOneWindowForManyStreams: appends to many streams through one journal
// committer are written as windows shared by the streams (no batch object, no manifest
// write per append), every acked record is readable at its position before and after the
// committer's checkpoints, and Close leaves manifests that name no journal.
func TestJournalWritesOneWindowForManyStreams(t *testing.T) {
	const streams, perStream = 20, 25
	store := &putCounter{Store: objectstore.NewMemStore()}
	for i := 0; i < streams; i++ {
		createStream(t, store, fmt.Sprintf("s%d/manifest", i))
	}
	c := journalCommitter(t, store, "c1", nil)
	before := store.manifests.Load()
	acks := make([][]acked, streams)
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		p := localProducer(t, store, fmt.Sprintf("s%d", i), c, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks[i] = appendAll(t, p, fmt.Sprintf("s%d", i), perStream)
		}()
	}
	wg.Wait()
	if n := store.other.Load(); n != 0 {
		t.Errorf("%d batch objects uploaded; the journal carries the bytes", n)
	}
	windows := store.windows.Load()
	if total := int64(streams * perStream); windows >= total/2 {
		t.Errorf("%d windows for %d appends: windows are not shared", windows, total)
	}
	// One role write per stream, and checkpoints: never one manifest write per append.
	if m := store.manifests.Load() - before; m >= int64(streams*perStream)/2 {
		t.Errorf("%d manifest writes for %d appends", m, streams*perStream)
	}
	t.Logf("%d appends on %d streams: %d windows, %d manifest writes", streams*perStream, streams, windows, store.manifests.Load()-before)
	for i := 0; i < streams; i++ {
		verifyAt(t, store, fmt.Sprintf("s%d/manifest", i), acks[i])
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < streams; i++ {
		key := fmt.Sprintf("s%d/manifest", i)
		snap, err := manifest.Open(store, key).Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if snap.State.Journal != nil || snap.State.Committer.ID != "" {
			t.Fatalf("%s after Close: journal %+v, role %+v", key, snap.State.Journal, snap.State.Committer)
		}
		verifyAt(t, store, key, acks[i])
	}
}

// TestJournalCheckpointFoldsIntoTheManifest: within the checkpoint interval the manifest
// itself shows the acked records (From moved past their windows) and the role renewed.
func TestJournalCheckpointFoldsIntoTheManifest(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	p := localProducer(t, store, "s", c, nil)
	acks := appendAll(t, p, "a", 10)
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if snap.State.Tail.SeqNum == 10 {
			if snap.State.Journal == nil || snap.State.Committer.ID != "c1" {
				t.Fatalf("checkpointed manifest: journal %+v, role %+v", snap.State.Journal, snap.State.Committer)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("manifest tail %d after 10 s, want 10", snap.State.Tail.SeqNum)
		}
		time.Sleep(50 * time.Millisecond)
	}
	verifyAt(t, store, "s/manifest", acks)
}

// journalOf returns the id of the one journal in store.
func journalOf(t *testing.T, store objectstore.Store) journal.ID {
	t.Helper()
	ids := map[journal.ID]bool{}
	err := objectstore.ListAll(context.Background(), store, journal.Root, func(o objectstore.ObjectInfo) error {
		id, _, ok := journal.ParseKey(o.Key)
		if !ok {
			return fmt.Errorf("not a journal key: %s", o.Key)
		}
		ids[id] = true
		return nil
	})
	if err != nil || len(ids) != 1 {
		t.Fatalf("journals in the store: %v (%v)", ids, err)
	}
	for id := range ids {
		return id
	}
	return 0
}

// TestJournalFencedCommitterAcksNothing: once another writer fences a committer's journal,
// nothing the committer writes there is acknowledged; it starts a new journal, and the
// producer's appends then commit after the earlier ones, none lost or duplicated.
func TestJournalFencedCommitterAcksNothing(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	p := localProducer(t, store, "s", c, nil)
	acks := appendAll(t, p, "a", 5)
	old := journalOf(t, store)
	if _, err := journal.Fence(context.Background(), store, old, 0, journal.Header{Nonce: [16]byte{9}}, nil); err != nil {
		t.Fatal(err)
	}
	// A raw request: the committer must answer it as not committed.
	resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "raw", 1))
	if resp.Error == nil || resp.Error.Code != wire.CodeRoleHeld {
		t.Fatalf("commit into a fenced journal answered %+v, want %s", resp.Error, wire.CodeRoleHeld)
	}
	acks = append(acks, appendAll(t, p, "b", 5)...)
	verifyAt(t, store, "s/manifest", acks)
}

// carriedRequest is a commit request of one batch of one record (body) that carries its
// bytes, for the stream at key, from producer id "raw-producer".
func carriedRequest(t *testing.T, store objectstore.Store, key, body string, num uint64) *wire.Request {
	t.Helper()
	snap, err := manifest.Open(store, key).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	in := &batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(body)}}}
	enc := batchfmt.NewEncoder(batchfmt.CompressionNone)
	enc.Add(in)
	data, err := enc.Finish()
	if err != nil {
		t.Fatal(err)
	}
	mb := &manifest.Batch{BatchNum: num, ArrivalMs: uint64(time.Now().UnixMilli()), Appends: []*batchfmt.AppendInput{in}}
	b := wire.NewBatch(mb, nil, nil)
	b.Data = append([]byte(nil), data...)
	return &wire.Request{ManifestPath: key, Generation: wire.Generation(snap.State.Generation), ProducerID: "raw-producer", Batches: []wire.Batch{b}}
}

// TestJournalPausedCommitterIsFencedOnTakeover: a committer paused past its lease finds,
// when it wakes, that another took the stream over (sealing its journal): its next window
// is refused, and the stream holds exactly what both acknowledged.
func TestJournalPausedCommitterIsFencedOnTakeover(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	a := journalCommitter(t, store, "a", nil)
	pa := localProducer(t, store, "s", a, nil)
	acks := appendAll(t, pa, "a", 5)
	// a pauses: it is not closed, and its lease has lapsed by b's clock, a minute ahead.
	ahead := func() time.Time { return time.Now().Add(time.Minute) }
	b := journalCommitter(t, store, "b", ahead)
	pb := localProducer(t, store, "s", b, ahead)
	acks = append(acks, appendAll(t, pb, "b", 5)...)
	// a wakes and commits a request as if nothing happened: refused, not written.
	resp := a.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "zombie", 1))
	if resp.Error == nil {
		t.Fatalf("a paused committer's commit after a takeover was acknowledged: %+v", resp)
	}
	acks = append(acks, appendAll(t, pb, "c", 3)...)
	verifyAt(t, store, "s/manifest", acks)
}

// TestManifestCommitterSealsAJournalLeftBehind: a committer without journal mode (a daemon
// restarted without --journal) that finds a manifest naming a lapsed journal committer's
// journal seals it and commits after its records, none lost.
func TestManifestCommitterSealsAJournalLeftBehind(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	a := journalCommitter(t, store, "a", nil)
	acks := appendAll(t, localProducer(t, store, "s", a, nil), "a", 5)
	// a is gone without giving up its role; b, without a journal, runs a minute ahead.
	ahead := func() time.Time { return time.Now().Add(time.Minute) }
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL, cfg.Now = store, "b", "http://b.test", ahead
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	b, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	// A request naming an uploaded batch object, straight to b: it must commit it.
	req := carriedRequest(t, store, "s/manifest", "uploaded", 1)
	key := stream.MustNew("s/manifest", "s/data").BatchKey(stream.BatchName{UnixMilli: time.Now().UnixMilli(), Random: 1})
	if _, err := objectstore.PutBytes(context.Background(), store, key, req.Batches[0].Data, objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	req.Batches[0].Key, req.Batches[0].Data = key, nil
	resp := b.Commit(context.Background(), req)
	if resp.Error != nil {
		t.Fatalf("a committer without a journal refused a commit to a stream with a journal left behind: %+v", resp.Error)
	}
	acks = append(acks, acked{bodies: []string{"uploaded"}, ack: producer.Ack{Start: resp.Batches[0].Appends[0].Start}})
	acks = append(acks, appendAll(t, localProducer(t, store, "s", b, ahead), "b", 5)...)
	snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Journal != nil {
		t.Fatalf("the manifest still names journal %+v", snap.State.Journal)
	}
	verifyAt(t, store, "s/manifest", acks)
}

// TestJournalWindowHoldsAtMostEightMiB: requests that carry more bytes than one window holds
// (8 MiB) are written as several windows, every one of them committed. (One window at a
// time is written, so requests queued meanwhile would all join the next one.)
func TestJournalWindowHoldsAtMostEightMiB(t *testing.T) {
	// Slow window writes: the requests queue behind the first and would all join the next.
	store := &putCounter{Store: objectstore.NewMemStore(), windowDelay: 50 * time.Millisecond}
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	big := strings.Repeat("x", 900<<10) // ten of these pass 8 MiB
	var wg sync.WaitGroup
	resps := make([]*wire.Response, 12)
	for i := range resps {
		req := carriedRequest(t, store, "s/manifest", big, uint64(i+1))
		req.ProducerID = fmt.Sprintf("p%d", i) // each its own producer: no dedup between them
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i] = c.Commit(context.Background(), req)
		}()
	}
	wg.Wait()
	for i, r := range resps {
		if r.Error != nil {
			t.Fatalf("request %d: %+v", i, r.Error)
		}
	}
	if w := store.windows.Load(); w < 2 {
		t.Fatalf("%d windows for 11 MiB of carried records, want at least 2 (8 MiB each at most)", w)
	}
	if m := store.maxWindow.Load(); m > 8<<20+64<<10 {
		t.Fatalf("a window of %d bytes: more than 8 MiB of carried records", m)
	}
	_, st, err := manifest.Open(store, "s/manifest").LoadView(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Tail.SeqNum != 12 {
		t.Fatalf("tail %d after 12 committed records", st.Tail.SeqNum)
	}
}
