package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/watch"
)

// Session is one ordered read of a stream: Next returns batches of records in seq_num order,
// fetched ahead in parallel. Next and Read are used by one goroutine at a time; Close may be
// called from any goroutine: it makes a Next in progress return ErrClosed, stops the fetches
// and waits for them.
type Session struct {
	r   *Reader
	req ReadRequest

	mu sync.Mutex // held by read and Close

	ctx    context.Context // ends on Close; owns the fetch goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	st atomic.Pointer[manifest.State] // the manifest state last read; readable without mu (State)
	// onRefresh, if set, checks every newer manifest; its error ends the read (a Consumer
	// uses it to stop as soon as a newer member appears).
	onRefresh func(*manifest.State) error
	version   string
	idx       *manifest.Index
	sub       *watch.Subscription // with Config.Watch: taken at the tail, released by Close

	next    uint64 // every seq_num below it was delivered or skipped
	planned uint64 // entries ending at or below it are fetched or queued
	minTS   uint64 // records with earlier timestamps are skipped (timestamp start)
	stopAt  uint64 // without Follow: the tail when the session opened, where it ends
	queue   []*fetch
	queued  int64 // object bytes in queue
	cur     *cursor

	hdrs []batchfmt.Header // arena for copies of record headers (see pull)

	count, bytes uint64 // delivered so far, for the limits
	// budget bounds the records the read can still want in all (0: no bound): the count
	// limit, or for a unary Read its batch's records. fill plans no further ahead than the
	// seq_nums that could hold them, so a short read fetches no more objects than it needs.
	// A record skipped (a command, an early timestamp) drops the bound: seq_nums then no
	// longer stand for records, and planning by them would fetch one object at a time.
	budget uint64
	done   bool
	err    error // sticky
	closed bool
	// held: the last read stopped at its limits with the next record already decoded, at
	// heldSeq with timestamp heldTS (a group member's lag needs it; see heldRecord).
	held            bool
	heldSeq, heldTS uint64
}

type fetch struct {
	e     manifest.Entry
	done  chan struct{}
	batch *batchfmt.Object
	err   error
}

// cursor walks the committed records of one decoded object, numbering them and replaying
// their timestamps; it can hold one record back (valid) for the next Next.
type cursor struct {
	e       manifest.Entry
	it      *batchfmt.Iterator
	clock   *manifest.Clock
	nextSeq uint64

	valid bool
	seq   uint64
	ts    uint64
	rec   *batchfmt.Record // the iterator's, valid until its next Next (in advance)
}

func (c *cursor) advance() bool {
	if !c.it.Next() {
		return false
	}
	c.rec = c.it.Record()
	c.seq = c.nextSeq
	c.nextSeq++
	c.ts = c.clock.Next(c.rec.HasTimestamp, c.rec.Timestamp)
	c.valid = true
	return true
}

// Open starts a session at req.Start. It reads the manifest once to resolve the start: a
// seq_num past the tail fails with *RangeError unless Clamp; a position below the first
// readable record (trim point, retention) starts at the first readable record; a timestamp
// after every record starts at the tail; a tail offset larger than the stream starts at 0.
func (r *Reader) Open(ctx context.Context, req ReadRequest) (*Session, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposeFetch)
	st, version, err := r.loadManifest(ctx, nil, "")
	if err != nil {
		return nil, err
	}
	idx := r.index(st)
	tail := st.Tail
	readable := st.ReadableStart()
	var start, minTS uint64
	switch req.Start.Kind {
	case StartSeqNum:
		start = req.Start.Value
		if start > tail.SeqNum {
			if !req.Start.Clamp {
				return nil, &RangeError{Start: start, Tail: tail}
			}
			start = tail.SeqNum
		}
	case StartTimestamp:
		minTS = req.Start.Value
		e, ok, err := idx.FindTimestamp(ctx, minTS)
		if err != nil {
			return nil, err
		}
		start = tail.SeqNum
		if ok {
			start = e.FirstSeq
		}
	case StartTailOffset:
		start = tail.SeqNum - min(req.Start.Value, tail.SeqNum)
	}
	start = max(start, readable)
	sctx, cancel := context.WithCancel(context.Background())
	s := &Session{r: r, req: req, ctx: sctx, cancel: cancel, version: version, idx: idx,
		next: start, planned: start, minTS: minTS, stopAt: math.MaxUint64}
	if !req.Follow {
		s.stopAt = tail.SeqNum
	}
	if req.Count != nil {
		s.budget = max(*req.Count, 1) // a count of 0 reads nothing anyway
	}
	s.st.Store(st)
	return s, nil
}

