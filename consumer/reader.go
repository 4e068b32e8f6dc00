package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/journalview"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// StartKind says which start position a ReadRequest uses.
type StartKind uint8

const (
	// StartUnset is the zero value: a request without a start is invalid.
	StartUnset StartKind = iota
	// StartSeqNum starts at a seq_num.
	StartSeqNum
	// StartTimestamp starts at the first record whose timestamp is at or after a value.
	StartTimestamp
	// StartTailOffset starts a number of records before the tail.
	StartTailOffset
)

func (k StartKind) String() string {
	switch k {
	case StartSeqNum:
		return "seq_num"
	case StartTimestamp:
		return "timestamp"
	case StartTailOffset:
		return "tail_offset"
	}
	return "unset"
}

// Start is exactly one start position. Build it with AtSeqNum, AtTimestamp or AtTailOffset.
type Start struct {
	Kind  StartKind
	Value uint64
	// Clamp: a start past the tail starts at the tail instead of failing with *RangeError.
	Clamp bool
}

// AtSeqNum starts at seq_num n.
func AtSeqNum(n uint64) Start { return Start{Kind: StartSeqNum, Value: n} }

// AtTimestamp starts at the first record whose timestamp is at or after ts (ms).
func AtTimestamp(ts uint64) Start { return Start{Kind: StartTimestamp, Value: ts} }

// AtTailOffset starts n records before the tail (at 0 if the stream holds fewer).
func AtTailOffset(n uint64) Start { return Start{Kind: StartTailOffset, Value: n} }

// Clamped returns s with Clamp set.
func (s Start) Clamped() Start { s.Clamp = true; return s }

// ReadRequest describes one read: where it starts, when it stops, and what it skips.
type ReadRequest struct {
	Start Start
	// Count, if set, stops the read after this many records (0 reads nothing).
	Count *uint64
	// Bytes, if set, stops the read before a record that would take the metered bytes read
	// past this value.
	Bytes *uint64
	// Until, if set, stops the read at the first record whose timestamp is at or after it
	// (exclusive end, ms).
	Until *uint64
	// Follow: at the tail, wait for more records instead of ending the read. A following read
	// ends only at its limits, on error, or when its context ends.
	Follow bool
	// SkipCommands leaves command records (fence, trim) out of the read. They still take their
	// seq_nums; they count toward no limit.
	SkipCommands bool
	// Wait (unary Read only, S2's wait): when no record is available, wait up to this long for
	// one before returning an empty batch. 0: return at once (unless Follow).
	Wait time.Duration
}

// Validate reports every problem of the request.
func (q *ReadRequest) Validate() error {
	var errs []error
	if q.Start.Kind == StartUnset || q.Start.Kind > StartTailOffset {
		errs = append(errs, fmt.Errorf("%w: exactly one of seq_num, timestamp or tail_offset must be given", ErrInvalidRequest))
	}
	if q.Wait < 0 {
		errs = append(errs, fmt.Errorf("%w: negative wait %v", ErrInvalidRequest, q.Wait))
	}
	return errors.Join(errs...)
}

// SequencedRecord is one record as a reader sees it (S2's name): its position, headers and
// body. Headers and Body alias the fetched object; they stay valid as long as the caller
// keeps them and must not be modified.
type SequencedRecord struct {
	SeqNum    uint64
	Timestamp uint64
	Headers   []batchfmt.Header
	Body      []byte
}

// Command returns the command name of a command record ("fence", "trim"), or "".
func (r *SequencedRecord) Command() string {
	b := batchfmt.Record{Headers: r.Headers, Body: r.Body}
	return b.Command()
}

// MeteredSize is the record's metered size (see batchfmt.Record.MeteredSize).
func (r *SequencedRecord) MeteredSize() int {
	b := batchfmt.Record{Headers: r.Headers, Body: r.Body}
	return b.MeteredSize()
}

// ReadBatch is what one Next or Read returns (S2's name): records in seq_num order, the
// stream's tail as the reader last saw it, and NextSeq, the position the read continues from
// (every seq_num below it was delivered or skipped).
type ReadBatch struct {
	Records []SequencedRecord
	Tail    manifest.Position
	NextSeq uint64
}

// Reader reads one stream (Config.Stream). It is stateless as far as the stream is
// concerned: it never writes, never touches a consumer group's epoch, and serves any number
// of concurrent reads (Read, Open). It keeps a cache of sealed segments, shared by its reads.
type Reader struct {
	cfg   Config
	store objectstore.Store
	m     *metrics

	mu  sync.Mutex
	idx *manifest.Index // segment cache; nil until the first load
}

// NewReader validates cfg and returns a reader. It does no I/O.
func NewReader(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("consumer: register metrics: %w", err)
	}
	return &Reader{cfg: cfg.withNilDefaults(), store: cfg.ObjectStore, m: m}, nil
}

