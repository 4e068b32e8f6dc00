package wire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
)

// The JSON of a request, an answer and a refusal as committers and producers exchanged them
// before the protocol had a package of its own: older writers must still talk to newer
// committers and the reverse. (The manifest types an answer embeds have no JSON tags:
// renaming their fields changes the protocol, and this test.)
const (
	goldenRequest = `{"manifest_path":"s/manifest","generation":"00112233445566778899aabbccddeeff","producer_id":"p","batches":[{"key":"s/data/k","object_bytes":100,"batch_num":2,"arrival_ms":5,"appends":[{"match_seq_num":3,"fencing_token":"tok","metered":12,"records":[{"ts":7},{"cmd":"trim","arg":"AAE="}],"chain":1,"skip":true}]}],"checkpoints":[{"group":"g","epoch":2,"seq_num":9}]}`
	goldenAnswer  = `{"tail":{"SeqNum":4,"Timestamp":8},"role":{"ID":"c","URL":"http://c","UntilMs":99},"batches":[{"duplicate":true},{"appends":[{"start":{"SeqNum":1,"Timestamp":2},"end":{"SeqNum":3,"Timestamp":4}},{"start":{"SeqNum":0,"Timestamp":0},"end":{"SeqNum":0,"Timestamp":0},"rejection":{"Append":1,"Reason":1,"Expected":5,"Actual":""}}]}],"checkpoints":[{"checkpoint":9},{"checkpoint":0,"stale_epoch":4},{"checkpoint":0,"no_group":true},{"checkpoint":0,"error":"past the tail"}]}`
	goldenRefusal = `{"tail":{"SeqNum":0,"Timestamp":0},"error":{"code":"role_held","message":"held","holder":{"ID":"c","URL":"http://c","UntilMs":99}}}`
)

func TestJSONIsTheProtocol(t *testing.T) {
	ts, match, tok, stale := uint64(7), uint64(3), "tok", uint64(4)
	role := manifest.CommitterRole{ID: "c", URL: "http://c", UntilMs: 99}
	for _, tc := range []struct {
		golden string
		value  any
	}{
		{goldenRequest, &wire.Request{ManifestPath: "s/manifest", Generation: "00112233445566778899aabbccddeeff", ProducerID: "p",
			Batches: []wire.Batch{{Key: "s/data/k", ObjectBytes: 100, BatchNum: 2, ArrivalMs: 5, Appends: []wire.Append{
				{MatchSeqNum: &match, FencingToken: &tok, Metered: 12, Chain: 1, Skip: true,
					Records: []wire.Record{{Timestamp: &ts}, {Command: "trim", Arg: []byte{0, 1}}}}}}},
			Checkpoints: []wire.Checkpoint{{Group: "g", Epoch: 2, SeqNum: 9}}}},
		{goldenAnswer, &wire.Response{Tail: manifest.Position{SeqNum: 4, Timestamp: 8}, Role: &role,
			Batches: []wire.BatchResult{{Duplicate: true}, {Appends: []wire.AppendResult{
				{Start: manifest.Position{SeqNum: 1, Timestamp: 2}, End: manifest.Position{SeqNum: 3, Timestamp: 4}},
				{Rejection: &manifest.Rejection{Append: 1, Reason: manifest.RejectSeqNumMismatch, Expected: 5}}}}},
			Checkpoints: []wire.CheckpointResult{{Checkpoint: 9}, {StaleEpoch: &stale}, {NoGroup: true}, {Error: "past the tail"}}}},
		{goldenRefusal, &wire.Response{Error: &wire.Error{Code: wire.CodeRoleHeld, Message: "held", Holder: &role}}},
	} {
		got, err := json.Marshal(tc.value)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.golden {
			t.Errorf("encoded\n%s\nwant\n%s", got, tc.golden)
		}
		back := reflect.New(reflect.TypeOf(tc.value).Elem()).Interface()
		if err := json.Unmarshal([]byte(tc.golden), back); err != nil || !reflect.DeepEqual(back, tc.value) {
			t.Errorf("decoded %s as %+v (%v), want %+v", tc.golden, back, err, tc.value)
		}
	}
}

