package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// TestGroupLagExact: for every checkpoint of a random stream (including past a trim point),
// GroupLag with RecordTimestamp gives tail - checkpoint records and the age of the record at
// the checkpoint; without a TimestampFunc the age is never lower than that (the batch's
// first timestamp) and the records are the same.
func TestGroupLagExact(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 26))
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 3+rng.IntN(6))
	n := uint64(len(f.want))
	r := f.reader(nil)
	st, _, err := r.loadManifest(ctx, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(int64(f.want[n-1].ts) + 1000 + int64(rng.IntN(100000)))
	wantAge := func(seq uint64) float64 { return float64(now.UnixMilli()-int64(f.want[seq].ts)) / 1000 }
	idx := r.index(st)
	for cp := uint64(0); cp <= n+1; cp++ {
		got, err := GroupLag(ctx, idx, cp, now, r.RecordTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		want := Lag{}
		if cp < n {
			want = Lag{Records: n - cp, Seconds: wantAge(cp)}
		}
		if got != want {
			t.Fatalf("checkpoint %d of %d: lag %+v, want %+v", cp, n, got, want)
		}
		est, err := GroupLag(ctx, idx, cp, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if est.Records != want.Records || est.Seconds < want.Seconds {
			t.Fatalf("checkpoint %d: estimate %+v below the exact %+v", cp, est, want)
		}
	}
	// Below the trim point: the first readable record is the oldest unacknowledged one.
	trim := 1 + uint64(rng.IntN(int(n-1)))
	st.TrimPoint = trim
	got, err := GroupLag(ctx, r.index(st), 0, now, r.RecordTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Lag{Records: n - trim, Seconds: wantAge(trim)}); got != want {
		t.Fatalf("checkpoint 0 below trim point %d: lag %+v, want %+v", trim, got, want)
	}
}

// TestResetGroupFencesMember: a reset moves the checkpoint (to a seq_num, a timestamp, the
// tail) and fences the live member, whose next ack fails with *FencedError; the next member
// starts at the reset position. A reset of an unknown group creates it.
func TestResetGroupFencesMember(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 27))
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 4+rng.IntN(4))
	n := uint64(len(f.want))
	cfg := groupConfig(f, "g")
	a := openGroup(t, cfg)
	b, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k := uint64(rng.IntN(int(n)))
	info, created, err := ResetGroup(ctx, cfg.Config, cfg.Group, AtSeqNum(k), time.Now())
	if err != nil || created || info.Checkpoint != k || info.Epoch != a.Epoch()+1 || info.Lag.Records != n-k {
		t.Fatalf("reset to %d: %+v created=%v err=%v, want one bump of the member's epoch %d", k, info, created, err, a.Epoch())
	}
	var fe *FencedError
	if err := a.AckThrough(b.Records[len(b.Records)-1].SeqNum); err == nil {
		err = a.Flush(ctx)
		if !errors.As(err, &fe) || fe.Epoch != a.Epoch() || fe.Current != info.Epoch {
			t.Fatalf("ack of the reset group's old member: %v, want *FencedError by epoch %d", err, info.Epoch)
		}
	} else if !errors.As(err, &fe) {
		t.Fatalf("ack of the reset group's old member: %v", err)
	}
	if g := groupState(t, f.store, "g"); g.Checkpoint != k || g.Epoch != info.Epoch {
		t.Fatalf("after the fenced ack: group %+v, want checkpoint %d epoch %d", g, k, info.Epoch)
	}
	a.Close(ctx)
	c := openGroup(t, cfg)
	if acked, _ := c.Checkpoint(); acked != k {
		t.Fatalf("member after the reset starts at %d, want %d", acked, k)
	}
	c.Close(ctx)

	// A timestamp: the first record at or after it.
	w := f.want[rng.IntN(int(n))].ts + uint64(rng.IntN(2))
	want := n
	for i := range f.want {
		if f.want[i].ts >= w {
			want = uint64(i)
			break
		}
	}
	if info, _, err = ResetGroup(ctx, cfg.Config, cfg.Group, AtTimestamp(w), time.Now()); err != nil || info.Checkpoint != want {
		t.Fatalf("reset to timestamp %d: %+v %v, want checkpoint %d", w, info, err, want)
	}
	if info, _, err = ResetGroup(ctx, cfg.Config, cfg.Group, AtSeqNum(n+100), time.Now()); err != nil || info.Checkpoint != n || info.Lag != (Lag{}) {
		t.Fatalf("reset past the tail: %+v %v, want the tail %d", info, err, n)
	}
	if info, _, err = ResetGroup(ctx, cfg.Config, cfg.Group, AtTailOffset(0), time.Now()); err != nil || info.Checkpoint != n {
		t.Fatalf("reset to the tail: %+v %v", info, err)
	}

	// An unknown group is created with an epoch above every earlier one.
	before, err := manifest.Open(f.store, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nw := cfg
	nw.Group = "new"
	info, created, err = ResetGroup(ctx, nw.Config, nw.Group, AtSeqNum(1), time.Now())
	if err != nil || !created || info.Checkpoint != 1 || info.Epoch <= before.State.WriteCounter {
		t.Fatalf("reset of an unknown group: %+v created=%v %v (write counter %d)", info, created, err, before.State.WriteCounter)
	}
	missing := cfg
	missing.Stream = stream.MustNew("nope/manifest", "nope/data")
	if _, _, err := ResetGroup(ctx, missing.Config, missing.Group, AtSeqNum(0), time.Now()); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("reset on a missing stream: %v", err)
	}
}

