package committer_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

const path = "s/manifest"

// server runs a committer over store, served over HTTP; wrap, if set, wraps its handler.
func server(t *testing.T, store objectstore.Store, id string, wrap func(http.Handler) http.Handler) (*committer.Committer, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.Registerer = store, id, reg
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, srv := serveCommitter(t, cfg, wrap)
	return c, srv, reg
}

// serveCommitter runs a committer of cfg (its URL set to the server's) over HTTP until the
// test ends; wrap, if set, wraps its handler.
func serveCommitter(t testing.TB, cfg committer.Config, wrap func(http.Handler) http.Handler) (*committer.Committer, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cfg.URL = "http://" + srv.Listener.Addr().String()
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	var h http.Handler = c.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	mux.Handle(committer.Path, h)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		c.Close(context.Background())
	})
	return c, srv
}

func producerConfig(store objectstore.Store, committerURL string) producer.Config {
	c := producer.DefaultConfig()
	c.ObjectStore = store
	c.Stream = stream.MustNew(path, "s/data")
	c.FlushInterval = time.Millisecond
	c.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c.Committer.URL = committerURL
	return c
}

func newStream(t *testing.T) objectstore.Store {
	t.Helper()
	store := objectstore.NewMemStore()
	if _, err := manifest.Open(store, path).Create(context.Background(), manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return store
}

// acked is one acknowledged append: its bodies and ack.
type acked struct {
	bodies []string
	ack    producer.Ack
}

// verify checks that seq_nums are contiguous, every acked record is where its ack says,
// exactly once, and nothing else is in the stream.
func verify(t *testing.T, store objectstore.Store, acks []acked) {
	t.Helper()
	recs, _, _, err := streamcheck.Read(context.Background(), store, path)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]uint64{}
	for i, r := range recs {
		if r.Seq != uint64(i) {
			t.Fatalf("record %d has seq_num %d", i, r.Seq)
		}
		if _, dup := at[r.Body]; dup {
			t.Fatalf("record %q is in the stream twice", r.Body)
		}
		at[r.Body] = r.Seq
	}
	n := 0
	for _, a := range acks {
		for k, b := range a.bodies {
			seq, ok := at[b]
			if !ok || seq != a.ack.Start.SeqNum+uint64(k) {
				t.Fatalf("acked record %q at %d (present %v), its ack says %d", b, seq, ok, a.ack.Start.SeqNum+uint64(k))
			}
			n++
		}
	}
	if n != len(recs) {
		t.Fatalf("stream holds %d records, %d were acked", len(recs), n)
	}
}

func histogramMean(t testing.TB, reg *prometheus.Registry, name string) (count uint64, mean float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var h *dto.Histogram = mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() == 0 {
				return 0, 0
			}
			return h.GetSampleCount(), h.GetSampleSum() / float64(h.GetSampleCount())
		}
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
}

// runProducers has n producers append rounds appends of 1..4 records each through cfg,
// concurrently, and returns the acks.
func runProducers(t *testing.T, name string, n, rounds int, cfg func(i int) producer.Config) []acked {
	t.Helper()
	ctx := context.Background()
	seed := testseed.Get(t)
	var mu sync.Mutex
	var all []acked
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			p, err := producer.New(ctx, cfg(i))
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close(ctx)
			type sent struct {
				bodies []string
				tk     *producer.Ticket
			}
			var out []sent
			for r := range rounds {
				var recs []batchfmt.Record
				var bodies []string
				for k := range 1 + rng.IntN(4) {
					b := fmt.Sprintf("%s%d-r%d-k%d", name, i, r, k)
					bodies = append(bodies, b)
					recs = append(recs, batchfmt.Record{Body: []byte(b)})
				}
				tk, err := p.Append(ctx, batchfmt.AppendInput{Records: recs})
				if err != nil {
					t.Error(err)
					return
				}
				out = append(out, sent{bodies, tk})
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				}
			}
			for _, s := range out {
				ack, err := s.tk.Wait(ctx)
				if err != nil {
					t.Errorf("append: %v", err)
					continue
				}
				mu.Lock()
				all = append(all, acked{s.bodies, ack})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return all
}

// TestGroupCommitAcrossProducers: eight producers commit through one committer, which
// takes the stream's role and applies their requests together, more than one batch per
// manifest write; every append is acknowledged where it is, once.
func TestGroupCommitAcrossProducers(t *testing.T) {
	store := newStream(t)
	_, srv, reg := server(t, store, "c1", nil)
	acks := runProducers(t, "p", 8, 60, func(int) producer.Config { return producerConfig(store, srv.URL) })
	verify(t, store, acks)
	writes, perWrite := histogramMean(t, reg, "sluice_committer_batches_per_write")
	if writes == 0 || perWrite <= 1 {
		t.Fatalf("%d committer writes, %.2f batches each: want group commit across producers (> 1)", writes, perWrite)
	}
	snap, err := manifest.Open(store, path).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := snap.State.Committer; r.ID != "c1" || !r.Live(time.Now()) {
		t.Fatalf("committer role %+v, want c1's, live", r)
	}
	t.Logf("%d manifest writes, %.2f batches per write", writes, perWrite)
}