// Position is the seq_num the session continues from.
func (s *Session) Position() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Tail is the stream's tail as the session last saw it.
func (s *Session) Tail() manifest.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Load().Tail
}

// State is the manifest state the session last read (do not modify it). It does not wait for
// a Next in progress.
func (s *Session) State() *manifest.State { return s.st.Load() }

// Next returns the next batch: at least one record, at most Config.MaxBatchRecords records and
// MaxBatchBytes metered bytes (a single larger record comes alone). It blocks while the
// session follows the tail and no record is available. After the last batch of a read that
// ended (its limits, or the tail without Follow) it returns ErrDone.
//
// Next never returns records together with an error: records read before a failure come
// first, without it, and the failure comes with the next call. So a caller may drop a batch
// whose error is set without losing records it was never shown.
func (s *Session) Next(ctx context.Context) (ReadBatch, error) {
	for {
		b, _, err := s.read(ctx, s.r.cfg.MaxBatchRecords, s.r.cfg.MaxBatchBytes, true)
		if err != nil || len(b.Records) > 0 {
			return deferErr(b, err)
		}
	}
}

// deferErr holds an error back while b carries records: the session's failure is sticky (or,
// for a canceled context, found again), so the next call reports it.
func deferErr(b ReadBatch, err error) (ReadBatch, error) {
	if err != nil && len(b.Records) > 0 {
		return b, nil
	}
	return b, err
}

// Read is Next with explicit per-call bounds: at most maxRecords records and maxBytes metered
// bytes (a single larger record still comes alone, so a read always progresses). With wait
// false it does not wait at the tail: when no record is available it returns an empty batch
// (carrying the tail) and no error. It always waits for objects being fetched. Like Next, it
// never returns records together with an error.
func (s *Session) Read(ctx context.Context, maxRecords, maxBytes int, wait bool) (ReadBatch, error) {
	if maxRecords < 1 || maxBytes < batchfmt.MinBatchBytes {
		return ReadBatch{}, fmt.Errorf("%w: read limits %d records / %d bytes", ErrInvalidRequest, maxRecords, maxBytes)
	}
	for {
		b, _, err := s.read(ctx, maxRecords, maxBytes, wait)
		if err != nil || len(b.Records) > 0 || !wait {
			return deferErr(b, err)
		}
	}
}

// heldRecord returns the position and timestamp of the record after the last batch when the
// read already decoded it (the batch ended at its limits inside an object).
func (s *Session) heldRecord() (seq, ts uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldSeq, s.heldTS, s.held
}

// Close stops the session's fetches and waits for them.
func (s *Session) Close() error {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.wg.Wait()
	s.queue, s.cur = nil, nil
	if s.sub != nil {
		s.sub.Close()
	}
	return nil
}

// batch wraps recs, whose metered size is n, and counts them as delivered.
func (s *Session) batch(recs []SequencedRecord, n int) ReadBatch {
	if len(recs) > 0 {
		s.r.m.records.Add(float64(len(recs)))
		s.r.m.bytes.Add(float64(n))
	}
	return ReadBatch{Records: recs, Tail: s.st.Load().Tail, NextSeq: s.next}
}

func (s *Session) limitReached() bool {
	return s.req.Count != nil && s.count >= *s.req.Count
}

