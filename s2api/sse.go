package s2api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SSEWriter writes the events of an SSE read session to w:
//
//	event: batch
//	id: <last seq_num>,<records so far>,<bytes so far>
//	data: {"records":[…],"tail":{…}}
//
//	event: ping
//	data: {"timestamp":<ms>,"tail":{…}}
//
//	event: error
//	data: {"code":…,"message":…}
//
// Each event ends with an empty line. Data that holds newlines is split over several
// "data:" lines, as the SSE format requires.
type SSEWriter struct {
	w    io.Writer
	buf  []byte // the event being written
	data []byte // a batch's JSON, reused from batch to batch
}

// NewSSEWriter writes events to w.
func NewSSEWriter(w io.Writer) *SSEWriter { return &SSEWriter{w: w} }

// Event writes one event; id may be empty. An event name or id holding a line break is refused
// (it would end the field early).
func (s *SSEWriter) Event(event, id string, data []byte) error {
	if strings.ContainsAny(event, "\r\n") || strings.ContainsAny(id, "\r\n") {
		return fmt.Errorf("s2api: SSE event name or id holds a line break")
	}
	b := s.buf[:0]
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, '\n')
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		line := data
		if i >= 0 {
			line = data[:i]
		}
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
		if i < 0 {
			break
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(b, '\n')
	s.buf = b
	_, err := s.w.Write(b)
	return err
}

// Batch writes a batch event with the session's running totals in its id.
func (s *SSEWriter) Batch(b *ReadBatch, f Format, lastSeqNum, records, bytes uint64) error {
	s.data = AppendReadBatchJSON(s.data[:0], b, f)
	return s.Event("batch", BatchEventID(lastSeqNum, records, bytes), s.data)
}

// PingEvent is the data of a ping event.
type PingEvent struct {
	Timestamp uint64          `json:"timestamp"`
	Tail      *StreamPosition `json:"tail,omitempty"`
}

// Ping writes a ping event.
func (s *SSEWriter) Ping(nowMs uint64, tail *StreamPosition) error {
	data, _ := json.Marshal(PingEvent{Timestamp: nowMs, Tail: tail})
	return s.Event("ping", "", data)
}

// Error writes an error event carrying err as ErrorResponse renders it.
func (s *SSEWriter) Error(err error) error {
	_, body := ErrorResponse(err)
	return s.Event("error", "", body)
}

// BatchEventID renders "<last seq_num>,<records so far>,<bytes so far>".
func BatchEventID(lastSeqNum, records, bytes uint64) string {
	return strconv.FormatUint(lastSeqNum, 10) + "," + strconv.FormatUint(records, 10) + "," + strconv.FormatUint(bytes, 10)
}

// ParseBatchEventID parses a batch event id (as sent back in Last-Event-ID).
func ParseBatchEventID(id string) (lastSeqNum, records, bytes uint64, err error) {
	parts := strings.Split(strings.TrimSpace(id), ",")
	if len(parts) != 3 {
		return 0, 0, 0, Errorf(CodeBadHeader, "event id %q is not <seq_num>,<count>,<bytes>", id)
	}
	var vals [3]uint64
	for i, p := range parts {
		v, perr := strconv.ParseUint(p, 10, 64)
		if perr != nil {
			return 0, 0, 0, Errorf(CodeBadHeader, "event id %q: %s is not an unsigned integer", id, p)
		}
		vals[i] = v
	}
	return vals[0], vals[1], vals[2], nil
}

// SSEEvent is one parsed event, for clients and tests.
type SSEEvent struct {
	Event string
	ID    string
	Data  string
}

// SSEReader parses an event stream (comment lines are skipped).
type SSEReader struct {
	r   *lineReader
	max int
}

// NewSSEReader reads events from r, refusing lines longer than maxLine bytes.
func NewSSEReader(r io.Reader, maxLine int) *SSEReader {
	return &SSEReader{r: &lineReader{r: r, max: maxLine}}
}

// Next returns the next event, or io.EOF.
func (s *SSEReader) Next() (SSEEvent, error) {
	var ev SSEEvent
	var data []string
	seen := false
	for {
		line, err := s.r.line()
		if err != nil {
			if err == io.EOF && seen {
				return SSEEvent{}, io.ErrUnexpectedEOF
			}
			return SSEEvent{}, err
		}
		if line == "" {
			if !seen {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event = value
		case "id":
			ev.ID = value
		case "data":
			data = append(data, value)
		}
	}
}

type lineReader struct {
	r    io.Reader
	buf  []byte
	max  int
	rbuf [4096]byte
}

func (l *lineReader) line() (string, error) {
	for {
		if i := bytes.IndexByte(l.buf, '\n'); i >= 0 {
			line := strings.TrimSuffix(string(l.buf[:i]), "\r")
			l.buf = l.buf[i+1:]
			return line, nil
		}
		if l.max > 0 && len(l.buf) > l.max {
			return "", fmt.Errorf("s2api: SSE line longer than %d bytes", l.max)
		}
		n, err := l.r.Read(l.rbuf[:])
		l.buf = append(l.buf, l.rbuf[:n]...)
		if err != nil {
			if n > 0 {
				continue
			}
			return "", err
		}
	}
}
