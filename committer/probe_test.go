package committer_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// testNet carries requests to committers in this process by URL; a URL cut off (or with
// none) is unreachable.
type testNet struct {
	mu  sync.Mutex
	at  map[string]*committer.Committer
	cut map[string]bool
}

func newTestNet() *testNet {
	return &testNet{at: map[string]*committer.Committer{}, cut: map[string]bool{}}
}

func (n *testNet) add(c *committer.Committer) {
	n.mu.Lock()
	n.at[c.URL()] = c
	n.mu.Unlock()
}

// cutOff makes the committer at url unreachable (it stays alive).
func (n *testNet) cutOff(url string) {
	n.mu.Lock()
	n.cut[url] = true
	n.mu.Unlock()
}

func (n *testNet) Commit(ctx context.Context, url string, req *wire.Request) (*wire.Response, error) {
	n.mu.Lock()
	c, cut := n.at[url], n.cut[url]
	n.mu.Unlock()
	if c == nil || cut {
		return nil, fmt.Errorf("%w: %s", commitclient.ErrUnreachable, url)
	}
	return c.Commit(ctx, req), nil
}

// netCommitter is a journal committer over store on net (its probes go through net too),
// with lease (its checkpoints every lease/2) and clock now (nil: time.Now).
func netCommitter(t *testing.T, store objectstore.Store, id string, net *testNet, lease time.Duration, now func() time.Time) *committer.Committer {
	t.Helper()
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL, cfg.Transport = store, id, "http://"+id+".test", net
	cfg.Journal, cfg.Lease, cfg.CheckpointInterval = true, lease, lease/2
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	if now != nil {
		cfg.Now = now
	}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	net.add(c)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// netProducer is a producer of the stream at dir that sends its commits over net, first to
// url ("" to commit directly while the manifest names no live committer).
func netProducer(t *testing.T, store objectstore.Store, dir, url string, net *testNet, now func() time.Time) *producer.Producer {
	t.Helper()
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.Stream = stream.MustNew(dir+"/manifest", dir+"/data")
	cfg.FlushInterval = time.Millisecond
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	cfg.Committer.URL, cfg.Committer.Transport = url, net
	cfg.Committer.DirectFor = 20 * time.Millisecond
	if now != nil {
		cfg.Now, cfg.Committer.Now = now, now
	}
	p, err := producer.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// fenced reports whether journal j holds a fence.
func fenced(t *testing.T, store objectstore.Store, j journal.ID) bool {
	t.Helper()
	_, f, err := journal.Walk(context.Background(), store, j, 0, func(journal.Header, []journal.IndexRow) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func roleOf(t *testing.T, store objectstore.Store, key string) manifest.CommitterRole {
	t.Helper()
	snap, err := manifest.Open(store, key).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.State.Committer
}

// TestJournalLiveHolderIsAskedNotFenced: a committer whose role's lease has lapsed by
// another committer's clock, but which answers probes, keeps the stream when the other gets
// requests for it: they are sent to the holder and committed there, and its journal is
// neither fenced nor joined by another.
func TestJournalLiveHolderIsAskedNotFenced(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	net := newTestNet()
	a := netCommitter(t, store, "a", net, 2*time.Second, nil)
	acks := appendAll(t, localProducer(t, store, "s", a, nil), "a", 5)
	ahead := func() time.Time { return time.Now().Add(time.Minute) }
	b := netCommitter(t, store, "b", net, 2*time.Second, ahead)
	acks = append(acks, appendAll(t, netProducer(t, store, "s", b.URL(), net, ahead), "b", 5)...)
	j := journalOf(t, store) // one journal: b wrote no window
	if fenced(t, store, j) {
		t.Fatal("the live holder's journal was fenced")
	}
	if r := roleOf(t, store, "s/manifest"); r.ID != "a" {
		t.Fatalf("role %+v, want a's", r)
	}
	verifyAt(t, store, "s/manifest", acks)
}

// failingManifests refuses manifest writes while failing is set.
type failingManifests struct {
	objectstore.Store
	failing atomic.Bool
}

func (s *failingManifests) Put(ctx context.Context, key string, r io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if s.failing.Load() && strings.HasSuffix(key, "/manifest") {
		return objectstore.ObjectInfo{}, fmt.Errorf("%w: manifest writes refused", objectstore.ErrThrottled)
	}
	return s.Store.Put(ctx, key, r, size, cond)
}

// TestJournalGoneHolderIsSealed: a holder that closed without giving its roles up, or that
// does not answer, is sealed as before: another committer fences its journal, folds it and
// takes the role, and the stream holds exactly what both acknowledged.
func TestJournalGoneHolderIsSealed(t *testing.T) {
	for _, gone := range []string{"closed", "unreachable"} {
		t.Run(gone, func(t *testing.T) {
			store := &failingManifests{Store: objectstore.NewMemStore()}
			createStream(t, store, "s/manifest")
			net := newTestNet()
			a := netCommitter(t, store, "a", net, 2*time.Second, nil)
			pa := localProducer(t, store, "s", a, nil)
			acks := appendAll(t, pa, "a", 5)
			j := journalOf(t, store)
			if gone == "closed" {
				pa.Close(context.Background())
				store.failing.Store(true) // its last checkpoints fail: the roles stay
				if err := a.Close(context.Background()); err == nil {
					t.Fatal("Close gave the roles up despite failing manifest writes")
				}
				store.failing.Store(false)
				if r := roleOf(t, store, "s/manifest"); r.ID != "a" {
					t.Fatalf("role after a failed Close %+v, want a's", r)
				}
			} else {
				net.cutOff(a.URL())
			}
			ahead := func() time.Time { return time.Now().Add(time.Minute) }
			b := netCommitter(t, store, "b", net, 2*time.Second, ahead)
			acks = append(acks, appendAll(t, netProducer(t, store, "s", b.URL(), net, ahead), "b", 5)...)
			if !fenced(t, store, j) {
				t.Fatal("the gone holder's journal was not fenced")
			}
			if r := roleOf(t, store, "s/manifest"); r.ID != "b" {
				t.Fatalf("role %+v, want b's", r)
			}
			verifyAt(t, store, "s/manifest", acks)
		})
	}
}

// TestProbeOfAnOldJournalAfterResetAnswersNotHolder: a committer answers a probe of its
// current journal as alive (vouching for its role) and, once a fence made it start a new
// journal, a probe of the old one as not_holder, in process and over HTTP.
func TestProbeOfAnOldJournalAfterResetAnswersNotHolder(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.Journal = store, "c", true
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, _ := serveCommitter(t, cfg, nil)
	probe := func(via string, j journal.ID) bool {
		t.Helper()
		var local commitclient.Local
		if via == "local" {
			local = c
		}
		alive, role, err := commitclient.Probe(ctx, &commitclient.HTTP{}, local, c.URL(), j)
		if err != nil {
			t.Fatalf("probe %s of %s: %v", via, j, err)
		}
		if alive && (role.ID != "c" || role.URL != c.URL() || !role.Live(time.Now())) {
			t.Fatalf("probe %s of %s vouched for %+v", via, j, role)
		}
		return alive
	}
	p := localProducer(t, store, "s", c, nil)
	acks := appendAll(t, p, "a", 3)
	old := journalOf(t, store)
	for _, via := range []string{"local", "http"} {
		if !probe(via, old) {
			t.Fatalf("probe %s of the current journal: not holder", via)
		}
	}
	if _, err := journal.Fence(ctx, store, old, 0, journal.Header{Nonce: [16]byte{9}}, nil); err != nil {
		t.Fatal(err)
	}
	if resp := c.Commit(ctx, carriedRequest(t, store, "s/manifest", "raw", 1)); resp.Error == nil {
		t.Fatal("a commit into a fenced journal was acknowledged")
	}
	acks = append(acks, appendAll(t, p, "b", 3)...)
	for _, via := range []string{"local", "http"} {
		if probe(via, old) {
			t.Fatalf("probe %s of the journal before the reset: alive", via)
		}
	}
	var current journal.ID
	err := objectstore.ListAll(ctx, store, journal.Root, func(o objectstore.ObjectInfo) error {
		if id, _, ok := journal.ParseKey(o.Key); ok && id != old {
			current = id
		}
		return nil
	})
	if err != nil || current == 0 {
		t.Fatalf("no journal after the reset (%v)", err)
	}
	if !probe("http", current) {
		t.Fatal("probe of the journal after the reset: not holder")
	}
	verifyAt(t, store, "s/manifest", acks)
}

// TestProducerDoesNotSealALiveHolder: a producer that commits directly, finding the
// manifest's role lapsed and a journal named, probes the holder instead of sealing: it
// answers, so the producer's commits go to it, and its journal is not fenced.
func TestProducerDoesNotSealALiveHolder(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	net := newTestNet()
	const lease = 300 * time.Millisecond
	a := netCommitter(t, store, "a", net, lease, nil)
	acks := appendAll(t, localProducer(t, store, "s", a, nil), "a", 5)
	// No commits, so no checkpoint and no write renews the role: it lapses in the manifest.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if snap.State.Journal != nil && snap.State.Committer.ID == "a" && !snap.State.Committer.Live(time.Now()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("role %+v, journal %+v: want a lapsed role of a over its journal", snap.State.Committer, snap.State.Journal)
		}
	}
	acks = append(acks, appendAll(t, netProducer(t, store, "s", "", net, nil), "d", 5)...)
	if fenced(t, store, journalOf(t, store)) {
		t.Fatal("the direct producer fenced the live holder's journal")
	}
	if r := roleOf(t, store, "s/manifest"); r.ID != "a" {
		t.Fatalf("role %+v, want a's", r)
	}
	verifyAt(t, store, "s/manifest", acks)
}

// TestJournalRenewsNoRoleByWrites: once a held stream's commits are checkpointed, its
// manifest is not written again while the stream has no commits, however often its lease
// lapses, and the committer's answers vouch for the role from its own clock instead.
func TestJournalRenewsNoRoleByWrites(t *testing.T) {
	store := &putCounter{Store: objectstore.NewMemStore()}
	createStream(t, store, "s/manifest")
	const lease = 200 * time.Millisecond
	c := netCommitter(t, store, "c", newTestNet(), lease, nil)
	appendAll(t, localProducer(t, store, "s", c, nil), "a", 3)
	time.Sleep(2 * lease) // the checkpoint (lease/2 after the commits) is written
	before := store.manifests.Load()
	time.Sleep(5 * lease)
	if n := store.manifests.Load() - before; n != 0 {
		t.Fatalf("%d manifest writes while the stream was idle and held", n)
	}
	resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "x", 1))
	if resp.Error != nil || resp.Role == nil || resp.Role.ID != "c" || !resp.Role.Live(time.Now()) {
		t.Fatalf("answer %+v, role %+v: want the role vouched for", resp.Error, resp.Role)
	}
}
