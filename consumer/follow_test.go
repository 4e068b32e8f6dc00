package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// collect reads batches from s in a goroutine and sends them on the returned channel.
func collect(ctx context.Context, s *Session) (<-chan ReadBatch, <-chan error) {
	out := make(chan ReadBatch, 100)
	errc := make(chan error, 1)
	go func() {
		for {
			b, err := s.Next(ctx)
			if err != nil {
				errc <- err
				return
			}
			out <- b
		}
	}()
	return out, errc
}

// await receives batches until n records arrived; the timeout only guards against a hang.
func await(t *testing.T, out <-chan ReadBatch, errc <-chan error, n int) []SequencedRecord {
	t.Helper()
	var got []SequencedRecord
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	for len(got) < n {
		select {
		case b := <-out:
			got = append(got, b.Records...)
		case err := <-errc:
			t.Fatalf("follower: %v (after %d records)", err, len(got))
		case <-guard.C:
			t.Fatalf("follower got %d of %d records: never woken", len(got), n)
		}
	}
	return got
}

// TestFollowNotifier: with polling effectively off (one hour), a follower is woken by the
// Notifier for every commit.
func TestFollowNotifier(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rng := rand.New(rand.NewPCG(seed(t), 6))
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 2)
		note := NewNotifier()
		r := f.reader(func(c *Config) { c.PollInterval = time.Hour; c.Notifier = note })
		s, err := r.Open(ctx, ReadRequest{Start: AtTailOffset(0), Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, errc := collect(ctx, s)
		for round := range 5 {
			from := len(f.want)
			var recs []batchfmt.Record
			for i := range 1 + rng.IntN(4) {
				recs = append(recs, rec(f.want[from-1].ts+uint64(i), fmt.Sprintf("live-%d-%d", round, i)))
			}
			f.object(recs)
			note.Notify(f.path)
			got := await(t, out, errc, len(f.want)-from)
			check(t, fmt.Sprintf("round %d", round), got, f.want[from:])
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v", err)
		}
	})
}

// TestFollowPolls: without notifications a follower polls the manifest with conditional GETs
// (answered "not modified" while nothing changes) and picks up a commit.
func TestFollowPolls(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, base objectstore.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cs := &countingStore{Store: base, prefix: "ingest/", polled: make(chan struct{}, 1)}
		rng := rand.New(rand.NewPCG(seed(t), 7))
		f := newFixture(t, cs, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 2)
		r := f.reader(func(c *Config) { c.PollInterval = time.Millisecond })
		s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(uint64(len(f.want))), Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, errc := collect(ctx, s)
		for range 3 {
			<-cs.polled // a conditional GET found the manifest unchanged
		}
		from := len(f.want)
		f.object([]batchfmt.Record{rec(f.want[from-1].ts+1, "polled")})
		got := await(t, out, errc, 1)
		check(t, "polled", got, f.want[from:])
		if cs.notModified.Load() < 3 {
			t.Fatalf("%d not-modified polls", cs.notModified.Load())
		}
	})
}

// TestFollowStreamDeleted: a follower whose stream disappears gets ErrStreamNotFound.
func TestFollowStreamDeleted(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 8))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 1)
	r := f.reader(func(c *Config) { c.PollInterval = time.Millisecond })
	s, err := r.Open(ctx, ReadRequest{Start: AtTailOffset(0), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := store.Delete(ctx, f.path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("deleted stream: %v", err)
	}
}

// TestReadAhead: objects are fetched in parallel up to the depth, never beyond it, and
// within the byte bound; delivery stays in order.
func TestReadAhead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		bytes int64
		want  int // objects in flight at once
	}{
		{"depth3", 3, 64 << 20, 3},
		{"depth1", 1, 64 << 20, 1},
		{"bytes", 8, 1, 1}, // one object always; a second would pass the byte bound
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			base := objectstore.NewMemStore()
			cs := &countingStore{Store: base, prefix: "ingest/"}
			rng := rand.New(rand.NewPCG(seed(t), 9))
			f := newFixture(t, cs, manifest.DefaultConfig(), batchfmt.CompressionNone)
			f.standard(rng, 10)
			gate := make(chan struct{})
			entered := make(chan struct{}, 100)
			cs.mu.Lock()
			cs.gate = gate
			cs.entered = entered
			cs.maxIn = 0
			cs.mu.Unlock()
			r := f.reader(func(c *Config) { c.ObjectStore = cs; c.ReadAheadDepth = tc.depth; c.ReadAheadBytes = tc.bytes })
			s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			type res struct {
				recs []SequencedRecord
				err  error
			}
			done := make(chan res, 1)
			go func() {
				var all []SequencedRecord
				for {
					b, err := s.Next(ctx)
					all = append(all, b.Records...)
					if err != nil {
						done <- res{all, err}
						return
					}
				}
			}()
			for range tc.want {
				<-entered // tc.want fetches started before any completed
			}
			close(gate)
			got := <-done
			if !errors.Is(got.err, ErrDone) {
				t.Fatal(got.err)
			}
			check(t, "read-ahead", got.recs, f.want)
			cs.mu.Lock()
			maxIn := cs.maxIn
			cs.mu.Unlock()
			if maxIn != tc.want {
				t.Fatalf("%d object reads in flight at most, want %d", maxIn, tc.want)
			}
		})
	}
}

// TestPollAtTail: Poll returns the records as Next does, then, with only command records
// left (skipped by a group member that asked so), an empty batch whose NextSeq has reached
// the tail, at once instead of waiting for appends; and after a new append, that record.
func TestPollAtTail(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.object([]batchfmt.Record{rec(baseTS, "a"), rec(baseTS+1, "b")}, []batchfmt.Record{batchfmt.FenceRecord("t1"), batchfmt.FenceRecord("t2")})
	c, err := Open(ctx, groupConfig(f, "g"), GroupOptions{SkipCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var got []string
	for {
		b, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			got = append(got, string(r.Body))
		}
		if len(b.Records) == 0 {
			if b.NextSeq != 4 || b.Tail.SeqNum != 4 {
				t.Fatalf("empty poll: NextSeq %d, tail %d; want both at 4 (the fences skipped)", b.NextSeq, b.Tail.SeqNum)
			}
			break
		}
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("polled %q, want a and b", got)
	}
	f.object([]batchfmt.Record{rec(baseTS+2, "c")})
	for {
		b, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Records) > 0 {
			if string(b.Records[0].Body) != "c" || b.Records[0].SeqNum != 4 {
				t.Fatalf("after an append, polled %q at %d, want c at 4", b.Records[0].Body, b.Records[0].SeqNum)
			}
			return
		}
	}
}
