package consumer

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func groupConfig(f *fixture, group string) GroupConfig {
	cfg := DefaultGroupConfig()
	cfg.Config = f.config()
	cfg.Group = group
	cfg.AckInterval = time.Hour // only explicit flushes, unless a test says otherwise
	cfg.PollInterval = time.Millisecond
	return cfg
}

func openGroup(t *testing.T, cfg GroupConfig) *Consumer {
	t.Helper()
	c, err := Open(context.Background(), cfg, GroupOptions{})
	if err != nil {
		t.Fatalf("open group %q: %v", cfg.Group, err)
	}
	return c
}

func groupState(t *testing.T, store objectstore.Store, group string) manifest.Group {
	t.Helper()
	snap, err := manifest.Open(store, "ingest/manifest").Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.State.Groups[group]
}

// TestGroupFencing: a second member of a group fences the first one, which learns it on its
// next checkpoint write and from then on gets *FencedError everywhere; the second member
// resumes after the first one's written checkpoint.
func TestGroupFencing(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(seed(t), 10))
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 4)
		n := uint64(len(f.want))
		cfg := groupConfig(f, "g")
		a := openGroup(t, cfg)
		ea := a.Epoch()
		if g := groupState(t, store, "g"); g.Epoch != ea {
			t.Fatalf("first member epoch %d, group %+v", ea, g)
		}
		b1, err := a.Next(ctx)
		if err != nil || len(b1.Records) == 0 {
			t.Fatalf("first batch: %v", err)
		}
		check(t, "member a", b1.Records, f.want[:len(b1.Records)])
		k := b1.Records[len(b1.Records)-1].SeqNum
		if err := a.AckThrough(k); err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if g := groupState(t, store, "g"); g.Checkpoint != k+1 || g.Epoch != ea {
			t.Fatalf("group after a's flush: %+v, want checkpoint %d epoch %d", g, k+1, ea)
		}

		b := openGroup(t, cfg)
		eb := b.Epoch()
		if eb <= ea {
			t.Fatalf("second member epoch %d, not above the first's %d", eb, ea)
		}
		rest := []SequencedRecord{}
		for uint64(len(rest)) < n-(k+1) {
			bb, err := b.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, bb.Records...)
		}
		check(t, "member b resumes after the checkpoint", rest, f.want[k+1:])

		// a acks more: the write fails, fenced by b's epoch, and stays failed.
		// Below the checkpoint: accepted or fenced, never a write.
		if err := a.Ack(k); err != nil && !errors.Is(err, ErrFenced) {
			t.Fatal(err)
		}
		if err := a.AckThrough(k); err != nil && !errors.Is(err, ErrFenced) {
			t.Fatal(err)
		}
		a.mu.Lock()
		a.low = k + 2 // as if it had delivered and acknowledged one more record
		a.mu.Unlock()
		err = a.Flush(ctx)
		var fe *FencedError
		if !errors.As(err, &fe) || fe.Epoch != ea || fe.Current != eb || fe.Group != "g" || !errors.Is(err, manifest.ErrStaleEpoch) {
			t.Fatalf("fenced flush: %v", err)
		}
		if err := a.Ack(k); !errors.As(err, &fe) {
			t.Fatalf("ack after fencing: %v", err)
		}
		if _, err := a.Next(ctx); !errors.As(err, &fe) {
			t.Fatalf("next after fencing: %v", err)
		}
		if err := a.Close(ctx); !errors.As(err, &fe) {
			t.Fatalf("close after fencing: %v", err)
		}
		if g := groupState(t, store, "g"); g.Checkpoint != k+1 || g.Epoch != eb {
			t.Fatalf("the fenced member moved the checkpoint or the epoch: %+v", g)
		}

		if err := b.AckThrough(n - 1); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if g := groupState(t, store, "g"); g.Checkpoint != n || g.Epoch != eb {
			t.Fatalf("after b closed: %+v, want checkpoint %d", g, n)
		}
		// A restarted member resumes at the tail; a member still reading learns of the new
		// epoch from its reads.
		c := openGroup(t, cfg)
		if acked, written := c.Checkpoint(); acked != n || written != n || c.Epoch() <= eb {
			t.Fatalf("restarted member: acked %d written %d epoch %d (b's %d)", acked, written, c.Epoch(), eb)
		}
		d := openGroup(t, cfg)
		defer d.Close(ctx)
		if d.Epoch() <= c.Epoch() {
			t.Fatalf("member epochs %d then %d", c.Epoch(), d.Epoch())
		}
		f.object([]batchfmt.Record{rec(f.want[n-1].ts, "after")})
		if _, err := c.Next(ctx); !errors.As(err, &fe) || fe.Epoch != c.Epoch() || fe.Current != d.Epoch() {
			t.Fatalf("member reading past a newer member's open: %v", err)
		}
		c.Close(ctx)
	})
}

