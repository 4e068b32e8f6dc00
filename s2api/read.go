package s2api

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Read limits of S2.
const (
	// MaxUnaryRecords and MaxUnaryBytes cap one unary read (and one batch of a session).
	MaxUnaryRecords = 1000
	MaxUnaryBytes   = 1 << 20
	// MaxWaitSecs is the largest wait a read may ask for.
	MaxWaitSecs = 60
)

// ReadStart says where a read begins. At most one of SeqNum, Timestamp and TailOffset is set;
// none means TailOffset 0 (the tail). Clamp turns a start past the tail into the tail instead
// of a 416.
type ReadStart struct {
	SeqNum     *uint64
	Timestamp  *uint64 // the first record whose timestamp is at or after this, epoch ms; after the tail's timestamp it is past the tail
	TailOffset *uint64 // this many records before the tail
	Clamp      bool
}

// ReadRequest is a read's query: where to start and when to stop.
//
// Count and Bytes bound the records and metered bytes read; the query values 0 are read as
// absent, as S2 does. Until is an exclusive timestamp bound. Wait, in seconds, is how long to
// wait for new records: by default 0 when any of Count, Bytes, Until is given, else (for
// sessions) forever.
type ReadRequest struct {
	Start ReadStart
	Count *uint64
	Bytes *uint64
	Until *uint64
	Wait  *uint64
}

// Bounded reports whether the read has a count, bytes or until bound.
func (r *ReadRequest) Bounded() bool { return r.Count != nil || r.Bytes != nil || r.Until != nil }

// SessionIdle is how long a read session may wait at the tail for a new record before it ends;
// ok is false for "forever" (an unbounded read without wait).
func (r *ReadRequest) SessionIdle() (d time.Duration, ok bool) {
	if r.Wait != nil {
		return time.Duration(*r.Wait) * time.Second, true
	}
	if r.Bounded() {
		return 0, true
	}
	return 0, false
}

// UnaryWait is how long a unary read long-polls for its first record (0: not at all).
func (r *ReadRequest) UnaryWait() time.Duration {
	if r.Wait == nil {
		return 0
	}
	return time.Duration(*r.Wait) * time.Second
}

// ParseReadQuery parses the query of a read: seq_num | timestamp | tail_offset, clamp, count,
// bytes, until, wait. Unknown parameters are ignored. Malformed numbers are *Error bad_query;
// two start points or wait over 60 are *Error invalid.
func ParseReadQuery(q url.Values) (ReadRequest, error) {
	var r ReadRequest
	var err error
	num := func(name string) *uint64 {
		if err != nil {
			return nil
		}
		vs, ok := q[name]
		if !ok || len(vs) == 0 {
			return nil
		}
		if len(vs) > 1 {
			err = Errorf(CodeBadQuery, "query parameter %s given %d times", name, len(vs))
			return nil
		}
		n, perr := strconv.ParseUint(strings.TrimSpace(vs[0]), 10, 64)
		if perr != nil {
			err = Errorf(CodeBadQuery, "query parameter %s=%q is not an unsigned integer", name, vs[0])
			return nil
		}
		return &n
	}
	r.Start.SeqNum = num("seq_num")
	r.Start.Timestamp = num("timestamp")
	r.Start.TailOffset = num("tail_offset")
	r.Count = num("count")
	r.Bytes = num("bytes")
	r.Until = num("until")
	r.Wait = num("wait")
	if err != nil {
		return ReadRequest{}, err
	}
	if vs, ok := q["clamp"]; ok && len(vs) > 0 {
		b, perr := strconv.ParseBool(vs[0])
		if perr != nil {
			return ReadRequest{}, Errorf(CodeBadQuery, "query parameter clamp=%q is not a boolean", vs[0])
		}
		r.Start.Clamp = b
	}
	starts := 0
	for _, p := range []*uint64{r.Start.SeqNum, r.Start.Timestamp, r.Start.TailOffset} {
		if p != nil {
			starts++
		}
	}
	// Errors of the query are 400 bad_query: S2's read lists no 422 among its errors (the
	// SDK's generated ReadErrors: 400, 403, 404, 408, 409, 416).
	if starts > 1 {
		return ReadRequest{}, Errorf(CodeBadQuery, "only one of seq_num, timestamp and tail_offset may be given")
	}
	if starts == 0 {
		zero := uint64(0)
		r.Start.TailOffset = &zero
	}
	if r.Count != nil && *r.Count == 0 {
		r.Count = nil
	}
	if r.Bytes != nil && *r.Bytes == 0 {
		r.Bytes = nil
	}
	if r.Wait != nil && *r.Wait > MaxWaitSecs {
		return ReadRequest{}, Errorf(CodeBadQuery, "wait must be at most %d seconds, found %d", MaxWaitSecs, *r.Wait)
	}
	return r, nil
}
