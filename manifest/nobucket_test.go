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

// noBucketStore answers every Get and Put as S3 does for a bucket that does not exist.
type noBucketStore struct {
	objectstore.Store
	gets atomic.Int32
}

func (s *noBucketStore) Get(ctx context.Context, key string, _ objectstore.GetOptions) (*objectstore.Object, error) {
	s.gets.Add(1)
	return nil, objectstore.NewOpError("get", key, objectstore.ErrNoBucket, errors.New("NoSuchBucket"))
}

func (s *noBucketStore) Put(ctx context.Context, key string, _ io.Reader, _ int64, _ objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrNoBucket, errors.New("NoSuchBucket"))
}

// TestLoadOrCreateNoBucket: LoadOrCreate returns ErrNoBucket at once, as LoadWithRetry does.
// It retried it (producer.New with CreateStream: "sluice append --create" and the daemon's
// create-on-append) 20 times with backoff, about 7 s against a missing bucket, before the
// same error.
func TestLoadOrCreateNoBucket(t *testing.T) {
	st := &noBucketStore{Store: objectstore.NewMemStore()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := manifest.LoadOrCreate(ctx, st, "s/manifest", manifest.DefaultConfig(), time.Now())
	if !errors.Is(err, objectstore.ErrNoBucket) {
		t.Fatalf("LoadOrCreate on a missing bucket: %v, want ErrNoBucket", err)
	}
	if n := st.gets.Load(); n != 1 {
		t.Errorf("LoadOrCreate on a missing bucket loaded %d times over %v, want 1 (as LoadWithRetry)", n, time.Since(start).Round(time.Millisecond))
	}
}
