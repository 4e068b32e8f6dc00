package committer_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestJournalRenewsTheLeaseByItsOwnClock: a held stream's role is renewed before it lapses
// by Config.Now, the clock the lease is written with, also when that clock is ahead of
// time.Now: a lapsed role lets a direct writer fence the whole journal.
func TestJournalRenewsTheLeaseByItsOwnClock(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	ahead := func() time.Time { return time.Now().Add(1500 * time.Millisecond) } // 3/4 of the lease
	c := journalCommitter(t, store, "c1", ahead)
	if resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "one", 1)); resp.Error != nil {
		t.Fatalf("commit: %+v", resp.Error)
	}
	// Nothing more is committed: the stream stays held (IdleTimeout is a minute), and only
	// renewals keep its role live.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if role := snap.State.Committer; snap.State.Journal != nil && !role.Live(ahead()) {
			t.Fatalf("the role lapsed by the committer's clock while it held the stream: %+v, now %d", role, ahead().UnixMilli())
		}
	}
}