// read is the session's engine. wait: block at the tail when following. It returns the
// batch, the metered size of its records, and an error.
func (s *Session) read(ctx context.Context, maxRecords, maxBytes int, wait bool) (ReadBatch, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx.Err() != nil {
		return ReadBatch{}, 0, ErrClosed
	}
	if s.err != nil {
		return s.batch(nil, 0), 0, s.err
	}
	s.held = false
	out := make([]SequencedRecord, 0, min(maxRecords, 256))
	outBytes := 0
	for {
		if s.ctx.Err() != nil {
			return s.batch(out, outBytes), outBytes, ErrClosed
		}
		if !s.done && s.limitReached() {
			s.done = true
		}
		if s.done {
			if len(out) > 0 {
				return s.batch(out, outBytes), outBytes, nil
			}
			return s.batch(nil, 0), 0, ErrDone
		}
		if s.cur != nil {
			if s.pull(&out, &outBytes, maxRecords, maxBytes) {
				if s.cur.valid {
					s.held, s.heldSeq, s.heldTS = true, s.cur.seq, s.cur.ts
				}
				return s.batch(out, outBytes), outBytes, nil
			}
			if s.done {
				continue
			}
			if err := s.cur.it.Err(); err != nil {
				return s.fail(out, outBytes, objectErr(&s.cur.e, ErrCorrupt, err))
			}
			s.next = max(s.next, s.cur.e.EndSeq())
			s.cur = nil
			continue
		}
		if err := s.fill(ctx); err != nil {
			return s.fail(out, outBytes, err)
		}
		if len(s.queue) > 0 {
			f := s.queue[0]
			if len(out) > 0 {
				select {
				case <-f.done:
				default:
					return s.batch(out, outBytes), outBytes, nil // deliver what we have rather than wait
				}
			}
			select {
			case <-f.done:
			case <-ctx.Done():
				return s.batch(out, outBytes), outBytes, ctx.Err()
			}
			s.queue = s.queue[1:]
			s.queued -= int64(f.e.ObjectBytes)
			if f.err != nil {
				if errors.Is(f.err, ErrMissingObject) {
					gone, err := s.droppedByRetention(ctx, &f.e)
					if err != nil {
						return s.fail(out, outBytes, err)
					}
					if gone {
						s.r.cfg.Logger.Info("object dropped by retention while reading; skipping its records",
							"key", f.e.Key, "first_seq", f.e.FirstSeq, "end_seq", f.e.EndSeq())
						s.next = max(s.next, f.e.EndSeq())
						continue
					}
				}
				return s.fail(out, outBytes, f.err)
			}
			s.cur = &cursor{e: f.e, it: f.batch.Iter(f.e.IsRejected), clock: f.e.Clock(), nextSeq: f.e.FirstSeq}
			continue
		}
		// At the tail of the manifest we hold.
		if len(out) > 0 {
			return s.batch(out, outBytes), outBytes, nil
		}
		if !s.req.Follow {
			s.done = true // a read without Follow ends at the tail it saw when it opened
			continue
		}
		if s.r.cfg.Watch != nil {
			changed, err := s.awaitWatched(ctx, wait) // see watched.go
			if err != nil {
				return s.fail(nil, 0, err)
			}
			if !changed && !wait {
				return s.batch(nil, 0), 0, nil
			}
			continue
		}
		var wake <-chan struct{}
		if s.r.cfg.Notifier != nil && wait {
			wake = s.r.cfg.Notifier.Wait(s.r.cfg.Stream.ManifestKey())
		}
		changed, err := s.refresh(ctx)
		if err != nil {
			return s.fail(nil, 0, err)
		}
		if changed {
			continue
		}
		if !wait {
			return s.batch(nil, 0), 0, nil
		}
		t := time.NewTimer(s.r.cfg.PollInterval)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return s.batch(nil, 0), 0, ctx.Err()
		case <-s.ctx.Done():
			t.Stop()
			return s.batch(nil, 0), 0, ErrClosed
		}
		t.Stop()
	}
}

