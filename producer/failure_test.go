package producer

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// Failing the producer (failAllLocked, failUnwrittenLocked) while the commit loop works.

// gateWriteStore holds the first manifest write until release is closed (then lets it
// succeed), and refuses batch uploads with ErrConditionsUnsupported while refuseData is set:
// a server (or one node behind a load balancer, or a proxy) answering 501 NotImplemented to
// one conditional PutObject after the store's check passed, or any Store implementation that
// returns the error for some puts only.
type gateWriteStore struct {
	objectstore.Store
	started    chan struct{}
	release    chan struct{}
	once       sync.Once
	refuseData atomic.Bool
}

func (s *gateWriteStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasSuffix(key, "/manifest") {
		first := false
		s.once.Do(func() { first = true; close(s.started) })
		if first {
			<-s.release
		}
		return s.Store.Put(ctx, key, body, size, cond)
	}
	if s.refuseData.Load() {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrConditionsUnsupported, errors.New("501 NotImplemented"))
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// An uploader fails the producer while the commit loop's manifest write for an earlier batch
// is in flight: that batch is left to the commit loop, which resolves it once, from its write
// (when an uploader failed every batch, the write's success resolved it again: close of a
// closed channel, a panic that crashed the daemon). The scenario runs in a child process so
// that a panic fails this test instead of the package's run.
func TestFailureDuringAManifestWrite(t *testing.T) {
	if os.Getenv("SLUICE_TEST_FAILURE_CHILD") == "1" {
		failureDuringWrite(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailureDuringAManifestWrite$", "-test.v")
	cmd.Env = append(os.Environ(), "SLUICE_TEST_FAILURE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "panic") {
		t.Fatalf("the producer crashed or failed when an upload was refused with ErrConditionsUnsupported during a manifest write that then succeeded (err %v):\n%s", err, out)
	}
}

func failureDuringWrite(t *testing.T) {
	store := &gateWriteStore{Store: newStreamStore(t), started: make(chan struct{}), release: make(chan struct{})}
	cfg := testConfig(store)
	cfg.FlushInterval = FlushEveryAppend // every append is its own batch
	p := newProducer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t1, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("a")}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-store.started: // batch 1 uploaded, its manifest write in flight
	case <-ctx.Done():
		t.Fatal("no manifest write")
	}
	store.refuseData.Store(true)
	t2, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("b")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Wait(ctx); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
		t.Fatalf("t2: %v", err)
	}
	select {
	case <-t1.Done():
		_, err := t1.Result()
		t.Fatalf("t1 resolved while a manifest write holding it was in flight: %v", err)
	default:
	}
	close(store.release) // the write succeeds: batch 1 is in the stream
	if ack, err := t1.Wait(ctx); err != nil || ack.Start.SeqNum != 0 {
		t.Fatalf("t1, whose manifest write succeeded: %+v, %v; want it acknowledged at seq_num 0", ack, err)
	}
	p.mu.Lock()
	inputs, bytes := p.room.inputs, p.room.bytes
	p.mu.Unlock()
	if inputs < 0 || bytes < 0 {
		t.Errorf("buffer accounting went negative: inputs %d, bytes %d (a batch released twice)", inputs, bytes)
	}
	_ = p.Close(ctx)
}

// conflictThenRefuseStore answers the first manifest write with a conflict (nothing
// written: another writer's write came first) and the second with ErrConditionsUnsupported
// (a 501 NotImplemented, refused before anything was stored).
type conflictThenRefuseStore struct {
	objectstore.Store
	n atomic.Int32
}

func (s *conflictThenRefuseStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasSuffix(key, "/manifest") {
		switch s.n.Add(1) {
		case 1:
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, errors.New("412"))
		case 2:
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrConditionsUnsupported, errors.New("501 NotImplemented"))
		}
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// No manifest write holding the batch can have taken effect (a conflict, then a refusal), so
// its append fails without ErrOutcomeUnknown (it did with the refusal's first fix, which
// looked only at batches held by a write for the first time).
func TestConflictThenConditionsUnsupportedIsNotOutcomeUnknown(t *testing.T) {
	store := &conflictThenRefuseStore{Store: newStreamStore(t)}
	p := newProducer(t, testConfig(store))
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
	if !errors.Is(err, objectstore.ErrConditionsUnsupported) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("append: %v, want ErrConditionsUnsupported without ErrOutcomeUnknown (no write took effect)", err)
	}
}

// After the producer failed on ErrConditionsUnsupported (several uploaders refused at once,
// appends and Flushes in flight), every ticket resolves with the error, nothing hangs, and
// Append/AppendSync/Submit/Close report the failure. Run with -race.
func TestConditionsUnsupportedConcurrentFailure(t *testing.T) {
	for round := 0; round < 20; round++ {
		store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrConditionsUnsupported, n: 1 << 30}
		cfg := testConfig(store)
		cfg.FlushInterval = FlushEveryAppend
		cfg.UploadConcurrency = 8
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var tickets []*Ticket
		for g := 0; g < 8; g++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					tk, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
					if err != nil {
						if !errors.Is(err, objectstore.ErrConditionsUnsupported) {
							t.Errorf("Append: %v", err)
						}
						return
					}
					mu.Lock()
					tickets = append(tickets, tk)
					mu.Unlock()
				}
			}()
			go func() {
				defer wg.Done()
				if err := p.Flush(ctx); err != nil && !errors.Is(err, objectstore.ErrConditionsUnsupported) {
					t.Errorf("Flush: %v", err)
				}
			}()
		}
		wg.Wait()
		for _, tk := range tickets {
			if _, err := tk.Wait(ctx); !errors.Is(err, objectstore.ErrConditionsUnsupported) || errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("ticket: %v", err)
			}
		}
		if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("y")}}}); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("AppendSync after the failure: %v", err)
		}
		if _, err := p.Submit(ctx, batchfmt.Record{Body: []byte("z")}); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("Submit after the failure: %v", err)
		}
		if err := p.Close(ctx); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("Close: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("round %d: something waited for the 10 s context", round)
		}
		cancel()
	}
}

// Flush returns an error when the producer failed (as documented), both a Flush in progress
// when the failure happens and one after it (they returned nil: no batch was pending).
func TestFlushAfterFailure(t *testing.T) {
	store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrConditionsUnsupported, n: 1 << 30}
	cfg := testConfig(store)
	p := newProducer(t, cfg)
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	ferr := p.Flush(ctx) // in progress when the upload is refused
	err := p.Flush(ctx)  // after
	if ferr == nil || err == nil {
		t.Errorf("Flush during the failure: %v; Flush after: %v; want the producer's failure (doc: Flush returns an error when the producer failed)", ferr, err)
	}
}