// memberOfDeletedGroup opens a member of group "g" on a stream of a few two-record objects,
// has it acknowledge (and write) the first record of its first batch, and deletes the group.
// It returns the member and that batch (at least two records).
func memberOfDeletedGroup(t *testing.T, f *fixture, rng *rand.Rand) (GroupConfig, *Consumer, ReadBatch) {
	t.Helper()
	ctx := context.Background()
	for range 3 + rng.IntN(3) {
		f.object([]batchfmt.Record{rec(baseTS, "a"), rec(baseTS+1, "b")})
	}
	cfg := groupConfig(f, "g")
	a := openGroup(t, cfg)
	b, err := a.Next(ctx)
	if err != nil || len(b.Records) < 2 {
		t.Fatalf("next: %d records, %v", len(b.Records), err)
	}
	if err := a.Ack(b.Records[0].SeqNum); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if g := groupState(t, f.store, "g"); g.Checkpoint != b.Records[0].SeqNum+1 || g.Epoch != a.Epoch() {
		t.Fatalf("group before the delete: %+v", g)
	}
	if err := DeleteGroup(ctx, cfg.Config, cfg.Group); err != nil {
		t.Fatal(err)
	}
	return cfg, a, b
}

// ackFenced acknowledges seq as a member that must be fenced: Ack, or the Flush after it,
// fails with *FencedError, which it returns.
func ackFenced(t *testing.T, c *Consumer, seq uint64) *FencedError {
	t.Helper()
	err := c.Ack(seq)
	if err == nil {
		err = c.Flush(context.Background())
	}
	var fe *FencedError
	if !errors.As(err, &fe) || fe.Group != c.group || fe.Epoch != c.Epoch() {
		t.Fatalf("ack of seq_num %d by the member at epoch %d: %v, want *FencedError", seq, c.Epoch(), err)
	}
	return fe
}

// TestDeleteGroupFencesMember: deleting a group fences its member (Current 0) and the fencing
// sticks; deleting it again is ErrGroupNotFound.
func TestDeleteGroupFencesMember(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 28))
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	cfg, a, b := memberOfDeletedGroup(t, f, rng)
	err := DeleteGroup(ctx, cfg.Config, cfg.Group)
	if !errors.Is(err, ErrGroupNotFound) || !errors.Is(err, manifest.ErrNoGroup) {
		t.Fatalf("second delete: %v", err)
	}
	if fe := ackFenced(t, a, b.Records[1].SeqNum); fe.Current != 0 {
		t.Fatalf("member of the deleted group: %v, want *FencedError (deleted)", fe)
	}
	snap, err := manifest.Open(f.store, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := snap.State.Groups["g"]; ok {
		t.Fatalf("the deleted group's member brought it back: %+v", g)
	}
	var fe *FencedError
	if err := a.Check(ctx); !errors.As(err, &fe) || fe.Current != 0 {
		t.Fatalf("check after the fenced ack: %v", err)
	}
	if err := a.Close(ctx); !errors.As(err, &fe) {
		t.Fatalf("close after the fenced ack: %v", err)
	}
	if err := DeleteGroup(ctx, cfg.Config, ""); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("delete without a group: %v", err)
	}
}

