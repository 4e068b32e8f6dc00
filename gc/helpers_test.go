package gc

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
)

func seed(t testing.TB) uint64 {
	t.Helper()
	return testseed.Get(t)
}

var errInjected = errors.New("injected failure")

// faultStore wraps a store with a clock of its own (object modification times come from it,
// as a real store's come from the server's clock) and injected failures.
type faultStore struct {
	objectstore.Store

	mu  sync.Mutex
	now time.Time // the store's clock, unless realClock
	// realClock: modification times come from time.Now (under testing/synctest, fake time).
	realClock bool
	mod       map[string]time.Time
	failDel   func(key string) bool // fail this delete
	failPut   func(key string) bool // fail this put (before it happens)
	deletes   []string              // successful deletes, in order
	// onPut, if set, is called with every key successfully written.
	onPut func(key string)
}

func newFaultStore(base objectstore.Store, start time.Time) *faultStore {
	return &faultStore{Store: base, now: start, mod: map[string]time.Time{}}
}

func (f *faultStore) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func (f *faultStore) fix(info objectstore.ObjectInfo) objectstore.ObjectInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.mod[info.Key]; ok {
		info.ModTime = t
	}
	return info
}

func (f *faultStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	f.mu.Lock()
	fail := f.failPut != nil && f.failPut(key)
	f.mu.Unlock()
	if fail {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, errInjected)
	}
	info, err := f.Store.Put(ctx, key, body, size, cond)
	if err != nil {
		return info, err
	}
	f.mu.Lock()
	if f.realClock {
		f.mod[key] = time.Now()
	} else {
		f.mod[key] = f.now
	}
	info.ModTime = f.mod[key]
	onPut := f.onPut
	f.mu.Unlock()
	if onPut != nil {
		onPut(key)
	}
	return info, nil
}

func (f *faultStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	obj, err := f.Store.Get(ctx, key, opts)
	if err == nil {
		obj.ObjectInfo = f.fix(obj.ObjectInfo)
	}
	return obj, err
}

func (f *faultStore) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	info, err := f.Store.Head(ctx, key)
	if err == nil {
		info = f.fix(info)
	}
	return info, err
}

func (f *faultStore) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	page, err := f.Store.List(ctx, prefix, startAfter, limit)
	for i := range page.Objects {
		page.Objects[i] = f.fix(page.Objects[i])
	}
	return page, err
}

func (f *faultStore) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	fail := f.failDel != nil && f.failDel(key)
	f.mu.Unlock()
	if fail {
		return objectstore.NewOpError("delete", key, nil, errInjected)
	}
	if err := f.Store.Delete(ctx, key); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.mod, key)
	f.deletes = append(f.deletes, key)
	f.mu.Unlock()
	return nil
}

func (f *faultStore) deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deletes...)
}

// keys lists every key under prefix.
func keys(t testing.TB, s objectstore.Store, prefix string) []string {
	t.Helper()
	var out []string
	if err := objectstore.ListAll(context.Background(), s, prefix, func(o objectstore.ObjectInfo) error {
		out = append(out, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
