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