// TestDeletedGroupMemberFencedAfterRecreate: a member of a deleted group stays fenced after a
// new member creates the group again, whether it learnt of the delete before (its fencing
// sticks) or not (its acknowledgement meets the new group, whose epoch is above its own): its
// ack fails with *FencedError and the new group's checkpoint is untouched, so the new group
// skips no record it never read. The new member is not disturbed.
func TestDeletedGroupMemberFencedAfterRecreate(t *testing.T) {
	for _, knew := range []bool{false, true} {
		t.Run(fmt.Sprintf("knew=%v", knew), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed(t), 30))
			f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
			cfg, a, b := memberOfDeletedGroup(t, f, rng)
			defer a.Close(ctx)
			if knew {
				if fe := ackFenced(t, a, b.Records[1].SeqNum); fe.Current != 0 {
					t.Fatalf("member of the deleted group: %v, want *FencedError (deleted)", fe)
				}
			}
			c := openGroup(t, cfg)
			defer c.Close(ctx)
			if c.Epoch() <= a.Epoch() {
				t.Fatalf("the re-created group's member has epoch %d, not above the deleted group's member's %d", c.Epoch(), a.Epoch())
			}
			if acked, _ := c.Checkpoint(); acked != 0 {
				t.Fatalf("re-created group starts at %d, want 0", acked)
			}
			fe := ackFenced(t, a, b.Records[1].SeqNum)
			if want := map[bool]uint64{false: c.Epoch(), true: 0}[knew]; fe.Current != want {
				t.Fatalf("old member's ack into the re-created group: %v, want Current %d", fe, want)
			}
			if g := groupState(t, f.store, "g"); g.Checkpoint != 0 || g.Epoch != c.Epoch() {
				t.Fatalf("re-created group %+v, want checkpoint 0 epoch %d: the old member wrote into it", g, c.Epoch())
			}
			var again *FencedError
			if err := a.Ack(b.Records[1].SeqNum); !errors.As(err, &again) {
				t.Fatalf("second ack of the old member: %v", err)
			}
			if _, err := a.Next(ctx); !errors.As(err, &again) {
				t.Fatalf("next of the old member: %v", err)
			}
			if err := a.Check(ctx); !errors.As(err, &again) {
				t.Fatalf("check of the old member: %v", err)
			}

			// The new member reads from 0 and writes its own checkpoint.
			nb, err := c.Next(ctx)
			if err != nil || len(nb.Records) == 0 || nb.Records[0].SeqNum != 0 {
				t.Fatalf("new member's first batch: %+v %v", nb.Records, err)
			}
			if err := c.Ack(0); err != nil {
				t.Fatal(err)
			}
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if g := groupState(t, f.store, "g"); g.Checkpoint != 1 || g.Epoch != c.Epoch() {
				t.Fatalf("re-created group after its member's ack: %+v", g)
			}
		})
	}
}

