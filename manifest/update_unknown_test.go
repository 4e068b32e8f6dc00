package manifest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// landThenUnknown lets the first Put to key land, then runs between (the writes of
// other writers, or nothing) and reports the put's outcome as unknown. After that, Gets of
// key fail with a plain error while failGets is set.
type landThenUnknown struct {
	objectstore.Store
	key      string
	between  func()
	mu       sync.Mutex
	done     bool
	failGets bool
}

func (s *landThenUnknown) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.mu.Lock()
	first := key == s.key && !s.done
	s.done = s.done || first
	s.mu.Unlock()
	if !first {
		return s.Store.Put(ctx, key, body, size, cond)
	}
	if _, err := s.Store.Put(ctx, key, body, size, cond); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if s.between != nil {
		s.between()
	}
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errors.New("injected: connection reset after the request was sent"))
}

func (s *landThenUnknown) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	s.mu.Lock()
	fail := s.failGets && s.done && key == s.key
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected: GET failed")
	}
	return s.Store.Get(ctx, key, opts)
}

var fastUnknownBackoff = Backoff{Initial: time.Microsecond, Max: time.Microsecond, Multiplier: 1}

// TestUpdateNonceWindowNeverAppliesTwice: Update's write lands but its outcome is reported
// unknown; before Update reloads, 32 writes of other writers land (a busy stream: many
// producers, consumer acks, the collector). The write's nonce has left the 32-entry
// RecentWrites window, so Update concludes the write did not take effect and applies fn a
// second time, which breaks the promise that "fn's change is applied at most once": Update
// must report the outcome as unknown instead (it once applied fn again).
func TestUpdateNonceWindowNeverAppliesTwice(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	if _, err := Open(mem, "m").Create(ctx, DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	others := func() {
		for range maxRecentWrites {
			if _, err := Open(mem, "m").Update(ctx, func(s *State) error { s.OpenGroup("other"); return nil }); err != nil {
				t.Error(err)
			}
		}
	}
	before := openGroup(t, mem, "g")
	fs := &landThenUnknown{Store: mem, key: "m", between: others}
	snap, err := Open(fs, "m", WithBackoff(fastUnknownBackoff)).Update(ctx, func(s *State) error { s.OpenGroup("g"); return nil })
	final, lerr := Open(mem, "m").Load(ctx)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if g := final.State.Groups["g"]; g.Epoch != before+1 {
		returned := "none" // Update returns no snapshot with an error
		if snap != nil {
			returned = fmt.Sprint(snap.State.Groups["g"].Epoch)
		}
		t.Fatalf("fn applied %d times (epoch %d from %d; Update returned err=%v, epoch in its snapshot %s); want at most once, or an error matching ErrOutcomeUnknown",
			g.Epoch-before, g.Epoch, before, err, returned)
	}
}

// TestUpdateUnknownThenReloadFailsKeepsOutcomeUnknown: Update's write lands but its outcome is
// reported unknown; the reload that would resolve it fails (the network is still down).
// Update's error must match ErrOutcomeUnknown, since the change is in the manifest (it once
// returned the load's plain error: the caller was told "failed" for a write that took effect).
func TestUpdateUnknownThenReloadFailsKeepsOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	if _, err := Open(mem, "m").Create(ctx, DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	before := openGroup(t, mem, "g")
	fs := &landThenUnknown{Store: mem, key: "m", failGets: true}
	_, err := Open(fs, "m", WithBackoff(fastUnknownBackoff)).Update(ctx, func(s *State) error { s.OpenGroup("g"); return nil })
	final, lerr := Open(mem, "m").Load(ctx)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if e := final.State.Groups["g"].Epoch; e != before+1 {
		t.Fatalf("setup: the write did not land once (epoch %d from %d)", e, before)
	}
	if err == nil || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Update returned %v; the write took effect, so the error must match ErrOutcomeUnknown", err)
	}
}