// TestCommitterUnreachableCommitsDirectly: a producer whose committer does not answer
// commits directly; nothing is lost.
func TestCommitterUnreachableCommitsDirectly(t *testing.T) {
	store := newStream(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	acks := runProducers(t, "p", 2, 30, func(int) producer.Config { return producerConfig(store, url) })
	verify(t, store, acks)
}

// TestLostAnswerIsNotCommittedTwice: the committer commits but its answers are lost (the
// connection fails after the write). The producer falls back, finds its batches in the
// manifest's producer table, and acknowledges them from their entries: each record once.
func TestLostAnswerIsNotCommittedTwice(t *testing.T) {
	store := newStream(t)
	var mu sync.Mutex
	lost := 0
	_, srv, _ := server(t, store, "c1", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			mu.Lock()
			drop := lost < 3 // each producer's first request: it then commits directly
			lost++
			mu.Unlock()
			if drop {
				http.Error(w, "lost", http.StatusBadGateway) // committed, answer lost
				return
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	})
	acks := runProducers(t, "p", 3, 20, func(int) producer.Config { return producerConfig(store, srv.URL) })
	verify(t, store, acks)
	if lost < 3 {
		t.Fatalf("only %d requests reached the committer", lost)
	}
}

// TestConditionsThroughTheCommitter: a committer answers conditions as a direct commit
// does: a wrong match_seq_num and a stale fencing token fail with their typed errors, and a
// chain's appends after a failed one fail with ErrPrecedingAppendFailed.
func TestConditionsThroughTheCommitter(t *testing.T) {
	ctx := context.Background()
	store := newStream(t)
	_, srv, _ := server(t, store, "c1", nil)
	p, err := producer.New(ctx, producerConfig(store, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	rec := func(s string) []batchfmt.Record { return []batchfmt.Record{{Body: []byte(s)}} }
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("tok")}}); err != nil {
		t.Fatal(err)
	}
	wrong := uint64(99)
	var seqErr *manifest.SeqNumMismatchError
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: rec("a"), MatchSeqNum: &wrong}); !errors.As(err, &seqErr) || seqErr.Expected != 1 {
		t.Fatalf("wrong match_seq_num: %v, want SeqNumMismatchError{1}", err)
	}
	stale := "old"
	var tokErr *manifest.FencingTokenMismatchError
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: rec("b"), FencingToken: &stale}); !errors.As(err, &tokErr) || tokErr.Actual != "tok" {
		t.Fatalf("stale token: %v, want FencingTokenMismatchError{tok}", err)
	}
	var c producer.Chain
	t1, _ := p.Append(ctx, batchfmt.AppendInput{Records: rec("c1")}, producer.WithChain(&c))
	t2, _ := p.Append(ctx, batchfmt.AppendInput{Records: rec("c2"), MatchSeqNum: &wrong}, producer.WithChain(&c))
	t3, _ := p.Append(ctx, batchfmt.AppendInput{Records: rec("c3")}, producer.WithChain(&c))
	if _, err := t1.Wait(ctx); err != nil {
		t.Fatalf("first chained append: %v", err)
	}
	if _, err := t2.Wait(ctx); !errors.As(err, &seqErr) {
		t.Fatalf("second chained append: %v, want SeqNumMismatchError", err)
	}
	if _, err := t3.Wait(ctx); !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
		t.Fatalf("third chained append: %v, want ErrPrecedingAppendFailed", err)
	}
}

// TestRoleHeldSendsToTheHolder: a producer that opened the stream before committer a took
// its role asks b, which holds no role; b answers with the holder and the producer asks a,
// which commits. Close of the holder gives the role up.
func TestRoleHeldSendsToTheHolder(t *testing.T) {
	ctx := context.Background()
	store := newStream(t)
	a, srvA, regA := server(t, store, "a", nil)
	_, srvB, regB := server(t, store, "b", nil)
	cfgB := producerConfig(store, srvB.URL)
	cfgB.ProducerID = "late"
	late, err := producer.New(ctx, cfgB) // sees no committer in the manifest
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close(ctx)
	acks := runProducers(t, "a", 1, 5, func(int) producer.Config { return producerConfig(store, srvA.URL) })
	reqA := counter(t, regA, "sluice_committer_requests_total")
	ack, err := late.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("late")}}})
	if err != nil {
		t.Fatal(err)
	}
	verify(t, store, append(acks, acked{[]string{"late"}, ack}))
	if n := counter(t, regB, "sluice_committer_requests_total"); n != 1 {
		t.Fatalf("b got %v requests, want 1", n)
	}
	if n, _ := histogramMean(t, regB, "sluice_committer_batches_per_write"); n != 0 {
		t.Fatalf("b wrote %d times while a held the role", n)
	}
	if n := counter(t, regA, "sluice_committer_requests_total"); n != reqA+1 {
		t.Fatalf("a got %v requests after the late producer's append, want %v", n, reqA+1)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := manifest.Open(store, path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Committer.ID != "" {
		t.Fatalf("role %+v after the holder closed, want none", snap.State.Committer)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricValue(t, reg, name)
}

// metricValue is the value of the counter or gauge name (its first series).
func metricValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
