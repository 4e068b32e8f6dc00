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

// deniedStore answers Gets (unless getsMissing) and Puts with S3's 403.
type deniedStore struct {
	objectstore.Store
	getsMissing bool
	gets, puts  atomic.Int32
}

func (s *deniedStore) Get(ctx context.Context, key string, _ objectstore.GetOptions) (*objectstore.Object, error) {
	s.gets.Add(1)
	if s.getsMissing {
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotFound, errors.New("NoSuchKey"))
	}
	return nil, objectstore.NewOpError("get", key, objectstore.ErrAccessDenied, errors.New("403 SignatureDoesNotMatch"))
}

func (s *deniedStore) Put(ctx context.Context, key string, _ io.Reader, _ int64, _ objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.puts.Add(1)
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, errors.New("403 AccessDenied"))
}

// TestAccessDeniedFailsFast: refused credentials end LoadWithRetry, LoadOrCreate's load
// and LoadOrCreate's create after one attempt (they retried 20 times with backoff).
func TestAccessDeniedFailsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := &deniedStore{Store: objectstore.NewMemStore()}
	if _, err := manifest.LoadWithRetry(ctx, st, "s/manifest", manifest.DefaultBackoff()); !errors.Is(err, objectstore.ErrAccessDenied) || st.gets.Load() != 1 {
		t.Fatalf("LoadWithRetry: %v after %d gets", err, st.gets.Load())
	}
	st = &deniedStore{Store: objectstore.NewMemStore()}
	if _, err := manifest.LoadOrCreate(ctx, st, "s/manifest", manifest.DefaultConfig(), time.Now()); !errors.Is(err, objectstore.ErrAccessDenied) || st.gets.Load() != 1 || st.puts.Load() != 0 {
		t.Fatalf("LoadOrCreate (load denied): %v after %d gets, %d puts", err, st.gets.Load(), st.puts.Load())
	}
	st = &deniedStore{Store: objectstore.NewMemStore(), getsMissing: true}
	if _, err := manifest.LoadOrCreate(ctx, st, "s/manifest", manifest.DefaultConfig(), time.Now()); !errors.Is(err, objectstore.ErrAccessDenied) || st.puts.Load() != 1 {
		t.Fatalf("LoadOrCreate (create denied): %v after %d gets, %d puts", err, st.gets.Load(), st.puts.Load())
	}
}
