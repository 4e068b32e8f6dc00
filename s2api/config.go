package s2api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Storage classes, timestamping modes.
const (
	StorageClassStandard = "standard"
	StorageClassExpress  = "express"

	TimestampingClientPrefer  = "client-prefer"
	TimestampingClientRequire = "client-require"
	TimestampingArrival       = "arrival"
)

// RetentionPolicy is {"age": seconds} or {"infinite": {}}. Exactly one of AgeSecs>0 and
// Infinite holds in a valid policy.
type RetentionPolicy struct {
	AgeSecs  uint64
	Infinite bool
}

func (p RetentionPolicy) MarshalJSON() ([]byte, error) {
	if p.Infinite {
		return []byte(`{"infinite":{}}`), nil
	}
	return json.Marshal(map[string]uint64{"age": p.AgeSecs})
}

func (p *RetentionPolicy) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	age, hasAge := m["age"]
	inf, hasInf := m["infinite"]
	switch {
	case hasAge && hasInf:
		return errors.New("retention_policy must have exactly one of age and infinite")
	case hasAge:
		*p = RetentionPolicy{}
		err := json.Unmarshal(age, &p.AgeSecs)
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			te.Field = "age" // the decoder puts the path to retention_policy before it
		}
		return err
	case hasInf:
		if !bytes.HasPrefix(bytes.TrimSpace(inf), []byte("{")) {
			return errors.New("retention_policy.infinite must be an object")
		}
		*p = RetentionPolicy{Infinite: true}
		return nil
	}
	return errors.New("retention_policy must have one of age and infinite")
}

// TimestampingConfig is {"mode","uncapped"}.
type TimestampingConfig struct {
	Mode     *string `json:"mode,omitempty"`
	Uncapped *bool   `json:"uncapped,omitempty"`
}

// DeleteOnEmptyConfig is {"min_age_secs"}; 0 disables.
type DeleteOnEmptyConfig struct {
	MinAgeSecs *uint64 `json:"min_age_secs,omitempty"`
}

// StreamConfig is a stream's configuration. A nil field is "not given": in a create it takes
// the basin's default, in a reconfigure it leaves the setting as it is. GET returns every field.
type StreamConfig struct {
	StorageClass    *string              `json:"storage_class,omitempty"`
	RetentionPolicy *RetentionPolicy     `json:"retention_policy,omitempty"`
	Timestamping    *TimestampingConfig  `json:"timestamping,omitempty"`
	DeleteOnEmpty   *DeleteOnEmptyConfig `json:"delete_on_empty,omitempty"`
}

// Validate reports every problem with the given fields at once (errors.Join of *Error invalid).
func (c *StreamConfig) Validate() error {
	var errs []error
	if c.StorageClass != nil && *c.StorageClass != StorageClassStandard && *c.StorageClass != StorageClassExpress {
		errs = append(errs, Errorf(CodeInvalid, "storage_class must be standard or express, not %q", *c.StorageClass))
	}
	if c.RetentionPolicy != nil && !c.RetentionPolicy.Infinite && c.RetentionPolicy.AgeSecs == 0 {
		errs = append(errs, Errorf(CodeInvalid, "retention_policy.age must be greater than 0"))
	}
	if t := c.Timestamping; t != nil && t.Mode != nil {
		switch *t.Mode {
		case TimestampingClientPrefer, TimestampingClientRequire, TimestampingArrival:
		default:
			errs = append(errs, Errorf(CodeInvalid, "timestamping.mode must be client-prefer, client-require or arrival, not %q", *t.Mode))
		}
	}
	return errors.Join(errs...)
}

// Merge returns c with every field that r gives replaced (fields of nested objects too).
func (c StreamConfig) Merge(r StreamConfig) StreamConfig {
	if r.StorageClass != nil {
		c.StorageClass = r.StorageClass
	}
	if r.RetentionPolicy != nil {
		c.RetentionPolicy = r.RetentionPolicy
	}
	if r.Timestamping != nil {
		t := TimestampingConfig{}
		if c.Timestamping != nil {
			t = *c.Timestamping
		}
		if r.Timestamping.Mode != nil {
			t.Mode = r.Timestamping.Mode
		}
		if r.Timestamping.Uncapped != nil {
			t.Uncapped = r.Timestamping.Uncapped
		}
		c.Timestamping = &t
	}
	if r.DeleteOnEmpty != nil {
		d := DeleteOnEmptyConfig{}
		if c.DeleteOnEmpty != nil {
			d = *c.DeleteOnEmpty
		}
		if r.DeleteOnEmpty.MinAgeSecs != nil {
			d.MinAgeSecs = r.DeleteOnEmpty.MinAgeSecs
		}
		c.DeleteOnEmpty = &d
	}
	return c
}

// BasinConfig is a basin's configuration.
type BasinConfig struct {
	DefaultStreamConfig  *StreamConfig `json:"default_stream_config,omitempty"`
	CreateStreamOnAppend bool          `json:"create_stream_on_append"`
	CreateStreamOnRead   bool          `json:"create_stream_on_read"`
}