// Config returns the reader's configuration.
func (r *Reader) Config() Config { return r.cfg }

func (r *Reader) index(st *manifest.State) *manifest.Index {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idx == nil {
		r.idx = manifest.NewIndex(r.store, st)
		return r.idx
	}
	return r.idx.WithState(st)
}

// loadManifest reads the manifest and folds its journal (if it names one) into it: the
// stream's view, with every committed record. With known and version set (a view read at
// that version) it returns (nil, "", nil) when nothing changed: the manifest is still at
// version (a conditional GET: no body is transferred) and its journal has no window past
// known's. A missing or deleted (empty, see package gc) manifest is ErrStreamNotFound.
func (r *Reader) loadManifest(ctx context.Context, known *manifest.State, version string) (*manifest.State, string, error) {
	key := r.cfg.Stream.ManifestKey()
	if known == nil {
		version = ""
	}
	obj, err := r.store.Get(ctx, key, objectstore.GetOptions{IfNoneMatch: version})
	switch {
	case errors.Is(err, objectstore.ErrNotModified):
		st, err := journalview.Refold(ctx, r.store, key, known)
		if err != nil || st == nil {
			return nil, "", err
		}
		return st, version, nil
	case errors.Is(err, objectstore.ErrNotFound):
		return nil, "", &notFoundError{err}
	case err != nil:
		return nil, "", fmt.Errorf("consumer: read manifest %s: %w", key, err)
	}
	defer obj.Body.Close()
	var buf bytes.Buffer
	buf.Grow(int(max(obj.Size, 0)))
	if _, err := buf.ReadFrom(obj.Body); err != nil {
		return nil, "", fmt.Errorf("consumer: read manifest %s: %w", key, err)
	}
	if buf.Len() == 0 {
		// The collector empties a manifest before deleting it (delete_on_empty).
		return nil, "", &notFoundError{fmt.Errorf("manifest %s is being deleted", key)}
	}
	st, err := manifest.Decode(key, buf.Bytes())
	if err != nil {
		return nil, "", err
	}
	if err := journalview.Fold(ctx, r.store, key, st); err != nil {
		return nil, "", fmt.Errorf("consumer: %w", err)
	}
	return st, obj.Version, nil
}

// CheckTail returns the stream's tail: the next seq_num and the last record's timestamp,
// including commits still only in the stream's journal.
func (r *Reader) CheckTail(ctx context.Context) (manifest.Position, error) {
	st, _, err := r.loadManifest(ctx, nil, "")
	if err != nil {
		return manifest.Position{}, err
	}
	return st.Tail, nil
}

// Read is a unary read: it returns the records available now from req.Start, up to the
// request's limits and at most Config.MaxBatchRecords records and MaxBatchBytes metered
// bytes (S2's unary caps). When none is available it waits up to req.Wait for one (then
// returns an empty batch and no error), or with req.Follow until ctx ends (then ctx's error);
// otherwise it returns at once, possibly with no records. The batch's Tail is the tail the
// read saw. A start past the tail without Clamp is *RangeError.
func (r *Reader) Read(ctx context.Context, req ReadRequest) (ReadBatch, error) {
	waitCtx := ctx
	if req.Wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, req.Wait)
		defer cancel()
		req.Follow = true
	}
	s, err := r.Open(ctx, req)
	if err != nil {
		return ReadBatch{}, err
	}
	defer s.Close()
	if most := uint64(r.cfg.MaxBatchRecords); s.budget == 0 || s.budget > most {
		s.budget = most // one batch at most
	}
	var out ReadBatch
	outBytes := 0
	for {
		left := r.cfg.MaxBatchRecords - len(out.Records)
		leftBytes := r.cfg.MaxBatchBytes - outBytes
		if left <= 0 || leftBytes < batchfmt.MinBatchBytes {
			return out, nil
		}
		first := len(out.Records) == 0
		rctx := ctx
		if first {
			rctx = waitCtx
		}
		b, n, err := s.read(rctx, left, leftBytes, req.Follow && first)
		if first && req.Wait > 0 && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			b.Tail, b.NextSeq = s.Tail(), s.Position()
			return b, nil // waited the whole Wait for nothing
		}
		out.Tail, out.NextSeq = b.Tail, b.NextSeq
		outBytes += n
		out.Records = append(out.Records, b.Records...)
		if errors.Is(err, ErrDone) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if len(b.Records) == 0 {
			return out, nil
		}
	}
}

// ReadAll reads from req.Start until the read ends (its limits, or the tail without Follow)
// and returns every record; for tests and small tools.
func (r *Reader) ReadAll(ctx context.Context, req ReadRequest) ([]SequencedRecord, error) {
	s, err := r.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []SequencedRecord
	for {
		b, err := s.Next(ctx)
		out = append(out, b.Records...)
		if errors.Is(err, ErrDone) || errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