// fail records a permanent error; records already collected (n metered bytes) are returned
// with it.
func (s *Session) fail(out []SequencedRecord, n int, err error) (ReadBatch, int, error) {
	if ctxErr := s.ctx.Err(); ctxErr == nil && !isCtxErr(err) {
		s.err = err
	}
	return s.batch(out, n), n, err
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// pull moves records of the current object into out. It reports true when out is full (the
// per-call limits); false when the object is exhausted or the read is done.
func (s *Session) pull(out *[]SequencedRecord, outBytes *int, maxRecords, maxBytes int) bool {
	c := s.cur
	for {
		if !c.valid && !c.advance() {
			return false
		}
		if c.seq < s.next {
			c.valid = false
			continue
		}
		if c.seq >= s.stopAt {
			s.done = true
			return false
		}
		if c.ts < s.minTS {
			s.next = c.seq + 1
			s.budget = 0 // seq_nums no longer stand for records: read ahead in full
			c.valid = false
			continue
		}
		if s.req.Until != nil && c.ts >= *s.req.Until {
			s.done = true
			return false
		}
		if s.req.SkipCommands && c.rec.IsCommand() {
			s.next = c.seq + 1
			s.budget = 0 // as above
			c.valid = false
			continue
		}
		if s.limitReached() {
			s.done = true
			return false
		}
		m := c.rec.MeteredSize()
		if s.req.Bytes != nil && s.bytes+uint64(m) > *s.req.Bytes {
			s.done = true
			return false
		}
		if len(*out) >= maxRecords || (len(*out) > 0 && *outBytes+m > maxBytes) {
			return true
		}
		rec := SequencedRecord{SeqNum: c.seq, Timestamp: c.ts, Body: c.rec.Body}
		if h := c.rec.Headers; len(h) > 0 {
			// The iterator reuses its header slice: copy into an arena shared by the batch
			// (one allocation per few hundred records instead of one per record).
			if cap(s.hdrs)-len(s.hdrs) < len(h) {
				s.hdrs = make([]batchfmt.Header, 0, max(256, len(h)))
			}
			n := len(s.hdrs)
			s.hdrs = append(s.hdrs, h...)
			rec.Headers = s.hdrs[n:len(s.hdrs):len(s.hdrs)]
		}
		*out = append(*out, rec)
		*outBytes += m
		s.count++
		s.bytes += uint64(m)
		s.next = c.seq + 1
		c.valid = false
	}
}

var errEnough = errors.New("enough entries")

// planEnough reports whether the queued objects hold every seq_num the read can still want
// (see budget). At least one object is always queued.
func (s *Session) planEnough() bool {
	return s.budget > 0 && len(s.queue) > 0 && s.planned > s.next && s.planned-s.next >= s.budget-min(s.count, s.budget)
}

// fill plans the entries after s.planned and starts fetching them, up to the read-ahead
// depth and bytes.
func (s *Session) fill(ctx context.Context) error {
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposeFetch) // segment reads
	depth := s.r.cfg.ReadAheadDepth
	for len(s.queue) < depth && (len(s.queue) == 0 || s.queued < s.r.cfg.ReadAheadBytes) {
		if s.planned >= min(s.st.Load().Tail.SeqNum, s.stopAt) {
			return nil
		}
		if s.planEnough() {
			return nil
		}
		var batch []manifest.Entry
		want := depth - len(s.queue)
		walk := func() error {
			batch = batch[:0]
			err := s.idx.Walk(ctx, s.planned, func(e *manifest.Entry) error {
				if e.Records == 0 || e.EndSeq() <= s.planned {
					return nil
				}
				batch = append(batch, *e)
				if len(batch) >= want {
					return errEnough
				}
				return nil
			})
			if errors.Is(err, errEnough) {
				return nil
			}
			return err
		}
		if err := walk(); err != nil {
			// A segment of the manifest we hold may have been dropped by retention and
			// collected while we read a long backlog: read the manifest again and retry once.
			// If the newer manifest still references it, the error stands.
			if _, rerr := s.refresh(ctx); rerr != nil {
				return err
			}
			if err := walk(); err != nil {
				return err
			}
			if s.planned >= min(s.st.Load().Tail.SeqNum, s.stopAt) {
				return nil
			}
		}
		if len(batch) == 0 {
			return nil
		}
		for i := range batch {
			e := batch[i]
			if len(s.queue) > 0 && s.queued+int64(e.ObjectBytes) > s.r.cfg.ReadAheadBytes || s.planEnough() {
				return nil
			}
			s.start(e)
			s.planned = e.EndSeq()
		}
	}
	return nil
}

// start launches the fetch of one entry's object.
func (s *Session) start(e manifest.Entry) {
	f := &fetch{e: e, done: make(chan struct{})}
	s.queue = append(s.queue, f)
	s.queued += int64(e.ObjectBytes)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(f.done)
		f.batch, f.err = s.r.fetchObject(s.ctx, &f.e)
	}()
}