// TestGroupFencedWhileFollowing: a member waiting at the tail stops with *FencedError as soon
// as its polling sees a newer member, and its acks fail from then on without any write.
func TestGroupFencedWhileFollowing(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.object([]batchfmt.Record{rec(baseTS, "a"), rec(baseTS, "b")})
	cfg := groupConfig(f, "g")
	a := openGroup(t, cfg)
	if _, err := a.Next(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		_, err := a.Next(ctx) // waits at the tail
		stopped <- err
	}()
	b := openGroup(t, cfg)
	defer b.Close(ctx)
	if b.Epoch() <= a.Epoch() {
		t.Fatalf("member epochs %d then %d", a.Epoch(), b.Epoch())
	}
	var fe *FencedError
	if err := <-stopped; !errors.As(err, &fe) || fe.Epoch != a.Epoch() || fe.Current != b.Epoch() {
		t.Fatalf("follower after a newer member opened (epochs %d, %d): %v", a.Epoch(), b.Epoch(), err)
	}
	if err := a.Ack(0); !errors.As(err, &fe) {
		t.Fatalf("ack: %v", err)
	}
	if g := groupState(t, store, "g"); g.Checkpoint != 0 || g.Epoch != b.Epoch() {
		t.Fatalf("group %+v", g)
	}
	a.Close(ctx)
}

// TestGroupAcks: out-of-order acknowledgements move the checkpoint only over a complete
// prefix; acks of undelivered records fail; several groups keep their own checkpoints.
func TestGroupAcks(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	var recs []batchfmt.Record
	for i := range 12 {
		recs = append(recs, rec(baseTS+uint64(i), "x"))
	}
	f.object(recs[:6], recs[6:])
	cfg := groupConfig(f, "g1")
	cfg.MaxBatchRecords = 10
	c := openGroup(t, cfg)
	b, err := c.Next(ctx)
	if err != nil || len(b.Records) != 10 {
		t.Fatalf("next: %d records, %v", len(b.Records), err)
	}
	steps := []struct {
		ack     func() error
		wantLow uint64
	}{
		{func() error { return c.Ack(1) }, 0},
		{func() error { return c.Ack(3) }, 0},
		{func() error { return c.Ack(0) }, 2},
		{func() error { return c.Ack(2) }, 4},
		{func() error { return c.Ack(9) }, 4},
		{func() error { return c.AckThrough(6) }, 7},
		{func() error { return c.Ack(8) }, 7},
		{func() error { return c.Ack(7) }, 10},
		{func() error { return c.Ack(3) }, 10},
	}
	for i, s := range steps {
		if err := s.ack(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if low, _ := c.Checkpoint(); low != s.wantLow {
			t.Fatalf("step %d: acked up to %d, want %d", i, low, s.wantLow)
		}
	}
	if err := c.Ack(10); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("ack of an undelivered record: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A second group starts from 0 and keeps its own checkpoint.
	cfg2 := groupConfig(f, "g2")
	c2 := openGroup(t, cfg2)
	b, err = c2.Next(ctx)
	if err != nil || b.Records[0].SeqNum != 0 {
		t.Fatalf("second group: %v", err)
	}
	if err := c2.AckThrough(2); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if g1, g2 := groupState(t, store, "g1"), groupState(t, store, "g2"); g1.Checkpoint != 10 || g2.Checkpoint != 3 {
		t.Fatalf("checkpoints g1 %+v g2 %+v", g1, g2)
	}
	c = openGroup(t, cfg)
	b, err = c.Next(ctx)
	if err != nil || b.Records[0].SeqNum != 10 || len(b.Records) != 2 {
		t.Fatalf("g1 resumed at %v: %v", b.Records, err)
	}
	c.Close(ctx)
}

// TestGroupAckTimer: pending acknowledgements are written AckInterval after the first one,
// and at once when AckRecords are pending (fake time: testing/synctest).
func TestGroupAckTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := objectstore.NewMemStore()
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		var recs []batchfmt.Record
		for i := range 20 {
			recs = append(recs, rec(baseTS+uint64(i), "x"))
		}
		f.object(recs)
		cfg := groupConfig(f, "g")
		cfg.AckInterval = 10 * time.Second
		cfg.AckRecords = 15
		c := openGroup(t, cfg)
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.AckThrough(4); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if g := groupState(t, store, "g"); g.Checkpoint != 0 {
			t.Fatalf("written before the interval: %+v", g)
		}
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if g := groupState(t, store, "g"); g.Checkpoint != 5 {
			t.Fatalf("not written after the interval: %+v", g)
		}
		if err := c.AckThrough(19); err != nil { // 15 pending: written at once
			t.Fatal(err)
		}
		synctest.Wait()
		if g := groupState(t, store, "g"); g.Checkpoint != 20 {
			t.Fatalf("not written at AckRecords: %+v", g)
		}
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		f.p.Close(ctx)
	})
}