// BasinReconfiguration changes the fields it gives.
type BasinReconfiguration struct {
	DefaultStreamConfig  *StreamConfig `json:"default_stream_config,omitempty"`
	CreateStreamOnAppend *bool         `json:"create_stream_on_append,omitempty"`
	CreateStreamOnRead   *bool         `json:"create_stream_on_read,omitempty"`
	// ReplaceDefaultStreamConfig makes DefaultStreamConfig the basin's default stream config
	// as it is (nil: none), instead of merging its fields into the old one: an ensure, or a
	// reconfiguration that sends "default_stream_config": null.
	ReplaceDefaultStreamConfig bool `json:"-"`
}

// Apply returns c changed by r.
func (r BasinReconfiguration) Apply(c BasinConfig) BasinConfig {
	if r.ReplaceDefaultStreamConfig {
		c.DefaultStreamConfig = nil
		if r.DefaultStreamConfig != nil {
			d := *r.DefaultStreamConfig
			c.DefaultStreamConfig = &d
		}
	} else if r.DefaultStreamConfig != nil {
		base := StreamConfig{}
		if c.DefaultStreamConfig != nil {
			base = *c.DefaultStreamConfig
		}
		m := base.Merge(*r.DefaultStreamConfig)
		c.DefaultStreamConfig = &m
	}
	if r.CreateStreamOnAppend != nil {
		c.CreateStreamOnAppend = *r.CreateStreamOnAppend
	}
	if r.CreateStreamOnRead != nil {
		c.CreateStreamOnRead = *r.CreateStreamOnRead
	}
	return c
}

// BasinInfo describes a basin.
type BasinInfo struct {
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	DeletedAt *time.Time `json:"deleted_at"`
}

// StreamInfo describes a stream.
type StreamInfo struct {
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	DeletedAt *time.Time `json:"deleted_at"`
}

// ListBasinsResponse is the body of list basins.
type ListBasinsResponse struct {
	Basins  []BasinInfo `json:"basins"`
	HasMore bool        `json:"has_more"`
}

// ListStreamsResponse is the body of list streams.
type ListStreamsResponse struct {
	Streams []StreamInfo `json:"streams"`
	HasMore bool         `json:"has_more"`
}

// CreateBasinRequest is the body of create basin.
type CreateBasinRequest struct {
	Basin  string       `json:"basin"`
	Config *BasinConfig `json:"config,omitempty"`
}

// CreateStreamRequest is the body of POST /streams, and one of the two bodies PUT
// /streams/{s} accepts (the form in S2's documentation; the SDK's ensure sends a bare StreamConfig).
type CreateStreamRequest struct {
	Stream string        `json:"stream"`
	Config *StreamConfig `json:"config,omitempty"`
}

// ListRequest pages through names: those with Prefix, after StartAfter, at most Limit
// (1 to 1000; 0 from the query means the default of 1000).
type ListRequest struct {
	Prefix     string
	StartAfter string
	Limit      int
}

// MaxListLimit is the largest (and default) page size of list calls.
const MaxListLimit = 1000

// ValidateBasinName checks S2's basin name rule: 8 to 48 characters of lowercase letters,
// digits and hyphens, not starting or ending with a hyphen.
func ValidateBasinName(name string) error {
	if len(name) < 8 || len(name) > 48 {
		return Errorf(CodeInvalid, "basin name must be 8 to 48 characters long, %q has %d", name, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
		if !ok {
			return Errorf(CodeInvalid, "basin name %q may hold only lowercase letters, digits and hyphens", name)
		}
	}
	if name[0] == '-' || name[len(name)-1] == '-' {
		return Errorf(CodeInvalid, "basin name %q must not start or end with a hyphen", name)
	}
	return nil
}

// MaxStreamNameLen is the longest stream name, in bytes.
const MaxStreamNameLen = 512

// ValidateStreamName checks a stream name: 1 to 512 bytes of UTF-8 without NUL.
func ValidateStreamName(name string) error {
	if len(name) == 0 || len(name) > MaxStreamNameLen {
		return Errorf(CodeInvalid, "stream name must be 1 to %d bytes long, found %d", MaxStreamNameLen, len(name))
	}
	if !utf8.ValidString(name) {
		return Errorf(CodeInvalid, "stream name must be valid UTF-8")
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			return Errorf(CodeInvalid, "stream name must not contain NUL")
		}
	}
	return nil
}