// TestNewGroupStartAtTail: a group created with StartAtTail gets only records appended after
// it joined; an existing group resumes from its checkpoint whatever NewGroupStart says.
func TestNewGroupStartAtTail(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 29))
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 2+rng.IntN(3))
	n := uint64(len(f.want))
	cfg := groupConfig(f, "late")
	cfg.NewGroupStart = StartAtTail
	c := openGroup(t, cfg)
	if g := groupState(t, f.store, "late"); g.Checkpoint != n {
		t.Fatalf("new group at the tail: checkpoint %d, want %d", g.Checkpoint, n)
	}
	f.object([]batchfmt.Record{rec(baseTS+1e6, "new")})
	b, err := c.Next(ctx)
	if err != nil || len(b.Records) != 1 || b.Records[0].SeqNum != n || string(b.Records[0].Body) != "new" {
		t.Fatalf("first batch at the tail: %+v %v", b.Records, err)
	}
	c.Close(ctx)

	head := groupConfig(f, "early")
	e := openGroup(t, head) // the zero value: from the head
	if acked, _ := e.Checkpoint(); acked != 0 {
		t.Fatalf("default start %d, want 0", acked)
	}
	if err := e.AckThrough(0); err == nil {
		t.Fatal("ack of an undelivered record accepted")
	}
	e.Close(ctx)
	head.NewGroupStart = StartAtTail
	e = openGroup(t, head)
	if acked, _ := e.Checkpoint(); acked != 0 {
		t.Fatalf("existing group with StartAtTail starts at %d, want its checkpoint 0", acked)
	}
	e.Close(ctx)
	bad := head
	bad.NewGroupStart = 7
	if _, err := Open(ctx, bad, GroupOptions{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("unknown NewGroupStart: %v", err)
	}
}

// gauge returns the value of a gauge family's series with the given labels, and whether
// there is one.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
	series:
		for _, m := range fam.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMemberLagMetrics: a member's lag gauges follow its acknowledgements: the records from
// its acknowledged position to the tail, and the age of the record at that position at the
// scrape (within the test's clock readings); 0 and 0 once everything is acknowledged; gone
// after Close. A second member of another group shares the registerer.
func TestMemberLagMetrics(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 30))
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 3+rng.IntN(4))
	n := uint64(len(f.want))
	reg := prometheus.NewRegistry()
	cfg := groupConfig(f, "g")
	cfg.Registerer = reg
	cfg.StreamName = "orders"
	cfg.MaxBatchRecords = 1 + rng.IntN(5)
	labels := map[string]string{"stream": "orders", "group": "g"}
	check := func(what string, pos uint64, before time.Time) {
		t.Helper()
		recs, ok := gauge(t, reg, "sluice_consumer_group_lag_records", labels)
		secs, ok2 := gauge(t, reg, "sluice_consumer_group_lag_seconds", labels)
		after := time.Now() // the age is taken at the scrape
		if !ok || !ok2 {
			t.Fatalf("%s: no lag gauges", what)
		}
		if recs != float64(n-pos) {
			t.Fatalf("%s: lag_records %v, want %d", what, recs, n-pos)
		}
		if pos == n {
			if secs != 0 {
				t.Fatalf("%s: caught up, lag_seconds %v", what, secs)
			}
			return
		}
		ts := int64(f.want[pos].ts)
		lo, hi := float64(before.UnixMilli()-ts)/1000, float64(after.UnixMilli()-ts)/1000
		if secs < lo || secs > hi {
			t.Fatalf("%s: lag_seconds %v, want the age of record %d, in [%v, %v]", what, secs, pos, lo, hi)
		}
	}
	before := time.Now()
	c := openGroup(t, cfg)
	check("joined", 0, before)
	for pos := uint64(0); pos < n; {
		before := time.Now()
		b, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("fetched %d..%d", b.Records[0].SeqNum, b.NextSeq), pos, before)
		// Acknowledge a random prefix of the batch, then the rest.
		cut := rng.IntN(len(b.Records))
		if cut > 0 {
			before = time.Now()
			if err := c.AckThrough(b.Records[cut-1].SeqNum); err != nil {
				t.Fatal(err)
			}
			check("acked part", b.Records[cut].SeqNum, before)
		}
		before = time.Now()
		if err := c.AckThrough(b.Records[len(b.Records)-1].SeqNum); err != nil {
			t.Fatal(err)
		}
		pos = b.NextSeq
		check("acked all", pos, before)
	}
	other := cfg
	other.Group = "h"
	h := openGroup(t, other)
	if v, ok := gauge(t, reg, "sluice_consumer_group_lag_records", map[string]string{"stream": "orders", "group": "h"}); !ok || v != float64(n) {
		t.Fatalf("second group's lag_records %v (%v), want %d", v, ok, n)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := gauge(t, reg, "sluice_consumer_group_lag_records", labels); ok {
		t.Fatal("lag gauge kept after Close")
	}
	h.Close(ctx)
}
