package gc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// TestPassOnStores runs passes on the real backends, with their own clocks (S3 only when
// SLUICE_TEST_S3_URL is set): with a long grace period nothing is deleted; with a short one the
// orphans go once the store's clock has moved past it, and the referenced objects stay.
func TestPassOnStores(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		ctx := context.Background()
		s := newStream(t, store, manifest.DefaultConfig(), nil)
		for range 3 {
			s.object(2)
		}
		var orphans []string
		for i := range 3 {
			k := fmt.Sprintf("%s/%012x%016x", dpre, i, i)
			if _, err := objectstore.PutBytes(ctx, store, k, []byte("orphan"), objectstore.IfAbsent()); err != nil {
				t.Fatal(err)
			}
			orphans = append(orphans, k)
		}
		rep, err := Pass(ctx, store, ingest, testConfig(time.Now))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Deleted != 0 || rep.Young != 3 || rep.Referenced != 3 {
			t.Fatalf("10-minute grace: %+v", rep)
		}
		cfg := testConfig(time.Now)
		cfg.GracePeriod, cfg.CommitDeadline = time.Millisecond, 500*time.Microsecond
		c, err := NewCollector(store, cfg)
		if err != nil {
			t.Fatal(err)
		}
		deleted := 0
		guard := time.Now().Add(20 * time.Second)
		for deleted < len(orphans) {
			if time.Now().After(guard) {
				t.Fatalf("orphans not collected: %d of %d deleted", deleted, len(orphans))
			}
			time.Sleep(50 * time.Millisecond) // let the store's clock (1 s resolution on S3) move
			rep, err := c.Pass(ctx, ingest)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Referenced != 3 {
				t.Fatalf("referenced %d: %+v", rep.Referenced, rep)
			}
			deleted += rep.Deleted
		}
		for _, k := range orphans {
			if _, err := store.Head(ctx, k); err == nil {
				t.Fatalf("orphan %s still there", k)
			}
		}
		if recs := checkIntact(t, store); len(recs) != 6 {
			t.Fatalf("%d records after gc", len(recs))
		}
	})
}
