package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// seed returns the test's random seed (SLUICE_SEED replays one) and logs it.
func seed(t testing.TB) uint64 {
	t.Helper()
	return testseed.Get(t)
}

// wantRec is a record as the writer expects a reader to see it.
type wantRec struct {
	seq, ts uint64
	body    string
	command string
	metered int
}

const baseTS = 1_700_000_000_000

// fixture is a stream written through the producer, batch object by batch object, with the
// positions every record must have.
type fixture struct {
	t     testing.TB
	store objectstore.Store
	p     *producer.Producer
	now   atomic.Uint64 // the producer's clock (arrival times), ms
	want  []wantRec
	path  string
}

func newFixture(t testing.TB, store objectstore.Store, scfg manifest.Config, comp batchfmt.Compression) *fixture {
	t.Helper()
	f := &fixture{t: t, store: store, path: "ingest/manifest"}
	f.now.Store(baseTS + 1_000_000)
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.FlushInterval = time.Hour // objects are cut by Flush only
	cfg.BatchCompression = comp
	cfg.StreamConfig = scfg
	cfg.Now = func() time.Time { return time.UnixMilli(int64(f.now.Load())) }
	p, err := producer.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	f.p = p
	return f
}

// object writes one batch object holding the given appends and records what a reader
// must see. Each append is a slice of records.
func (f *fixture) object(appends ...[]batchfmt.Record) {
	f.t.Helper()
	ctx := context.Background()
	var tickets []*producer.Ticket
	for _, recs := range appends {
		tk, err := f.p.Append(ctx, batchfmt.AppendInput{Records: recs})
		if err != nil {
			f.t.Fatalf("append: %v", err)
		}
		tickets = append(tickets, tk)
	}
	if err := f.p.Flush(ctx); err != nil {
		f.t.Fatalf("flush: %v", err)
	}
	for i, tk := range tickets {
		ack, err := tk.Wait(ctx)
		if err != nil {
			f.t.Fatalf("append %d: %v", i, err)
		}
		if ack.Start.SeqNum != uint64(len(f.want)) {
			f.t.Fatalf("append %d starts at %d, want %d", i, ack.Start.SeqNum, len(f.want))
		}
		run := uint64(0)
		if n := len(f.want); n > 0 {
			run = f.want[n-1].ts
		}
		for j := range appends[i] {
			r := &appends[i][j]
			ts := f.now.Load()
			if r.HasTimestamp {
				ts = r.Timestamp
			}
			run = max(run, ts)
			f.want = append(f.want, wantRec{seq: uint64(len(f.want)), ts: run, body: string(r.Body), command: r.Command(), metered: r.MeteredSize()})
		}
		if ack.End.SeqNum != uint64(len(f.want)) || ack.End.Timestamp != run {
			f.t.Fatalf("append %d ends at %+v, want (%d, %d)", i, ack.End, len(f.want), run)
		}
	}
	f.now.Add(1000)
}

// rec is an envelope record with a client timestamp and a header.
func rec(ts uint64, body string) batchfmt.Record {
	return batchfmt.Record{Timestamp: ts, HasTimestamp: true, Body: []byte(body),
		Headers: []batchfmt.Header{{Name: []byte("k"), Value: []byte(body)}}}
}

// standard writes a stream of objects with several appends each, random sizes, repeated and
// decreasing client timestamps (the clock clamps them), a record without a timestamp
// (arrival time) and fence command records.
func (f *fixture) standard(rng *rand.Rand, objects int) {
	ts := uint64(baseTS)
	n := 0
	for o := range objects {
		var apps [][]batchfmt.Record
		for range 1 + rng.IntN(3) {
			var recs []batchfmt.Record
			for range 1 + rng.IntN(5) {
				switch rng.IntN(10) {
				case 0:
					ts -= 5 // earlier than the running max: clamped
				case 1, 2:
					// same timestamp as the previous record
				default:
					ts += uint64(1 + rng.IntN(20))
				}
				recs = append(recs, rec(ts, fmt.Sprintf("r%d-%s", n, randBody(rng))))
				n++
			}
			apps = append(apps, recs)
		}
		if o%3 == 1 {
			apps = append(apps, []batchfmt.Record{batchfmt.FenceRecord("")})
		}
		f.object(apps...)
	}
}

func randBody(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(40))
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

func (f *fixture) config() Config {
	cfg := DefaultConfig()
	cfg.ObjectStore = f.store
	return cfg
}

func (f *fixture) reader(mod func(*Config)) *Reader {
	f.t.Helper()
	cfg := f.config()
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewReader(cfg)
	if err != nil {
		f.t.Fatalf("reader: %v", err)
	}
	return r
}

// check compares records with the expected slice exactly.
func check(t testing.TB, what string, got []SequencedRecord, want []wantRec) {
	t.Helper()
	if len(got) != len(want) {
		first := func(n int) string {
			if n == 0 {
				return "none"
			}
			return "from"
		}
		var g0, w0 uint64
		if len(got) > 0 {
			g0 = got[0].SeqNum
		}
		if len(want) > 0 {
			w0 = want[0].seq
		}
		t.Fatalf("%s: got %d records (%s %d), want %d (%s %d)", what, len(got), first(len(got)), g0, len(want), first(len(want)), w0)
	}
	for i := range got {
		g, w := &got[i], &want[i]
		if g.SeqNum != w.seq || g.Timestamp != w.ts || string(g.Body) != w.body || g.Command() != w.command {
			t.Fatalf("%s: record %d is (%d, %d, %q, %q), want (%d, %d, %q, %q)", what, i,
				g.SeqNum, g.Timestamp, g.Body, g.Command(), w.seq, w.ts, w.body, w.command)
		}
		if w.command == "" && (len(g.Headers) != 1 || string(g.Headers[0].Value) != w.body) {
			t.Fatalf("%s: record %d headers %q", what, i, g.Headers)
		}
	}
}

func u64(v uint64) *uint64 { return &v }

// countingStore wraps a store, counting Gets (and conditional ones that found no change) and
// the most Gets of batch objects in flight at once; it can hold Gets of batch objects until
// released.
type countingStore struct {
	objectstore.Store
	prefix      string
	gets        atomic.Int64
	notModified atomic.Int64
	polled      chan struct{} // receives (without blocking) on every not-modified Get

	mu       sync.Mutex
	inflight int
	maxIn    int
	gate     chan struct{} // if non-nil, object Gets wait for a receive... closed to release
	entered  chan struct{} // if non-nil, receives once per object Get, after it counts as in flight
}

func (c *countingStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	c.gets.Add(1)
	isObj := opts.IfNoneMatch == "" && key != "ingest/manifest" && len(key) > len(c.prefix) && key[:len(c.prefix)] == c.prefix
	if isObj {
		c.mu.Lock()
		c.inflight++
		c.maxIn = max(c.maxIn, c.inflight)
		gate, entered := c.gate, c.entered
		c.mu.Unlock()
		if entered != nil {
			entered <- struct{}{}
		}
		defer func() {
			c.mu.Lock()
			c.inflight--
			c.mu.Unlock()
		}()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	obj, err := c.Store.Get(ctx, key, opts)
	if err == nil && isObj {
		// Read the body now so that the in-flight count covers the transfer.
		data, rerr := io.ReadAll(obj.Body)
		obj.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		obj.Body = io.NopCloser(bytes.NewReader(data))
	}
	if opts.IfNoneMatch != "" && errors.Is(err, objectstore.ErrNotModified) {
		c.notModified.Add(1)
		if c.polled != nil {
			select {
			case c.polled <- struct{}{}:
			default:
			}
		}
	}
	return obj, err
}
