package producer

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// slowDataStore takes delay for every batch upload.
type slowDataStore struct {
	objectstore.Store
	delay time.Duration
}

func (s *slowDataStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasPrefix(key, "ingest/") && key != "ingest/manifest" {
		time.Sleep(s.delay)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// TestReuploadLoopIsWarnedOnce: on a store whose uploads take longer than the commit
// deadline, every batch is stale before its write and is uploaded again, for ever. The
// producer says so once per batch, at Warn, naming the grace period to raise.
func TestReuploadLoopIsWarnedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		cfg := testConfig(&slowDataStore{Store: newStreamStore(t), delay: 60 * time.Millisecond})
		cfg.CommitDeadline = 50 * time.Millisecond
		cfg.FlushInterval = FlushEveryAppend
		cfg.Logger = slog.New(logs)
		p := newProducer(t, cfg)
		tk, err := p.Append(context.Background(), batchfmt.AppendInput{Records: bodyRecs("slow")})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // some 15 uploads
		warns, infos := 0, 0
		logs.mu.Lock()
		for _, r := range logs.recs {
			switch {
			case r.Level == slog.LevelWarn && strings.Contains(r.Message, "grace period"):
				warns++
			case strings.Contains(r.Message, "uploaded again"):
				infos++
			}
		}
		logs.mu.Unlock()
		if warns != 1 || infos < 3 {
			t.Fatalf("%d re-uploads logged, %d warnings naming the grace period; want many and exactly 1", infos, warns)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		p.Close(ctx)
		if _, err := tk.Result(); err == nil {
			t.Fatal("the never-committed append was acknowledged")
		}
	})
}
