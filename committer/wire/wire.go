package wire

import (
	"encoding/hex"
	"fmt"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
)

// Path is where a committer takes commit requests, under its URL.
const Path = "/sluice/v1/commit"

// MaxBodyBytes bounds a request's or an answer's body: 256 batches of 1000 appends' metadata
// stay well below it.
const MaxBodyBytes = 64 << 20

// Request asks the committer to commit a producer's uploaded batches, in order, to the
// stream whose manifest is at ManifestPath in the committer's store. It carries what
// manifest.State.Apply needs and no record bytes: those stay in the batch objects.
type Request struct {
	ManifestPath string  `json:"manifest_path"`
	Generation   string  `json:"generation"` // hex, as the producer opened the stream
	ProducerID   string  `json:"producer_id,omitempty"`
	Batches      []Batch `json:"batches,omitempty"`
	// Checkpoints move consumer groups' checkpoints in the same write (a group member's
	// acks), so that acking does not compete with commits for the manifest's writes.
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	// Journal, set, makes the request a probe: "is your current journal this one?" (16 hex
	// digits, journal.ID.String()). A taker asks it of a role's holder before sealing the
	// holder's journal. A probe carries no batches and no checkpoints; its ManifestPath and
	// Generation are not looked at. The answer has no Error (and the holder's Role, vouched
	// for from its clock) when the committer commits through that journal now, else
	// CodeNotHolder.
	Journal string `json:"journal,omitempty"`
}

// IsProbe reports whether r is a probe (Journal set) rather than a commit.
func (r *Request) IsProbe() bool { return r.Journal != "" }

// Checkpoint asks to move a group's checkpoint to SeqNum (never backwards), as its member
// of Epoch; a stale epoch is refused as manifest.State.SetCheckpoint refuses it.
type Checkpoint struct {
	Group  string `json:"group"`
	Epoch  uint64 `json:"epoch"`
	SeqNum uint64 `json:"seq_num"`
}

