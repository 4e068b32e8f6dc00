package manifest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/sluice-dev/sluice/journal"
)

// Position is a record's place in a stream: its seq_num and its timestamp (milliseconds since
// the Unix epoch).
type Position struct {
	SeqNum    uint64
	Timestamp uint64
}

// TimestampingMode says where record timestamps come from (S2's timestamping.mode, in its stream configuration).
type TimestampingMode uint8

const (
	// ClientPrefer uses the client's timestamp when given, else the arrival time (the default).
	ClientPrefer TimestampingMode = 0
	// ClientRequire rejects appends holding a record without a client timestamp.
	ClientRequire TimestampingMode = 1
	// Arrival always uses the arrival time (the producer's clock), ignoring client timestamps.
	Arrival TimestampingMode = 2
)

func (m TimestampingMode) String() string {
	switch m {
	case ClientPrefer:
		return "client-prefer"
	case ClientRequire:
		return "client-require"
	case Arrival:
		return "arrival"
	}
	return fmt.Sprintf("TimestampingMode(%d)", uint8(m))
}

// ParseTimestampingMode parses "client-prefer", "client-require" or "arrival".
func ParseTimestampingMode(s string) (TimestampingMode, error) {
	switch s {
	case "client-prefer":
		return ClientPrefer, nil
	case "client-require":
		return ClientRequire, nil
	case "arrival":
		return Arrival, nil
	}
	return 0, fmt.Errorf("%w: unknown timestamping mode %q", ErrInvalidConfig, s)
}

// Timestamping is S2's timestamping configuration of a stream.
type Timestamping struct {
	Mode TimestampingMode
	// Uncapped allows client timestamps in the future; when false (the default) a client
	// timestamp later than the arrival time is capped at the arrival time.
	Uncapped bool
}

// Retention is S2's retention_policy: either Infinite, or an age in seconds (> 0).
type Retention struct {
	Infinite bool
	AgeSecs  uint64
}

// DeleteOnEmpty is S2's delete_on_empty; MinAgeSecs 0 disables it (the default).
type DeleteOnEmpty struct {
	MinAgeSecs uint64
}

// Config is the stream configuration kept in the manifest.
type Config struct {
	Timestamping  Timestamping
	Retention     Retention
	DeleteOnEmpty DeleteOnEmpty
	// QueueMode drops entries once every consumer group has acknowledged them (and there is at
	// least one group).
	QueueMode bool
	// StorageClass is S2's storage_class as the stream was configured: "standard", "express",
	// or "" when never set. It is kept so that it reads back as set; sluice's latency is the
	// object store's whatever it says.
	StorageClass string
}

// DefaultConfig is client-prefer, capped, infinite retention, delete_on_empty disabled, not a
// queue.
func DefaultConfig() Config {
	return Config{Retention: Retention{Infinite: true}}
}

// Validate reports every problem of the config at once.
func (c Config) Validate() error {
	var errs []error
	if c.Timestamping.Mode > Arrival {
		errs = append(errs, fmt.Errorf("%w: unknown timestamping mode %d", ErrInvalidConfig, c.Timestamping.Mode))
	}
	if c.Retention.Infinite && c.Retention.AgeSecs != 0 {
		errs = append(errs, fmt.Errorf("%w: retention is both infinite and %d seconds", ErrInvalidConfig, c.Retention.AgeSecs))
	}
	if !c.Retention.Infinite && c.Retention.AgeSecs == 0 {
		errs = append(errs, fmt.Errorf("%w: retention age must be > 0 seconds (or infinite)", ErrInvalidConfig))
	}
	switch c.StorageClass {
	case "", "standard", "express":
	default:
		errs = append(errs, fmt.Errorf("%w: unknown storage class %q (want standard or express)", ErrInvalidConfig, c.StorageClass))
	}
	return errors.Join(errs...)
}

// Group is a consumer group's state: the epoch of its one active member and its checkpoint,
// the seq_num the group resumes from (every record below it is acknowledged).
type Group struct {
	Epoch      uint64
	Checkpoint uint64
}

// ProducerState is a producer's row in the deduplication table: the highest batch number it
// has committed and when (ms, the committing producer's clock).
type ProducerState struct {
	LastBatch  uint64
	LastSeenMs uint64
}

// Bounds of the producer table.
//
// A row must outlive any write of its producer whose outcome is still being resolved; such a
// write is resolved within the producer's commit deadline (minutes), far less than the
// expiry, and eviction by count takes the least recently seen rows first, so a row is only
// lost early if MaxProducers other producers commit within that window.
const (
	// ProducerExpiry is how long a silent producer keeps its row (once the table is more than
	// half full). It must be (and is checked by package producer to be) longer than any
	// commit deadline.
	ProducerExpiry = 24 * time.Hour
	// MaxProducers bounds the table; beyond it the least recently seen rows are evicted.
	MaxProducers = 1024
)