// fetchObject reads and checks one batch object, retrying plain failures.
func (r *Reader) fetchObject(ctx context.Context, e *manifest.Entry) (*batchfmt.Object, error) {
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposeFetch)
	if e.Ranged() && (e.Offset > math.MaxInt64-e.Length || e.Length != e.ObjectBytes) {
		r.m.fetchErrors.WithLabelValues("corrupt").Inc()
		return nil, objectErr(e, ErrCorrupt, fmt.Errorf("range of %d bytes at %d (object bytes %d) cannot be read", e.Length, e.Offset, e.ObjectBytes))
	}
	for attempt := 0; ; attempt++ {
		t0 := time.Now()
		// Sized by the manifest (bounded by the largest valid object): checkObject refuses an
		// object of another size anyway.
		buf := batchfmt.NewObjectBuffer(int(min(e.ObjectBytes, maxObjectSize)))
		err := readEntryObject(ctx, r.store, e, buf)
		r.m.fetchLatency.Observe(time.Since(t0).Seconds())
		switch {
		case err == nil:
			r.m.fetches.Inc()
			r.m.fetchBytes.Add(float64(len(buf.Bytes())))
			b, err := checkObject(e, buf)
			if err != nil {
				r.m.fetchErrors.WithLabelValues("corrupt").Inc()
				return nil, err
			}
			return b, nil
		case errors.Is(err, objectstore.ErrNotFound):
			r.m.fetchErrors.WithLabelValues("missing").Inc()
			return nil, objectErr(e, ErrMissingObject, err)
		case errors.Is(err, objectstore.ErrCorrupt):
			r.m.fetchErrors.WithLabelValues("corrupt").Inc()
			return nil, objectErr(e, ErrCorrupt, err)
		}
		if ctx.Err() != nil {
			// The read ended (its session was closed): not the store's failure, and not
			// counted as one.
			return nil, fmt.Errorf("consumer: read object %q (seq_nums %d..%d): %w", e.Key, e.FirstSeq, e.EndSeq(), err)
		}
		r.m.fetchErrors.WithLabelValues("other").Inc()
		if attempt+1 >= r.cfg.FetchAttempts {
			return nil, fmt.Errorf("consumer: read object %q (seq_nums %d..%d): %w", e.Key, e.FirstSeq, e.EndSeq(), err)
		}
		r.cfg.Logger.Warn("object read failed, retrying", "key", e.Key, "attempt", attempt, "err", err)
		if r.cfg.Backoff.Sleep(ctx, attempt) != nil {
			return nil, ctx.Err()
		}
	}
}

// readEntryObject reads e's batch object into buf: the whole object at e.Key, or for a ranged
// entry only bytes [Offset, Offset+Length) of it (a journal window). checkObject then checks
// the bytes read against ObjectBytes either way, so a short range is corruption.
func readEntryObject(ctx context.Context, s objectstore.Store, e *manifest.Entry, buf *batchfmt.ObjectBuffer) error {
	if !e.Ranged() {
		_, err := objectstore.ReadInto(ctx, s, e.Key, buf)
		return err
	}
	rng := &objectstore.ByteRange{Offset: int64(e.Offset), Length: int64(e.Length)}
	obj, err := s.Get(ctx, e.Key, objectstore.GetOptions{Range: rng})
	if err != nil {
		return err
	}
	defer obj.Body.Close()
	// Read one byte past the range: a store that ignored the range returns more, and the size
	// check then refuses it rather than decoding the wrong bytes.
	if _, err := buf.ReadFrom(io.LimitReader(obj.Body, int64(e.Length)+1)); err != nil {
		return objectstore.NewOpError("get", e.Key, nil, err)
	}
	return nil
}

// maxObjectSize is the size of the largest valid batch object.
const maxObjectSize = batchfmt.HeaderSize + batchfmt.MaxObjectBytes + batchfmt.TrailerSize

