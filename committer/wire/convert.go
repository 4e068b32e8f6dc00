package wire

import (
	"encoding/hex"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
)

// This file is the one place where the wire types convert to and from the manifest's: a
// producer's manifest.Batch goes out as a Batch (NewBatch), the committer applies it as a
// manifest.Batch again (Batch.ManifestBatch), and the manifest.BatchResult that gave comes
// back as a BatchResult (NewBatchResult) that the producer reads as a manifest.BatchResult
// (BatchResult.ManifestResult).

// Generation is the wire form of a stream generation (hex, as manifest.State shows it).
func Generation(g [16]byte) string { return hex.EncodeToString(g[:]) }

// NewBatch builds the wire form of a producer's batch. skip[j] (nil: none) marks appends
// whose chain failed before; chains numbers the appends' chains (0: none).
func NewBatch(b *manifest.Batch, skip []bool, chains []int) Batch {
	out := Batch{Key: b.Key, ObjectBytes: b.ObjectBytes, BatchNum: b.BatchNum, ArrivalMs: b.ArrivalMs,
		Appends: make([]Append, len(b.Appends))}
	for i, in := range b.Appends {
		a := &out.Appends[i]
		a.MatchSeqNum, a.FencingToken = in.MatchSeqNum, in.FencingToken
		a.Metered = uint64(in.MeteredSize())
		if skip != nil {
			a.Skip = skip[i]
		}
		if chains != nil {
			a.Chain = chains[i]
		}
		a.Records = make([]Record, len(in.Records))
		for j := range in.Records {
			r := &in.Records[j]
			if r.HasTimestamp {
				ts := r.Timestamp
				a.Records[j].Timestamp = &ts
			}
			if cmd := r.Command(); cmd != "" {
				a.Records[j].Command, a.Records[j].Arg = cmd, r.Body
			}
		}
	}
	return out
}

// ManifestBatch is the commit step's form of b, for producer id: records without bodies
// (but for commands' arguments), with their metered sizes given. The chain fields (Skip,
// Chain) are the committer's to turn into the result's Skip and Rejected.
func (b *Batch) ManifestBatch(id string) *manifest.Batch {
	mb := &manifest.Batch{Key: b.Key, ObjectBytes: b.ObjectBytes, ProducerID: id, BatchNum: b.BatchNum,
		ArrivalMs: b.ArrivalMs, Appends: make([]*batchfmt.AppendInput, len(b.Appends)), Metered: make([]uint64, len(b.Appends))}
	for i := range b.Appends {
		a := &b.Appends[i]
		in := &batchfmt.AppendInput{MatchSeqNum: a.MatchSeqNum, FencingToken: a.FencingToken, Records: make([]batchfmt.Record, len(a.Records))}
		for j, r := range a.Records {
			rec := &in.Records[j]
			if r.Timestamp != nil {
				rec.Timestamp, rec.HasTimestamp = *r.Timestamp, true
			}
			if r.Command != "" {
				rec.Headers = []batchfmt.Header{{Value: []byte(r.Command)}}
				rec.Body = r.Arg
			}
		}
		mb.Appends[i] = in
		mb.Metered[i] = a.Metered
	}
	return mb
}

// NewBatchResult is the wire form of what applying a batch gave.
func NewBatchResult(res *manifest.BatchResult) BatchResult {
	if res.Duplicate {
		return BatchResult{Duplicate: true}
	}
	out := BatchResult{Appends: make([]AppendResult, len(res.Appends))}
	for k, a := range res.Appends {
		out.Appends[k] = AppendResult{Start: a.Start, End: a.End}
	}
	for _, rej := range res.Entry.Rejected {
		r := rej
		out.Appends[r.Append] = AppendResult{Rejection: &r}
	}
	return out
}

// ManifestResult is r as the commit step gave it: positions, or each rejected append's
// error. A duplicate has no appends (its results are in its manifest entry).
func (r *BatchResult) ManifestResult() *manifest.BatchResult {
	out := &manifest.BatchResult{Duplicate: r.Duplicate}
	if r.Duplicate {
		return out
	}
	out.Appends = make([]manifest.AppendResult, len(r.Appends))
	for k, a := range r.Appends {
		out.Appends[k] = manifest.AppendResult{Start: a.Start, End: a.End}
		if a.Rejection != nil {
			out.Appends[k].Err = a.Rejection.Err()
		}
	}
	return out
}