// CheckpointResult is the group's checkpoint after the write, or why it did not move:
// StaleEpoch is the group's current epoch when the member's is stale, NoGroup that the
// group is gone, Error any other refusal (a checkpoint past the tail).
type CheckpointResult struct {
	Checkpoint uint64  `json:"checkpoint"`
	StaleEpoch *uint64 `json:"stale_epoch,omitempty"`
	NoGroup    bool    `json:"no_group,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Batch is one uploaded batch object.
type Batch struct {
	Key         string   `json:"key"`
	ObjectBytes uint64   `json:"object_bytes"`
	BatchNum    uint64   `json:"batch_num"`
	ArrivalMs   uint64   `json:"arrival_ms"`
	Appends     []Append `json:"appends"`
	// Data, with an empty Key, carries the batch object's bytes instead of an uploaded
	// object: a producer hands them to a journal committer in its own process, which writes
	// them into its journal (docs/journal.md). Never sent over HTTP.
	Data []byte `json:"-"`
}

// Carried reports whether the batch carries its bytes (Data) rather than naming an object.
func (b *Batch) Carried() bool { return b.Key == "" && b.Data != nil }

// Append is one append of a batch: its conditions, its metered size, and per record the
// timestamp and, for command records, the command and its argument.
type Append struct {
	MatchSeqNum  *uint64  `json:"match_seq_num,omitempty"`
	FencingToken *string  `json:"fencing_token,omitempty"`
	Metered      uint64   `json:"metered"`
	Records      []Record `json:"records"`
	// Chain: appends of one request with the same non-zero number are of one chain
	// (producer.WithChain): once one is rejected, the later ones are too. Skip: an earlier
	// append of its chain failed before this request.
	Chain int  `json:"chain,omitempty"`
	Skip  bool `json:"skip,omitempty"`
}

// Record is what the commit step reads of a record.
type Record struct {
	Timestamp *uint64 `json:"ts,omitempty"`
	Command   string  `json:"cmd,omitempty"`
	Arg       []byte  `json:"arg,omitempty"`
}

// Response answers a Request: per batch, what a direct commit would have given, and the
// stream's tail after the write; or Error, when nothing of the request was committed.
type Response struct {
	Tail manifest.Position `json:"tail"`
	// Role is the stream's committer role as the committer vouches for it, so that writers
	// keep sending to it without reading the manifest: as this answer's write left it
	// (renewed), or, from a journal committer (which does not renew roles by writes), its
	// own clock's now plus its lease.
	Role        *manifest.CommitterRole `json:"role,omitempty"`
	Batches     []BatchResult           `json:"batches,omitempty"`
	Checkpoints []CheckpointResult      `json:"checkpoints,omitempty"`
	Error       *Error                  `json:"error,omitempty"`
}

// BatchResult is the outcome of one batch. Duplicate: it was committed already (by an
// earlier request or write whose answer was lost); its results are in its manifest entry.
type BatchResult struct {
	Duplicate bool           `json:"duplicate,omitempty"`
	Appends   []AppendResult `json:"appends,omitempty"`
}

// AppendResult is one append's positions, or the rejection of its condition.
type AppendResult struct {
	Start     manifest.Position   `json:"start"`
	End       manifest.Position   `json:"end"`
	Rejection *manifest.Rejection `json:"rejection,omitempty"`
}

// Error codes of a Response.
const (
	CodeRoleHeld   = "role_held"   // another committer holds the stream's role (Holder)
	CodeGeneration = "generation"  // the stream is gone or was recreated
	CodeInvalid    = "invalid"     // the request is malformed
	CodeStopping   = "stopping"    // the committer is shutting down
	CodeStorage    = "storage"     // the store failed; the outcome is unknown
	CodeBadRequest = "bad_request" // not a commit request
	CodeNotHolder  = "not_holder"  // a probe's journal is not the committer's current one
)

// Error is a request that was not committed. Nothing of it is in the stream, except after
// CodeStorage: then a write that held it may have taken effect, which the producer learns
// from the manifest's producer table.
type Error struct {
	Code    string                  `json:"code"`
	Message string                  `json:"message"`
	Holder  *manifest.CommitterRole `json:"holder,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("committer: %s: %s", e.Code, e.Message) }

// Validate reports what is wrong with r, or nil.
func (r *Request) Validate() error {
	if r.IsProbe() {
		if len(r.Batches) > 0 || len(r.Checkpoints) > 0 {
			return fmt.Errorf("a probe carries no batches and no checkpoints")
		}
		if _, err := journal.ParseID(r.Journal); err != nil {
			return err
		}
		return nil
	}
	if r.ManifestPath == "" || (len(r.Batches) == 0 && len(r.Checkpoints) == 0) {
		return fmt.Errorf("a request needs a manifest path, and batches or checkpoints")
	}
	if len(r.Batches) > 0 && r.ProducerID == "" {
		return fmt.Errorf("batches need a producer id")
	}
	if g, err := hex.DecodeString(r.Generation); err != nil || len(g) != 16 {
		return fmt.Errorf("generation %q is not 32 hex digits", r.Generation)
	}
	for i := range r.Batches {
		if r.Batches[i].Key == "" && r.Batches[i].Data == nil {
			return fmt.Errorf("batch %d names no object and carries no bytes", r.Batches[i].BatchNum)
		}
		for j := range r.Batches[i].Appends {
			a := &r.Batches[i].Appends[j]
			if len(a.Records) == 0 || len(a.Records) > batchfmt.MaxAppendRecords {
				return fmt.Errorf("batch %d append %d has %d records", r.Batches[i].BatchNum, j, len(a.Records))
			}
		}
	}
	return nil
}

// Fits reports whether r answers req: one result per batch (with one per append, unless a
// duplicate) and per checkpoint. An answer that does not fit leaves the outcome unknown.
func (r *Response) Fits(req *Request) bool {
	if r.Error != nil {
		return true
	}
	if len(r.Batches) != len(req.Batches) || len(r.Checkpoints) != len(req.Checkpoints) {
		return false
	}
	for i := range r.Batches {
		if !r.Batches[i].Duplicate && len(r.Batches[i].Appends) != len(req.Batches[i].Appends) {
			return false
		}
	}
	return true
}