// checkObject decodes an object and checks it against its entry.
func checkObject(e *manifest.Entry, obj *batchfmt.ObjectBuffer) (*batchfmt.Object, error) {
	if n := len(obj.Bytes()); uint64(n) != e.ObjectBytes {
		return nil, objectErr(e, ErrCorrupt, fmt.Errorf("object is %d bytes, the manifest says %d", n, e.ObjectBytes))
	}
	b, err := obj.Decode()
	if err != nil {
		return nil, objectErr(e, ErrCorrupt, err)
	}
	if b.NumAppends() != int(e.Appends) {
		return nil, objectErr(e, ErrCorrupt, fmt.Errorf("object holds %d appends, the manifest says %d", b.NumAppends(), e.Appends))
	}
	var n uint64
	for i := range b.NumAppends() {
		if !e.IsRejected(i) {
			n += uint64(b.Append(i).RecordCount)
		}
	}
	if n != e.Records {
		return nil, objectErr(e, ErrCorrupt, fmt.Errorf("object holds %d committed records, the manifest says %d", n, e.Records))
	}
	return b, nil
}

func objectErr(e *manifest.Entry, kind, err error) *ObjectError {
	return &ObjectError{Key: e.Key, FirstSeq: e.FirstSeq, EndSeq: e.EndSeq(), Kind: kind, Err: err}
}

// refresh re-reads the manifest if it changed (conditional GET). It reports whether the
// stream has moved past what the session had planned.
func (s *Session) refresh(ctx context.Context) (bool, error) {
	var st *manifest.State
	var version string
	var err error
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposePoll)
	for attempt := 0; ; attempt++ {
		st, version, err = s.r.loadManifest(ctx, s.st.Load(), s.version)
		if err == nil || errors.Is(err, ErrStreamNotFound) || errors.Is(err, manifest.ErrCorrupt) ||
			errors.Is(err, manifest.ErrUnsupportedVersion) || ctx.Err() != nil || attempt+1 >= s.r.cfg.FetchAttempts {
			break
		}
		s.r.m.polls.WithLabelValues("error").Inc()
		s.r.cfg.Logger.Warn("manifest read failed, retrying", "path", s.r.cfg.Stream.ManifestKey(), "attempt", attempt, "err", err)
		if s.r.cfg.Backoff.Sleep(ctx, attempt) != nil {
			return false, ctx.Err()
		}
	}
	if err != nil {
		s.r.m.polls.WithLabelValues("error").Inc()
		return false, err
	}
	if st == nil {
		s.r.m.polls.WithLabelValues("not_modified").Inc()
		return false, nil
	}
	s.r.m.polls.WithLabelValues("changed").Inc()
	return s.adopt(st, version)
}

// adopt makes st, read at version, the session's manifest. It reports whether the stream has
// moved past what the session had planned.
func (s *Session) adopt(st *manifest.State, version string) (bool, error) {
	if st.Generation != s.st.Load().Generation {
		return false, fmt.Errorf("%w: %s", manifest.ErrGenerationChanged, s.r.cfg.Stream.ManifestKey())
	}
	s.st.Store(st)
	s.version, s.idx = version, s.idx.WithState(st)
	if s.onRefresh != nil {
		if err := s.onRefresh(st); err != nil {
			return false, err
		}
	}
	if rs := st.ReadableStart(); s.next < rs {
		// Trimmed or dropped by retention while we lagged: those records are no longer
		// readable (S2 semantics), continue at the first readable one.
		s.next = rs
		s.planned = max(s.planned, rs)
	}
	return s.planned < st.Tail.SeqNum, nil
}

// droppedByRetention reports whether a missing object's entry has left the manifest, or lies
// wholly below its readable start (so the collector was entitled to delete it), after
// re-reading the manifest.
func (s *Session) droppedByRetention(ctx context.Context, e *manifest.Entry) (bool, error) {
	if _, err := s.refresh(ctx); err != nil {
		return false, err
	}
	if e.EndSeq() <= s.st.Load().ReadableStart() {
		// Trimmed (by a trim command, or by retention inside a sealed segment it keeps):
		// the collector deletes the objects of entries wholly below the readable start,
		// even while the entries stay in the manifest.
		return true, nil
	}
	found, ok, err := s.idx.FindSeq(ctx, e.FirstSeq)
	if err != nil {
		return false, err
	}
	return !ok || found.Key != e.Key, nil
}
