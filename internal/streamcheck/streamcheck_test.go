package streamcheck_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// TestRead reads back what a producer wrote, at its positions, with its command records;
// then a batch object that went missing, and one that no longer decodes, are errors, not
// a shorter stream.
func TestRead(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	p, err := producer.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for a := range 3 {
		in := batchfmt.AppendInput{}
		for i := range 4 {
			body := fmt.Sprintf("a%d-r%d", a, i)
			want = append(want, body)
			in.Records = append(in.Records, batchfmt.Record{Body: []byte(body)})
		}
		if _, err := p.AppendSync(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("tok")}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	recs, st, refs, err := streamcheck.Read(ctx, store, "ingest/manifest")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want)+1 || st.Tail.SeqNum != uint64(len(want)+1) || len(refs) == 0 {
		t.Fatalf("read %d records, tail %d, %d refs; want %d records", len(recs), st.Tail.SeqNum, len(refs), len(want)+1)
	}
	for i, r := range recs[:len(want)] {
		if r.Seq != uint64(i) || r.Body != want[i] || r.Command != "" {
			t.Fatalf("record %d: %+v, want body %q", i, r, want[i])
		}
	}
	if last := recs[len(want)]; last.Command != batchfmt.CommandFence || last.Body != "tok" {
		t.Fatalf("last record %+v, want the fence", last)
	}

	var key string
	for k := range refs {
		key = k
		break
	}
	data, _, err := objectstore.ReadAll(ctx, store, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := streamcheck.Read(ctx, store, "ingest/manifest"); err == nil {
		t.Fatalf("object %s deleted: no error", key)
	}
	data[len(data)/2] ^= 0xFF
	if _, err := objectstore.PutBytes(ctx, store, key, data, objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := streamcheck.Read(ctx, store, "ingest/manifest"); err == nil {
		t.Fatalf("object %s damaged: no error", key)
	}
}
