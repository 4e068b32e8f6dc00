package engine

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// refuseDataStore refuses batch uploads (keys under a stream's data prefix) with
// ErrAccessDenied while refuse is set, as S3 does once the daemon's write permission is
// revoked.
type refuseDataStore struct {
	objectstore.Store
	refuse atomic.Bool
}

func (s *refuseDataStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if s.refuse.Load() && strings.Contains(key, "/data/") {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, nil)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// An append the store keeps refusing answers 503 unavailable once the delivery timeout
// passes, saying nothing of it is in the stream and why; after the store heals, the stream holds
// only what was appended since.
func TestAppendDeliveryTimeout(t *testing.T) {
	store := &refuseDataStore{Store: objectstore.NewMemStore()}
	env := servertest.Start(t, func(t testing.TB) server.Backend {
		return newEngine(t, store, func(c *Config) {
			c.Producer.DeliveryTimeout = 50 * time.Millisecond
			c.Producer.Backoff = manifest.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}
		}).S2()
	})
	if r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"s"}`)); r.status/100 != 2 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	store.refuse.Store(true)
	r := apiAppend(t, env, "s", `{"records":[{"body":"lost"}]}`)
	var e struct{ Code, Message string }
	if err := json.Unmarshal(r.body, &e); err != nil || r.status != 503 || e.Code != string(s2api.CodeUnavailable) ||
		!strings.Contains(e.Message, "nothing of it is in the stream") || !strings.Contains(e.Message, "access_denied") {
		t.Fatalf("append on a refusing store: %d %s, want 503 unavailable naming the delivery timeout and the cause", r.status, r.body)
	}
	t.Logf("refused append: %d %s", r.status, r.body)

	store.refuse.Store(false)
	if r := apiAppend(t, env, "s", `{"records":[{"body":"kept"}]}`); r.status != 200 {
		t.Fatalf("append after the store healed: %d %s", r.status, r.body)
	}
	if tail := apiTail(t, env, "s"); tail.SeqNum != 1 {
		t.Fatalf("tail %+v, want 1: only the append after the store healed", tail)
	}
	if b := apiRead(t, env, "s", "seq_num=0"); len(b.Records) != 1 || string(b.Records[0].Body) != "kept" {
		t.Fatalf("read %+v, want the one record appended after the store healed", b.Records)
	}
}