// Rejection reasons recorded in an entry.
type RejectReason uint8

const (
	RejectSeqNumMismatch    RejectReason = 1
	RejectFencingToken      RejectReason = 2
	RejectTimestampRequired RejectReason = 3
	RejectPreceding         RejectReason = 4 // Batch.Skip: an earlier append of its chain failed
)

// Rejection records an append of an entry's object that failed its condition at commit time.
// Its records are not part of the stream. Expected (seq_num mismatch) and Actual (fencing token
// mismatch) let a producer rebuild the error after a write whose outcome was unknown.
type Rejection struct {
	Append   uint32 // index of the append in the batch object
	Reason   RejectReason
	Expected uint64
	Actual   string
}

// Err returns the typed error of the rejection.
func (r Rejection) Err() error {
	switch r.Reason {
	case RejectSeqNumMismatch:
		return &SeqNumMismatchError{Expected: r.Expected}
	case RejectFencingToken:
		return &FencingTokenMismatchError{Actual: r.Actual}
	case RejectTimestampRequired:
		return ErrTimestampRequired
	case RejectPreceding:
		return ErrPrecedingAppendFailed
	}
	return fmt.Errorf("%w: unknown rejection reason %d", ErrCorrupt, r.Reason)
}

// Entry names one committed batch object and where its records sit in the stream.
//
// The records of the object's appends that are not in Rejected get seq_nums FirstSeq,
// FirstSeq+1, ... in object order (Records of them). Their timestamps are replayed by Clock:
// the raw timestamp per the timestamping mode in force at commit (TSMode, Uncapped, Arrival),
// clamped to be at least the running maximum starting from Floor.
type Entry struct {
	Key          string
	FirstSeq     uint64
	Records      uint64 // committed records (rejected appends excluded)
	MeteredBytes uint64 // of the committed records
	ObjectBytes  uint64
	MinTS        uint64 // timestamp of the first committed record (Floor if none)
	MaxTS        uint64 // timestamp of the last committed record (Floor if none)
	Floor        uint64 // the stream's tail timestamp before this entry
	Arrival      uint64 // arrival time (ms, producer clock) used by the timestamping rules
	TSMode       TimestampingMode
	Uncapped     bool
	ProducerID   string
	BatchNum     uint64
	Appends      uint32 // number of appends in the object
	Rejected     []Rejection
	// Offset, Length: when Length > 0 the entry is ranged, its batch object is bytes
	// [Offset, Offset+Length) of Key (a journal window), and ObjectBytes == Length.
	Offset, Length uint64
}

// Ranged reports whether the entry's batch object is a byte range of Key rather than all of it.
func (e *Entry) Ranged() bool { return e.Length > 0 }

// EndSeq is the exclusive end of the entry's seq_num range.
func (e *Entry) EndSeq() uint64 { return e.FirstSeq + e.Records }

// Rejection returns the rejection of append i of the object, if it was rejected.
func (e *Entry) Rejection(i int) (Rejection, bool) {
	for _, r := range e.Rejected {
		if int(r.Append) == i {
			return r, true
		}
	}
	return Rejection{}, false
}

// IsRejected reports whether append i of the object was rejected; it fits batch iterators'
// skip functions.
func (e *Entry) IsRejected(i int) bool {
	_, ok := e.Rejection(i)
	return ok
}

// Clock replays the timestamp assignment of an entry's records.
type Clock struct {
	running  uint64
	arrival  uint64
	mode     TimestampingMode
	uncapped bool
}

// Clock returns a fresh clock for the entry's committed records, in seq_num order.
func (e *Entry) Clock() *Clock {
	return &Clock{running: e.Floor, arrival: e.Arrival, mode: e.TSMode, uncapped: e.Uncapped}
}

// Next returns the timestamp of the next committed record, given its client timestamp.
func (c *Clock) Next(hasTimestamp bool, ts uint64) uint64 {
	raw := c.arrival
	if hasTimestamp && c.mode != Arrival {
		raw = ts
		if !c.uncapped && raw > c.arrival {
			raw = c.arrival
		}
	}
	if raw < c.running {
		raw = c.running
	}
	c.running = raw
	return raw
}

