package manifest_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// condRefusingStore refuses conditional puts with kind (as s3.Store does once it found that
// the server ignores conditional writes); reads and unconditional puts work.
type condRefusingStore struct {
	objectstore.Store
	kind error
	puts atomic.Int32
}

func (s *condRefusingStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if cond != (objectstore.PutCondition{}) {
		s.puts.Add(1)
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, s.kind, errors.New("refused"))
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// Update stops at a refused write (objectstore.Refused: ErrConditionsUnsupported,
// ErrAccessDenied, ErrNoBucket), which fails the same way every time: it retried it 50 times,
// some 45 s with DefaultBackoff (stream reconfigure, consumer groups, gc).
func TestUpdateRefusedWriteFailsAtOnce(t *testing.T) {
	for _, kind := range []error{objectstore.ErrConditionsUnsupported, objectstore.ErrAccessDenied} {
		mem := objectstore.NewMemStore()
		if _, err := manifest.Open(mem, "s/manifest").Create(context.Background(), manifest.DefaultConfig(), time.Now()); err != nil {
			t.Fatal(err)
		}
		st := &condRefusingStore{Store: mem, kind: kind}
		_, err := manifest.Open(st, "s/manifest", manifest.WithBackoff(manifest.Backoff{Initial: time.Microsecond, Max: time.Microsecond, Multiplier: 2})).Update(context.Background(), func(s *manifest.State) error {
			s.Config.Retention.AgeSecs = 60
			s.Config.Retention.Infinite = false
			return nil
		})
		if !errors.Is(err, kind) || st.puts.Load() != 1 {
			t.Errorf("%v: Update: %v after %d refused writes, want the refusal after 1", kind, err, st.puts.Load())
		}
	}
}

// refusingStore answers Gets (unless getsMissing) and Puts with kind, as S3 does for a
// bucket that does not exist (objectstore.ErrNoBucket) or refused credentials
// (objectstore.ErrAccessDenied).
type refusingStore struct {
	objectstore.Store
	kind        error
	getsMissing bool
	gets, puts  atomic.Int32
}

func (s *refusingStore) Get(ctx context.Context, key string, _ objectstore.GetOptions) (*objectstore.Object, error) {
	s.gets.Add(1)
	if s.getsMissing {
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotFound, errors.New("NoSuchKey"))
	}
	return nil, objectstore.NewOpError("get", key, s.kind, errors.New("refused"))
}

func (s *refusingStore) Put(ctx context.Context, key string, _ io.Reader, _ int64, _ objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.puts.Add(1)
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, s.kind, errors.New("refused"))
}

// TestRefusedStoreFailsFast: a missing bucket and refused credentials end LoadWithRetry,
// LoadOrCreate's load and LoadOrCreate's create after one attempt. They were retried 20
// times with backoff (producer.New with CreateStream, "sluice append --create" and the
// daemon's create-on-append took 5-7 s before the same error).
func TestRefusedStoreFailsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, kind := range []error{objectstore.ErrNoBucket, objectstore.ErrAccessDenied} {
		st := &refusingStore{Store: objectstore.NewMemStore(), kind: kind}
		if _, err := manifest.Open(st, "s/manifest", manifest.WithBackoff(manifest.DefaultBackoff())).LoadWithRetry(ctx); !errors.Is(err, kind) || st.gets.Load() != 1 {
			t.Errorf("%v: LoadWithRetry: %v after %d gets", kind, err, st.gets.Load())
		}
		st = &refusingStore{Store: objectstore.NewMemStore(), kind: kind}
		if _, err := manifest.Open(st, "s/manifest").LoadOrCreate(ctx, manifest.DefaultConfig(), time.Now()); !errors.Is(err, kind) || st.gets.Load() != 1 || st.puts.Load() != 0 {
			t.Errorf("%v: LoadOrCreate (load refused): %v after %d gets, %d puts", kind, err, st.gets.Load(), st.puts.Load())
		}
		st = &refusingStore{Store: objectstore.NewMemStore(), kind: kind, getsMissing: true}
		if _, err := manifest.Open(st, "s/manifest").LoadOrCreate(ctx, manifest.DefaultConfig(), time.Now()); !errors.Is(err, kind) || st.puts.Load() != 1 {
			t.Errorf("%v: LoadOrCreate (create refused): %v after %d gets, %d puts", kind, err, st.gets.Load(), st.puts.Load())
		}
	}
}
