package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/s2api"
)

// newEngine starts an engine on store (with mod applied to its config) that the test closes.
func newEngine(t testing.TB, store objectstore.Store, mod func(*Config)) *Engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Store = store
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

func records(n int, prefix string) batchfmt.AppendInput {
	in := batchfmt.AppendInput{}
	for i := 0; i < n; i++ {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	return in
}

func TestConfigValidateReportsEverything(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IdleTimeout = 0
	cfg.Producer.FlushInterval = 0
	err := cfg.Validate()
	for _, want := range []string{"Store", "IdleTimeout", "flush interval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}

// TestNilLoggerAndClockAreLegal: Config.Logger and Now document nil as discard and
// time.Now; the engine opens with them and serves an append.
func TestNilLoggerAndClockAreLegal(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store = objectstore.NewMemStore()
	cfg.Logger, cfg.Now = nil, nil
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("nil logger and clock: %v", err)
	}
	ctx := context.Background()
	defer e.Close(ctx)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "", "s", records(2, "x")); err != nil {
		t.Fatal(err)
	}
}

func TestStreamLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, objectstore.NewMemStore(), nil)
	if _, err := e.CreateStream(ctx, "no-such-basin", "s", manifest.DefaultConfig()); !errors.Is(err, ErrBasinNotFound) {
		t.Fatalf("create in missing basin: %v", err)
	}
	if _, err := e.CreateBasin(ctx, "my-basin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateBasin(ctx, "my-basin", nil); !errors.Is(err, ErrBasinExists) {
		t.Fatalf("second create basin: %v", err)
	}
	for _, basin := range []string{"", "my-basin"} {
		if _, err := e.Append(ctx, basin, "orders/2024", records(1, "x")); !errors.Is(err, manifest.ErrNotExist) {
			t.Fatalf("append to missing stream: %v", err)
		}
		if _, err := e.CreateStream(ctx, basin, "orders/2024", manifest.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CreateStream(ctx, basin, "orders/2024", manifest.DefaultConfig()); !errors.Is(err, manifest.ErrExists) {
			t.Fatalf("second create: %v", err)
		}
		ack, err := e.Append(ctx, basin, "orders/2024", records(3, "a"))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Start.SeqNum != 0 || ack.End.SeqNum != 3 || ack.Tail.SeqNum != 3 {
			t.Fatalf("ack %+v", ack)
		}
		ack, err = e.Append(ctx, basin, "orders/2024", records(2, "b"))
		if err != nil || ack.Start.SeqNum != 3 || ack.End.SeqNum != 5 {
			t.Fatalf("second ack %+v %v", ack, err)
		}
		tail, err := e.Tail(ctx, basin, "orders/2024")
		if err != nil || tail.SeqNum != 5 {
			t.Fatalf("tail %+v %v", tail, err)
		}
		snap, err := e.Reconfigure(ctx, basin, "orders/2024", func(c *manifest.Config) error {
			c.Retention = manifest.Retention{AgeSecs: 3600}
			return nil
		})
		if err != nil || snap.State.Config.Retention.AgeSecs != 3600 {
			t.Fatalf("reconfigure: %v", err)
		}
		streams, more, err := e.ListStreams(ctx, basin, "", "", 0)
		if err != nil || more || len(streams) != 1 || streams[0].Name() != "orders/2024" {
			t.Fatalf("list: %+v %v %v", streams, more, err)
		}
		if _, err := e.DeleteStream(ctx, basin, "orders/2024"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Tail(ctx, basin, "orders/2024"); !errors.Is(err, manifest.ErrNotExist) {
			t.Fatalf("tail after delete: %v", err)
		}
		st, _ := e.Locate(basin, "orders/2024")
		page, err := e.Store().List(ctx, st.DataPrefix(), "", 0)
		if err != nil || len(page.Objects) != 0 {
			t.Fatalf("objects left after delete: %+v %v", page.Objects, err)
		}
		// Recreated under the same name, the stream starts from 0 again, even though the
		// engine had a producer for the old one.
		if _, err := e.CreateStream(ctx, basin, "orders/2024", manifest.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		ack, err = e.Append(ctx, basin, "orders/2024", records(1, "c"))
		if err != nil || ack.Start.SeqNum != 0 {
			t.Fatalf("append after recreate: %+v %v", ack, err)
		}
	}
	if err := e.DeleteBasin(ctx, "my-basin"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Tail(ctx, "my-basin", "orders/2024"); !errors.Is(err, ErrBasinNotFound) {
		t.Fatalf("tail in deleted basin: %v", err)
	}
}

func TestConcurrentAppendsShareOneProducer(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, objectstore.NewMemStore(), nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	const writers, per = 8, 25
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ack, err := e.Append(ctx, "", "s", records(2, "w"))
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				for s := ack.Start.SeqNum; s < ack.End.SeqNum; s++ {
					if seen[s] {
						mu.Unlock()
						errc <- fmt.Errorf("seq_num %d acked twice", s)
						return // at most one error per writer: errc holds one per writer
					}
					seen[s] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(seen) != writers*per*2 {
		t.Fatalf("acked %d records, want %d", len(seen), writers*per*2)
	}
	for s := uint64(0); s < uint64(len(seen)); s++ {
		if !seen[s] {
			t.Fatalf("seq_num %d missing: not contiguous", s)
		}
	}
	e.mu.Lock()
	n := len(e.producers)
	e.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d producers open for one stream", n)
	}
}

func TestIdleProducersAreClosed(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEngine(t, objectstore.NewMemStore(), func(c *Config) {
		c.Now = clock
		c.IdleTimeout = 40 * time.Millisecond
	})
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "", "s", records(1, "x")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	// The janitor ticks every IdleTimeout/4; wait for it to notice (bounded).
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		n := len(e.producers)
		e.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle producer was not closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A later append opens a new producer and continues the stream.
	ack, err := e.Append(ctx, "", "s", records(1, "y"))
	if err != nil || ack.Start.SeqNum != 1 {
		t.Fatalf("append after idle close: %+v %v", ack, err)
	}
}

func TestS2ErrorMapping(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, objectstore.NewMemStore(), nil)
	b := e.S2()
	if _, err := b.CreateBasin(ctx, "my-basin", s2api.BasinConfig{}); err != nil {
		t.Fatal(err)
	}
	var apiErr *s2api.Error
	if _, err := b.CheckTail(ctx, "my-basin", "nope"); !errors.As(err, &apiErr) || apiErr.Code != s2api.CodeStreamNotFound {
		t.Fatalf("tail of missing stream: %v", err)
	}
	if _, err := b.CheckTail(ctx, "other-basin", "nope"); !errors.As(err, &apiErr) || apiErr.Code != s2api.CodeBasinNotFound {
		t.Fatalf("tail in missing basin: %v", err)
	}
	if _, err := b.Append(ctx, "my-basin", "auto", records(2, "x")); !errors.As(err, &apiErr) || apiErr.Code != s2api.CodeStreamNotFound {
		t.Fatalf("append to missing stream: %v", err)
	}
	if _, err := b.CreateStream(ctx, "my-basin", "auto", s2api.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	ack, err := b.Append(ctx, "my-basin", "auto", records(2, "x"))
	if err != nil || ack.End.SeqNum != 2 {
		t.Fatalf("append: %+v %v", ack, err)
	}
	m := uint64(0)
	in := records(1, "y")
	in.MatchSeqNum = &m
	var sm *s2api.SeqNumMismatchError
	if _, err := b.Append(ctx, "my-basin", "auto", in); !errors.As(err, &sm) || sm.Expected != 2 {
		t.Fatalf("seq mismatch: %v", err)
	}
	fence := batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("tok")}}
	if _, err := b.Append(ctx, "my-basin", "auto", fence); err != nil {
		t.Fatal(err)
	}
	wrong := "other"
	in = records(1, "z")
	in.FencingToken = &wrong
	var fm *s2api.FencingTokenMismatchError
	if _, err := b.Append(ctx, "my-basin", "auto", in); !errors.As(err, &fm) || fm.Actual != "tok" {
		t.Fatalf("fencing mismatch: %v", err)
	}
	if _, err := b.CreateStream(ctx, "my-basin", "auto", s2api.StreamConfig{}); !errors.As(err, &apiErr) || apiErr.Code != s2api.CodeResourceAlreadyExists {
		t.Fatalf("create existing: %v", err)
	}
	mode := "arrival"
	cfg, err := b.ReconfigureStream(ctx, "my-basin", "auto", s2api.StreamConfig{Timestamping: &s2api.TimestampingConfig{Mode: &mode}})
	if err != nil || *cfg.Timestamping.Mode != "arrival" || cfg.RetentionPolicy == nil || cfg.DeleteOnEmpty == nil {
		t.Fatalf("reconfigure: %+v %v", cfg, err)
	}
}

// TestLongStreamNamesOnTheFileStore: a 512-byte name (the longest allowed), and one whose
// escaped form is three times as long, work on the file store, whose path segments are at
// most 255 bytes, and are listed under their own names.
func TestLongStreamNamesOnTheFileStore(t *testing.T) {
	ctx := context.Background()
	store, err := storeurl.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, store, nil)
	names := []string{strings.Repeat("n", 512), strings.Repeat("é", 256), strings.Repeat("n", 511) + "."}
	for _, name := range names {
		if _, err := e.CreateStream(ctx, "", name, manifest.DefaultConfig()); err != nil {
			t.Fatalf("create %d-byte name: %v", len(name), err)
		}
		ack, err := e.Append(ctx, "", name, records(2, "x"))
		if err != nil || ack.End.SeqNum != 2 {
			t.Fatalf("append to %d-byte name: %+v %v", len(name), ack, err)
		}
	}
	got, _, err := e.ListStreams(ctx, "", "", "", 0)
	if err != nil || len(got) != len(names) {
		t.Fatalf("list: %d streams, %v", len(got), err)
	}
	for _, st := range got {
		if !slices.Contains(names, st.Name()) {
			t.Fatalf("listed a name that was never created: %.40q", st.Name())
		}
	}
}