// SegmentRef references a sealed, immutable segment object. A level-0 segment holds entries;
// a level-n segment (n > 0) holds references to level n-1 segments.
type SegmentRef struct {
	Key          string
	Level        uint8
	FirstSeq     uint64 // FirstSeq of the first entry below it
	EndSeq       uint64 // EndSeq of the last entry below it
	MinTS, MaxTS uint64
	Entries      uint64 // entries below it
	MeteredBytes uint64 // committed metered bytes below it
	ObjectBytes  uint64
	MaxArrival   uint64 // the latest Arrival below it
}

// State is the decoded manifest.
type State struct {
	Generation   [16]byte
	WriteCounter uint64
	// RecentWrites holds the nonces of the latest writes, newest last (see Update).
	RecentWrites [][8]byte
	CreatedMs    uint64
	Tail         Position // next seq_num, last timestamp
	FencingToken string
	TrimPoint    uint64 // records below it are not readable
	Config       Config
	Groups       map[string]Group
	Producers    map[string]ProducerState
	Segments     []SegmentRef  // oldest first; all before Entries
	Entries      []Entry       // recent entries, oldest first
	Committer    CommitterRole // the stream's committer, if any
	// Journal, if set, names the journal windows that may hold commits the manifest does not
	// show (see FoldJournal). Apply refuses to append while it is set, unless the state is
	// marked as that journal's writer (OwnJournal).
	Journal *JournalPointer

	ownJournal    journal.ID // set by OwnJournal; kept by Clone, zero after Decode
	ownJournalSet bool
}

// maxRecentWrites bounds State.RecentWrites.
const maxRecentWrites = 32

// NewState returns the state of a newly created, empty stream with a random generation.
func NewState(cfg Config, now time.Time) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &State{
		CreatedMs: uint64(max(now.UnixMilli(), 0)),
		Config:    cfg,
		Groups:    map[string]Group{},
		Producers: map[string]ProducerState{},
	}
	if _, err := rand.Read(s.Generation[:]); err != nil {
		return nil, fmt.Errorf("manifest: random generation: %w", err)
	}
	return s, nil
}

// GenerationString is the generation id in hex.
func (s *State) GenerationString() string { return fmt.Sprintf("%x", s.Generation[:]) }

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := *s
	c.RecentWrites = slices.Clone(s.RecentWrites)
	c.Groups = maps.Clone(s.Groups)
	if c.Groups == nil {
		c.Groups = map[string]Group{}
	}
	c.Producers = maps.Clone(s.Producers)
	if c.Producers == nil {
		c.Producers = map[string]ProducerState{}
	}
	if s.Journal != nil {
		p := *s.Journal
		c.Journal = &p
	}
	c.Segments = slices.Clone(s.Segments)
	c.Entries = make([]Entry, len(s.Entries))
	for i := range s.Entries {
		c.Entries[i] = s.Entries[i]
		c.Entries[i].Rejected = slices.Clone(s.Entries[i].Rejected)
	}
	return &c
}

// FirstSeq is the first seq_num still referenced by the manifest (entries dropped by
// retention are gone); it equals Tail.SeqNum for a stream without entries.
func (s *State) FirstSeq() uint64 {
	if len(s.Segments) > 0 {
		return s.Segments[0].FirstSeq
	}
	if len(s.Entries) > 0 {
		return s.Entries[0].FirstSeq
	}
	return s.Tail.SeqNum
}

// Producer returns a producer's row.
func (s *State) Producer(id string) (ProducerState, bool) {
	p, ok := s.Producers[id]
	return p, ok
}

// PruneProducers bounds the producer table. Once it holds more than MaxProducers/2 rows, it
// drops rows not seen for ProducerExpiry before min(nowMs, the median last-seen time), so a
// producer whose clock runs far ahead cannot expire everyone else's rows; then, beyond
// MaxProducers, it evicts the least recently seen rows.
func (s *State) PruneProducers(nowMs uint64) {
	if len(s.Producers) <= MaxProducers/2 {
		return
	}
	ids := slices.Collect(maps.Keys(s.Producers))
	sort.Slice(ids, func(i, j int) bool {
		a, b := s.Producers[ids[i]], s.Producers[ids[j]]
		if a.LastSeenMs != b.LastSeenMs {
			return a.LastSeenMs < b.LastSeenMs
		}
		return ids[i] < ids[j]
	})
	ref := min(nowMs, s.Producers[ids[len(ids)/2]].LastSeenMs)
	expiry := uint64(ProducerExpiry / time.Millisecond)
	for len(ids) > 0 && (s.Producers[ids[0]].LastSeenMs+expiry < ref || len(ids) > MaxProducers) {
		delete(s.Producers, ids[0])
		ids = ids[1:]
	}
}