// TestBatchCrossesTheWireAsApplied: a producer's batch, sent as a wire.Batch and applied by
// the committer as the manifest.Batch it decodes to, gives the results the producer's own
// Apply would, and they come back as such: positions, and the rejection's typed error.
func TestBatchCrossesTheWireAsApplied(t *testing.T) {
	st, err := manifest.NewState(manifest.DefaultConfig(), time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	wrong, tok := uint64(9), "tok"
	mb := &manifest.Batch{Key: "s/data/k", ObjectBytes: 100, ProducerID: "p", BatchNum: 1, ArrivalMs: 1000_000, Appends: []*batchfmt.AppendInput{
		{Records: []batchfmt.Record{{Body: []byte("a"), Timestamp: 5, HasTimestamp: true}, batchfmt.FenceRecord(tok)}},
		{MatchSeqNum: &wrong, Records: []batchfmt.Record{{Body: []byte("rejected")}}},
		{FencingToken: &tok, Records: []batchfmt.Record{batchfmt.TrimRecord(1), {Body: []byte("bc"), Headers: []batchfmt.Header{{Name: []byte("h"), Value: []byte("v")}}}}},
	}}
	direct, err := st.Clone().Apply(mb)
	if err != nil {
		t.Fatal(err)
	}

	data, err := json.Marshal(wire.NewBatch(mb, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var sent wire.Batch
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	applied := sent.ManifestBatch("p")
	for i, in := range mb.Appends {
		if applied.Metered[i] != uint64(in.MeteredSize()) {
			t.Errorf("append %d: metered %d on the wire, %d at the producer", i, applied.Metered[i], in.MeteredSize())
		}
	}
	remote, err := st.Clone().Apply(applied)
	if err != nil {
		t.Fatal(err)
	}
	data, err = json.Marshal(wire.NewBatchResult(remote))
	if err != nil {
		t.Fatal(err)
	}
	var answered wire.BatchResult
	if err := json.Unmarshal(data, &answered); err != nil {
		t.Fatal(err)
	}
	got := answered.ManifestResult()
	if len(got.Appends) != len(direct.Appends) {
		t.Fatalf("%d results over the wire, %d direct", len(got.Appends), len(direct.Appends))
	}
	for i, want := range direct.Appends {
		g := got.Appends[i]
		if (want.Err == nil) != (g.Err == nil) || (want.Err == nil && (g.Start != want.Start || g.End != want.End)) {
			t.Errorf("append %d: %+v over the wire, %+v direct", i, g, want)
		}
	}
	var mismatch *manifest.SeqNumMismatchError
	if !errors.As(got.Appends[1].Err, &mismatch) || mismatch.Expected != 2 {
		t.Errorf("rejected append's error %v, want a seq_num mismatch expecting 2 (after the first append)", got.Appends[1].Err)
	}
}

// TestProbeIsARequestOfItsOwn: a probe names a journal and nothing else, and crosses the wire
// as one field; one that also carries batches or checkpoints, or a malformed id, is invalid.
func TestProbeIsARequestOfItsOwn(t *testing.T) {
	probe := &wire.Request{Journal: "00000000000000ab"}
	if err := probe.Validate(); err != nil || !probe.IsProbe() {
		t.Fatalf("probe: valid %v, is a probe %v", err, probe.IsProbe())
	}
	b, err := json.Marshal(probe)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"manifest_path":"","generation":"","journal":"00000000000000ab"}`; string(b) != want {
		t.Fatalf("probe JSON %s, want %s", b, want)
	}
	for _, bad := range []*wire.Request{
		{Journal: "ab"},
		{Journal: "00000000000000AB"},
		{Journal: "00000000000000ab", ManifestPath: "s/manifest", Checkpoints: []wire.Checkpoint{{Group: "g"}}},
		{Journal: "00000000000000ab", ManifestPath: "s/manifest", ProducerID: "p", Batches: []wire.Batch{{Key: "k"}}},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v is valid", bad)
		}
	}
}