// DecodeStreamConfigJSON parses and validates a stream config (unknown fields ignored).
func DecodeStreamConfigJSON(data []byte) (StreamConfig, error) {
	var c StreamConfig
	if len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return c, nil
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, BadJSON("stream config", err)
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// A reconfiguration's null is not an absent field: S2 resets a field sent as null to its
// default (the SDK sends null only when its caller gives null). These are the fields that may
// be reset, as JSON paths.
const (
	FieldStorageClass      = "storage_class"
	FieldRetentionPolicy   = "retention_policy"
	FieldTimestamping      = "timestamping"
	FieldTimestampingMode  = "timestamping.mode"
	FieldTimestampingCap   = "timestamping.uncapped"
	FieldDeleteOnEmpty     = "delete_on_empty"
	FieldDeleteOnEmptyAge  = "delete_on_empty.min_age_secs"
	fieldDefaultStreamConf = "default_stream_config"
)

// DecodeStreamReconfigurationJSON parses the body of PATCH /streams/{s}: the fields to
// change, and the fields sent as null, which go back to their defaults (ResetFrom).
func DecodeStreamReconfigurationJSON(data []byte) (r StreamConfig, reset []string, err error) {
	if r, err = DecodeStreamConfigJSON(data); err != nil {
		return r, nil, err
	}
	return r, nullFields(data, FieldStorageClass, FieldRetentionPolicy, FieldTimestamping, FieldDeleteOnEmpty), nil
}

// nullFields returns the fields among top (and the fields of those that are objects) that
// data, a JSON object, sends as null.
func nullFields(data []byte, top ...string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	var out []string
	for _, name := range top {
		v, ok := obj[name]
		if !ok {
			continue
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			out = append(out, name)
			continue
		}
		var sub map[string]json.RawMessage
		if json.Unmarshal(v, &sub) != nil {
			continue
		}
		for k, sv := range sub {
			if bytes.Equal(bytes.TrimSpace(sv), []byte("null")) {
				out = append(out, name+"."+k)
			}
		}
	}
	return out
}

// ResetFrom returns c with the fields named in reset (JSON paths, as
// DecodeStreamReconfigurationJSON returns them) set to base's: a stream's defaults.
func (c StreamConfig) ResetFrom(base StreamConfig, reset []string) StreamConfig {
	var patch StreamConfig // base's value of each field reset, merged into c
	for _, f := range reset {
		switch f {
		case FieldStorageClass:
			patch.StorageClass = base.StorageClass
		case FieldRetentionPolicy:
			patch.RetentionPolicy = base.RetentionPolicy
		case FieldTimestamping:
			patch.Timestamping = base.Timestamping
		case FieldDeleteOnEmpty, FieldDeleteOnEmptyAge:
			patch.DeleteOnEmpty = base.DeleteOnEmpty
		case FieldTimestampingMode, FieldTimestampingCap:
			if base.Timestamping == nil {
				continue
			}
			t := TimestampingConfig{}
			if patch.Timestamping != nil {
				t = *patch.Timestamping
			}
			if f == FieldTimestampingMode {
				t.Mode = base.Timestamping.Mode
			} else {
				t.Uncapped = base.Timestamping.Uncapped
			}
			patch.Timestamping = &t
		}
	}
	return c.Merge(patch)
}

// DecodeBasinReconfigurationJSON parses the body of PATCH /basins/{b}. A field sent as null
// goes back to its default: "default_stream_config": null removes the basin's default stream
// config, and a null flag is false.
func DecodeBasinReconfigurationJSON(data []byte) (BasinReconfiguration, error) {
	var r BasinReconfiguration
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return r, nil
	}
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return r, BadJSON("basin reconfiguration", err)
	}
	nulls := nullFields(trimmed, fieldDefaultStreamConf, "create_stream_on_append", "create_stream_on_read")
	isNull := func(k string) bool { return slices.Contains(nulls, k) }
	if isNull(fieldDefaultStreamConf) {
		r.ReplaceDefaultStreamConfig, r.DefaultStreamConfig = true, nil
	}
	no := false
	if isNull("create_stream_on_append") {
		r.CreateStreamOnAppend = &no
	}
	if isNull("create_stream_on_read") {
		r.CreateStreamOnRead = &no
	}
	if r.DefaultStreamConfig != nil {
		if err := r.DefaultStreamConfig.Validate(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// DecodeEnsureStreamBody parses the body of PUT /streams/{s}: either a bare StreamConfig (the
// SDK's ensure) or {"stream","config"} (the curl in S2's documentation). A "stream" that differs from the
// path's is invalid.
func DecodeEnsureStreamBody(pathName string, data []byte) (StreamConfig, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return StreamConfig{}, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return StreamConfig{}, BadJSON("stream body", err)
	}
	_, hasStream := probe["stream"]
	_, hasConfig := probe["config"]
	if !hasStream && !hasConfig {
		return DecodeStreamConfigJSON(trimmed)
	}
	var req CreateStreamRequest
	if err := json.Unmarshal(trimmed, &req); err != nil {
		return StreamConfig{}, BadJSON("stream body", err)
	}
	if hasStream && req.Stream != pathName {
		return StreamConfig{}, Errorf(CodeInvalid, "body names stream %q but the path names %q", req.Stream, pathName)
	}
	if req.Config == nil {
		return StreamConfig{}, nil
	}
	if err := req.Config.Validate(); err != nil {
		return StreamConfig{}, err
	}
	return *req.Config, nil
}

func (r RetentionPolicy) String() string {
	if r.Infinite {
		return "infinite"
	}
	return fmt.Sprintf("age=%ds", r.AgeSecs)
}
