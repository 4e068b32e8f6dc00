package consumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
)

// GroupConfig configures a member of a consumer group (Open): the Config of the Reader it
// reads through, and the group's own settings. Start from DefaultGroupConfig, set
// ObjectStore and Group, and pass it to Open, which validates it and reports every problem
// at once. A field whose zero is not a legal value is refused at zero, never taken for its
// default; a zero Committer is legal (see below).
type GroupConfig struct {
	// Config is the reader's: the stream, read-ahead, polling, logs and metrics.
	Config
	// Group names the consumer group the member joins. Required: 1 to MaxGroupNameLen bytes.
	Group string
	// NewGroupStart is where a group that Open creates starts: StartAtHead (the zero value,
	// the stream's first readable record) or StartAtTail (only records appended after the
	// join). A group that exists resumes from its checkpoint either way.
	NewGroupStart GroupStart
	// StreamName names the stream in the stream label of the member's lag metrics. Default
	// "": the stream's manifest key.
	StreamName string
	// AckInterval: the group's pending acknowledgements are written at most this long after
	// the first of them. Default 1 s; must be > 0.
	AckInterval time.Duration
	// AckRecords: pending acknowledgements covering this many records are written at once,
	// without waiting for AckInterval. Default 10000; must be > 0.
	AckRecords int
	// Committer says how the member reaches the stream's committer (a sluice serve
	// daemon), which writes its checkpoints with its commits: its URL while the manifest
	// names none live (a live one it names is asked first), its token, an in-process one.
	// With none answering the member writes them itself. Default zero: write them directly
	// unless the manifest names a committer.
	Committer commitclient.Config
}

// DefaultGroupConfig returns the defaults; ObjectStore is nil and Group empty, and both must
// be set.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{
		Config:      DefaultConfig(),
		AckInterval: time.Second,
		AckRecords:  10000,
	}
}

// MaxGroupNameLen bounds consumer group names.
const MaxGroupNameLen = 128

// Validate reports every problem of c at once (errors.Join), each matching ErrInvalidConfig:
// the reader's Config's and the group's.
func (c *GroupConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateGroupName(c.Group); err != nil {
		errs = append(errs, err)
	}
	if c.NewGroupStart > StartAtTail {
		bad("unknown new group start %v", c.NewGroupStart)
	}
	if c.AckInterval <= 0 {
		bad("ack interval %v must be > 0", c.AckInterval)
	}
	if c.AckRecords < 1 {
		bad("ack records %d must be >= 1", c.AckRecords)
	}
	if err := c.Committer.Validate(); err != nil {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// validateGroupName reports why name cannot name a consumer group.
func validateGroupName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: group name is required", ErrInvalidConfig)
	case len(name) > MaxGroupNameLen:
		return fmt.Errorf("%w: group name is %d bytes, more than %d", ErrInvalidConfig, len(name), MaxGroupNameLen)
	}
	return nil
}

// GroupStart is where a new consumer group starts reading (GroupConfig.NewGroupStart).
type GroupStart uint8

const (
	// StartAtHead starts a new group at the stream's first readable record.
	StartAtHead GroupStart = iota
	// StartAtTail starts a new group at the tail: its checkpoint is the tail's seq_num
	// when Open creates it.
	StartAtTail
)

func (s GroupStart) String() string {
	switch s {
	case StartAtHead:
		return "head"
	case StartAtTail:
		return "tail"
	}
	return fmt.Sprintf("GroupStart(%d)", uint8(s))
}
