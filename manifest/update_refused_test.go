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
