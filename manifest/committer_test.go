package manifest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestCommitterRoleEncoding: a manifest without a committer is written in format version 1,
// byte for byte as before the role existed; one with a committer in version 2, which reads
// back equal; a version 2 body whose role has no id is corrupt.
func TestCommitterRoleEncoding(t *testing.T) {
	st, err := NewState(DefaultConfig(), time.UnixMilli(1000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(batch("p", 1, 10, &batchfmt.AppendInput{Records: recs(3)})); err != nil {
		t.Fatal(err)
	}
	v1 := st.Encode()
	if v1[4] != FormatVersion {
		t.Fatalf("role-less manifest written as version %d", v1[4])
	}
	if err := st.TakeRole("c1", "http://10.0.0.1:7070", time.UnixMilli(2000), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	v2 := st.Encode()
	if v2[4] != FormatVersionCommitter {
		t.Fatalf("manifest with a committer written as version %d", v2[4])
	}
	back, err := Decode("m", v2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("decoded %+v, want %+v", back.Committer, st.Committer)
	}
	st.ReleaseRole("c1")
	if !bytes.Equal(st.Encode(), v1) {
		t.Fatal("a released role does not encode as version 1 again")
	}
	bad := frame(manifestMagic, FormatVersionCommitter, func(e *encoder) {
		e.raw(v1[headerLen : len(v1)-trailerLen])
		e.str("")
		e.str("u")
		e.uv(5)
	})
	if _, err := Decode("m", bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("role without an id: %v, want ErrCorrupt", err)
	}
}

// TestCommitterRoleElection: the role is taken when free or lapsed and renewed by its
// holder, refused to another while live; two committers racing for it through the
// manifest's conditional writes cannot both win.
func TestCommitterRoleElection(t *testing.T) {
	now := time.UnixMilli(10_000)
	st, _ := NewState(DefaultConfig(), now)
	if err := st.TakeRole("a", "http://a", now, time.Second); err != nil {
		t.Fatalf("free role: %v", err)
	}
	if err := st.TakeRole("a", "http://a", now.Add(500*time.Millisecond), time.Second); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	var held *RoleHeldError
	if err := st.TakeRole("b", "http://b", now.Add(1400*time.Millisecond), time.Second); !errors.As(err, &held) || held.Holder.ID != "a" || !errors.Is(err, ErrRoleHeld) {
		t.Fatalf("live role taken by another: %v", err)
	}
	if err := st.TakeRole("b", "http://b", now.Add(1500*time.Millisecond), time.Second); err != nil {
		t.Fatalf("lapsed role: %v", err)
	}
	if !st.Committer.Live(now.Add(2499*time.Millisecond)) || st.Committer.Live(now.Add(2500*time.Millisecond)) {
		t.Fatalf("role %+v: wrong lapse time", st.Committer)
	}
	if err := st.TakeRole("", "x", now, time.Second); err == nil {
		t.Fatal("a role without an id was taken")
	}

	// Two committers read the same version and both take the role; only one write lands.
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := Open(store, "s/manifest")
	snap, err := m.Create(ctx, DefaultConfig(), now)
	if err != nil {
		t.Fatal(err)
	}
	wins := 0
	for _, id := range []string{"a", "b"} {
		s := snap.State.Clone()
		if err := s.TakeRole(id, "http://"+id, now, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Write(ctx, s, snap.Version); err == nil {
			wins++
		} else if !errors.Is(err, ErrConflict) {
			t.Fatalf("%s: %v", id, err)
		}
	}
	got, err := m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wins != 1 || got.State.Committer.ID != "a" {
		t.Fatalf("%d writes won, committer %q; want exactly one, a", wins, got.State.Committer.ID)
	}
}
