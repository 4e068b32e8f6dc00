package committer_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestJournalVouchesForItsRoleByItsOwnClock: a journal committer renews no lease by writes
// (a direct writer probes it before sealing its journal: TestProducerDoesNotSealALiveHolder);
// its answers and probes vouch for its role with a lease from Config.Now, the clock the
// manifest's leases are written with, also when that clock is ahead of time.Now.
func TestJournalVouchesForItsRoleByItsOwnClock(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	c := journalCommitter(t, store, "c1", ahead)
	resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "one", 1))
	if resp.Error != nil {
		t.Fatalf("commit: %+v", resp.Error)
	}
	if r := resp.Role; r == nil || r.ID != "c1" || !r.Live(ahead()) {
		t.Fatalf("the answer vouched for %+v, want c1's role live by its clock (%d)", r, ahead().UnixMilli())
	}
	alive, role, err := commitclient.Probe(context.Background(), nil, c, c.URL(), journalOf(t, store))
	if err != nil || !alive || role.ID != "c1" || !role.Live(ahead()) {
		t.Fatalf("probe: alive %v, role %+v, err %v; want c1's role live by its clock", alive, role, err)
	}
}
