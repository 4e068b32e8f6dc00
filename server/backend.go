package server

import (
	"context"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
)

// Backend is the storage the API serves: the engine implements it (engine.Engine.S2), and the
// server's tests run on the engine over a memory store.
//
// Errors: return *s2api.Error (or wrap the s2api sentinels: ErrBasinNotFound,
// ErrStreamNotFound, ErrAlreadyExists, ErrInvalid, ErrTransactionConflict, ErrStorage,
// ErrUnavailable, …), *s2api.SeqNumMismatchError and *s2api.FencingTokenMismatchError from
// Append, *s2api.RangeNotSatisfiableError from Read, and batchfmt validation errors as they
// are. Anything else is sent as 500 "other".
//
// Every method must honour ctx. The server validates names, configs and append inputs
// (batchfmt.AppendInput.Validate) before calling.
type Backend interface {
	CreateBasin(ctx context.Context, name string, cfg s2api.BasinConfig) (s2api.BasinInfo, error)
	ListBasins(ctx context.Context, req s2api.ListRequest) (s2api.ListBasinsResponse, error)
	GetBasinConfig(ctx context.Context, name string) (s2api.BasinConfig, error)
	ReconfigureBasin(ctx context.Context, name string, r s2api.BasinReconfiguration) (s2api.BasinConfig, error)
	DeleteBasin(ctx context.Context, name string) error

	// CreateStream creates a stream; nil fields of cfg take the basin's defaults.
	CreateStream(ctx context.Context, basin, stream string, cfg s2api.StreamConfig) (s2api.StreamInfo, error)
	ListStreams(ctx context.Context, basin string, req s2api.ListRequest) (s2api.ListStreamsResponse, error)
	// StreamDefaults returns the config a stream created now in the basin with no field given
	// would have, every field filled in: the global defaults, then the basin's default
	// stream config. An ensure makes an existing stream's config this, changed by the fields
	// it gives; a reconfiguration's null resets a field to it.
	StreamDefaults(ctx context.Context, basin string) (s2api.StreamConfig, error)
	// GetStreamConfig returns the effective config, every field filled in.
	GetStreamConfig(ctx context.Context, basin, stream string) (s2api.StreamConfig, error)
	// ReconfigureStream changes the fields r gives and returns the effective config.
	ReconfigureStream(ctx context.Context, basin, stream string, r s2api.StreamConfig) (s2api.StreamConfig, error)
	DeleteStream(ctx context.Context, basin, stream string) error

	// Append commits in atomically, and may keep in's byte slices (the server never reuses
	// them), after checking its conditions (fencing token first, then
	// match_seq_num). A fence command record sets the token; a trim moves the trim point.
	Append(ctx context.Context, basin, stream string, in batchfmt.AppendInput) (s2api.AppendAck, error)
	// CheckTail returns the next seq_num and the last record's timestamp.
	CheckTail(ctx context.Context, basin, stream string) (s2api.StreamPosition, error)
	// Read opens a cursor at start. A start past the tail is *s2api.RangeNotSatisfiableError
	// unless start.Clamp, which starts at the tail. A seq_num below the trim point starts at
	// the first readable record; a timestamp starts at the first record at or after it, and one
	// after the tail's timestamp is past the tail (as in S2: with Clamp, the tail's seq_num);
	// a tail offset starts that many records before the tail (not below 0).
	Read(ctx context.Context, basin, stream string, start s2api.ReadStart) (ReadCursor, error)
}

// AsyncAppender is implemented by a Backend that can take an append session's inputs
// without waiting for each to commit, as S2's clients send them (many in flight, a few
// seconds at most for each ack), instead of one commit round trip per input.
type AsyncAppender interface {
	// OpenAppends starts an append session's sequence of appends.
	OpenAppends() Appends
}

// Appends takes one append session's inputs, in order, from one goroutine.
type Appends interface {
	// Append checks and hands over in as Backend.Append would, and returns a function that
	// waits for its ack (call it exactly once; a wait whose ctx ends first returns ctx's
	// error). Inputs commit in the order they are handed over, each only if none before it
	// failed: nothing of a session after its first failure enters the stream. An error from
	// a wait is final for that input.
	Append(ctx context.Context, basin, stream string, in batchfmt.AppendInput) (wait func(context.Context) (s2api.AppendAck, error), err error)
}

// ReadLimit bounds one ReadCursor.Next.
type ReadLimit struct {
	Records int // at least 1
	Bytes   int // metered bytes; at least 8
}

// ReadCursor yields the records of a stream from its position on. It is used by one goroutine.
type ReadCursor interface {
	// Next returns the records at the cursor's position, at most lim.Records of them and at
	// most lim.Bytes metered bytes in all — but always the first available record, even if it
	// alone is larger — and advances past them. The batch's Tail is the stream's tail at the
	// time and is never nil.
	//
	// When no record is available at the position: if block is false Next returns an empty
	// batch at once; if block is true it waits until a record is appended or ctx is done (and
	// then returns ctx's error).
	Next(ctx context.Context, lim ReadLimit, block bool) (s2api.ReadBatch, error)
	// Close releases the cursor.
	Close() error
}
